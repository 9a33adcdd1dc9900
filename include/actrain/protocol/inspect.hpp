#pragma once
// How types that other public headers define cross nodes: inspect() for checkpoints
// (checkpoint.hpp), evaluation results (metrics.hpp, job.hpp, reference_trainer.hpp) and per-node
// traffic (run_state.hpp). Part of <actrain/protocol.hpp>.
#include <caf/all.hpp>

#include <actrain/checkpoint.hpp>
#include <actrain/job.hpp>
#include <actrain/metrics.hpp>
#include <actrain/reference_trainer.hpp>
#include <actrain/run_state.hpp>
#include <actrain/wire.hpp>

namespace actrain {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, shard_checkpoint& x) {
  return f(caf::meta::type_name("shard_checkpoint"), x.shard, x.version, x.step,
           wire_block(x.values), x.opt_steps, wire_block(x.opt_slots));
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, saved_work& x) {
  return f(caf::meta::type_name("saved_work"), x.begin, x.end, x.epochs);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, saved_worker& x) {
  return f(caf::meta::type_name("saved_worker"), x.worker, x.start_step, x.step, x.alive, x.work);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, checkpoint& x) {
  return f(caf::meta::type_name("checkpoint"), x.job, x.sequence, x.step, x.samples,
           wire_bits(x.seconds), x.next_eval_samples, x.last_eval_step, x.history, x.shards,
           x.workers);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, class_report& x) {
  return f(caf::meta::type_name("class_report"), wire_block(x.precision), wire_block(x.recall),
           wire_block(x.average_precision), wire_block(x.support), wire_bits(x.macro_precision),
           wire_bits(x.macro_recall), wire_bits(x.macro_average_precision), wire_bits(x.auc));
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, eval_result& x) {
  return f(caf::meta::type_name("eval_result"), wire_bits(x.loss), wire_bits(x.accuracy), x.rows,
           x.classes);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, progress_point& x) {
  return f(caf::meta::type_name("progress_point"), x.epoch, x.step, x.samples, wire_bits(x.seconds),
           wire_bits(x.train_loss), wire_bits(x.test_loss), wire_bits(x.test_accuracy), x.classes);
}
namespace observe {
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, peer_traffic& x) {
  return f(caf::meta::type_name("peer_traffic"), x.peer, x.bytes_sent, x.bytes_received);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_traffic& x) {
  return f(caf::meta::type_name("node_traffic"), x.node, x.bytes_sent, x.bytes_received, x.peers);
}
}  // namespace observe

}  // namespace actrain
