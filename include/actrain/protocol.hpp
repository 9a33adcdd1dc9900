#pragma once
// Every message type, atom and typed actor interface of actrain: atoms and the protocol version
// (protocol/atoms.hpp), dense and cluster payloads (protocol/dense_messages.hpp), sparse payloads
// (protocol/sparse_messages.hpp), inspect() for types other headers define (protocol/inspect.hpp)
// and the typed interfaces (protocol/interfaces.hpp). Each message has one row in
// docs/protocol.md. Types that may cross nodes have an inspect() overload and a type ID in the
// actrain block below; register the block on every node with
// `cfg.add_message_types<caf::id_block::actrain>()` (see include/actrain/system.hpp).
#include <caf/all.hpp>

#include <actrain/errors.hpp>
#include <actrain/protocol/atoms.hpp>
#include <actrain/protocol/dense_messages.hpp>
#include <actrain/protocol/inspect.hpp>
#include <actrain/protocol/interfaces.hpp>
#include <actrain/protocol/sparse_messages.hpp>
#include <actrain/tensor.hpp>

CAF_BEGIN_TYPE_ID_BLOCK(actrain, caf::first_custom_type_id)
CAF_ADD_TYPE_ID(actrain, (actrain::tensor))
CAF_ADD_TYPE_ID(actrain, (actrain::pull_request))
CAF_ADD_TYPE_ID(actrain, (actrain::weights))
CAF_ADD_TYPE_ID(actrain, (actrain::gradient))
CAF_ADD_TYPE_ID(actrain, (actrain::push_ack))
CAF_ADD_TYPE_ID(actrain, (actrain::shard_stats))
CAF_ADD_TYPE_ID(actrain, (actrain::progress_report))
CAF_ADD_TYPE_ID(actrain, (actrain::shard_checkpoint))
CAF_ADD_TYPE_ID(actrain, (actrain::shard_range_t))
CAF_ADD_TYPE_ID(actrain, (actrain::shard_actor))
CAF_ADD_TYPE_ID(actrain, (actrain::worker_assignment))
CAF_ADD_TYPE_ID(actrain, (actrain::released_work))
CAF_ADD_TYPE_ID(actrain, (actrain::worker_actor))
CAF_ADD_TYPE_ID(actrain, (actrain::coordinator_actor))
CAF_ADD_TYPE_ID(actrain, (actrain::tensor_chunk))
CAF_ADD_TYPE_ID(actrain, (actrain::chunked_shard_actor))
CAF_ADD_TYPE_ID(actrain, (actrain::ps_endpoint))
CAF_ADD_TYPE_ID(actrain, (std::vector<actrain::ps_endpoint>))
CAF_ADD_TYPE_ID(actrain, (actrain::socket_traffic))
CAF_ADD_TYPE_ID(actrain, (std::vector<actrain::socket_traffic>))
CAF_ADD_TYPE_ID(actrain, (actrain::observe::node_traffic))
CAF_ADD_TYPE_ID(actrain, (std::vector<actrain::observe::node_traffic>))
CAF_ADD_TYPE_ID(actrain, (actrain::registrar_actor))
CAF_ADD_TYPE_ID(actrain, (actrain::registrar_impl))
CAF_ADD_TYPE_ID(actrain, (actrain::worker_impl))
CAF_ADD_TYPE_ID(actrain, (actrain::engine_result))
CAF_ADD_TYPE_ID(actrain, (actrain::coordinator_impl))
CAF_ADD_TYPE_ID(actrain, (actrain::checkpoint))
CAF_ADD_TYPE_ID(actrain, (actrain::checkpoint_writer_actor))
CAF_ADD_TYPE_ID(actrain, (actrain::row_request))
CAF_ADD_TYPE_ID(actrain, (actrain::row_block))
CAF_ADD_TYPE_ID(actrain, (actrain::row_gradient))
CAF_ADD_TYPE_ID(actrain, (actrain::table_stats))
CAF_ADD_TYPE_ID(actrain, (actrain::sparse_shard_actor))
CAF_ADD_TYPE_ID(actrain, (actrain::sparse_assignment))
CAF_ADD_TYPE_ID(actrain, (actrain::sparse_worker_actor))
CAF_ADD_TYPE_ID(actrain, (actrain::replica_update))
CAF_ADD_TYPE_ID(actrain, (actrain::replica_sink_actor))
CAF_ADD_TYPE_ID(actrain, (actrain::replicated_shard_actor))
CAF_END_TYPE_ID_BLOCK(actrain)
