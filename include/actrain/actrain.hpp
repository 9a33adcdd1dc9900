#pragma once
// The umbrella header: everything an application embedding actrain uses.
//   core (no CAF):  tensor, backend, model, optim, data, job, reference trainer, run_state,
//                   checkpoint and model files, sparse models and data
//   engine:         protocol, system (prepare_config), engine (run_job, shard/worker configs),
//                   client (push / pull / push_pull futures over shard actors), run_sparse_job
//   cluster:        nodes across processes
// The testing harness is separate: <actrain/testing.hpp> (target actrain::testing).
#include <actrain/version.hpp>

#include <actrain/backend.hpp>
#include <actrain/checkpoint.hpp>
#include <actrain/data.hpp>
#include <actrain/job.hpp>
#include <actrain/model.hpp>
#include <actrain/optim.hpp>
#include <actrain/reference_trainer.hpp>
#include <actrain/run_state.hpp>
#include <actrain/span.hpp>
#include <actrain/sparse.hpp>
#include <actrain/sparse_data.hpp>
#include <actrain/tensor.hpp>

#include <actrain/client.hpp>
#include <actrain/cluster.hpp>
#include <actrain/engine.hpp>
#include <actrain/errors.hpp>
#include <actrain/protocol.hpp>
#include <actrain/sparse_engine.hpp>
#include <actrain/system.hpp>
