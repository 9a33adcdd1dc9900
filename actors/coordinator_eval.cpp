// The coordinator's evaluations (actors/coordinator.hpp): the parameters gathered from the
// shards (or, in sync mode, from the barriers at fixed global steps), scored on the test set,
// recorded in the history, and judged for divergence.
#include "actors/coordinator.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace actrain {

namespace {

using self_ptr = coordinator_self;
constexpr auto request_timeout = coordinator_request_timeout;
/// sync: evaluation points asked for ahead of the workers. Evaluations may fall this many points
/// behind the training before a point's request could reach its barrier late; every held request
/// costs a barrier a check per step.
constexpr int eval_window = 16;

/// Pulls every shard (or, for `step` >= 0, every front: a sync barrier answers with the weights
/// after exactly `step` global steps), then calls k with the assembled parameter vector. `on_err`
/// gets the first error.
template <class K, class E>
void gather_params(self_ptr self, K k, E on_err, std::int64_t step = -1) {
  auto& st = self->state;
  auto n = static_cast<std::size_t>(st.cfg.ranges.back().end);
  // Filled when the first slice arrives: sync keeps requests for points far ahead waiting.
  auto params = std::make_shared<std::vector<float>>();
  auto& from = step >= 0 ? st.cfg.fronts : st.cfg.shards;
  auto left = std::make_shared<std::size_t>(from.size());
  // A step that is far off may be minutes away: no deadline but the job's own end.
  auto timeout = step >= 0 ? caf::infinite : caf::duration{request_timeout};
  for (std::size_t s = 0; s < from.size(); ++s) {
    self->request(from[s], timeout, pull_atom::value, pull_request{-1, step})
        .then(
            [self, s, n, params, left, k](weights& w) {
              auto& r = self->state.cfg.ranges[s];
              if (params->empty()) params->resize(n);
              if (w.values.size() != static_cast<std::size_t>(r.end - r.begin)) {
                self->quit(make_error(errc::bad_length,
                                      "shard " + std::to_string(s) + " returned the wrong length"));
                return;
              }
              std::copy(w.values.data(), w.values.data() + w.values.size(),
                        params->begin() + r.begin);
              if (--*left == 0) k(std::move(*params));
            },
            on_err);
  }
}

template <class K>
void gather_params(self_ptr self, K k) {
  gather_params(self, std::move(k), [self](caf::error& err) { self->quit(err); });
}

void record_eval(self_ptr self, std::vector<float> params, bool final_eval,
                 std::int64_t at_step = -1);

/// sync: evaluates the weights after exactly global step `step` (the barriers hold the pull until
/// then). Each point is the same in every run of the same seed, in one process or across nodes;
/// only its time and train loss depend on arrival order. The coordinator keeps eval_window points
/// asked for ahead, the first ones before the workers start: a request that reached a barrier
/// after its step would get later weights (or none, the job having ended).
void evaluate_at_step(self_ptr self, std::int64_t step) {
  gather_params(
      self,
      [self, step](std::vector<float> params) {
        auto& st = self->state;
        if (st.finishing) return;  // the final evaluation covers it
        record_eval(self, std::move(params), false, step);
        // Keep eval_window points asked for ahead.
        st.last_eval_step += st.eval_steps;
        evaluate_at_step(self, st.last_eval_step);
      },
      [self](caf::error& err) {
        // A barrier stopped at the end of the job while holding a step the job never reached.
        if (!self->state.finishing)
          self->state.event("evaluation at a fixed step failed: " + describe_error(err));
      },
      step);
}

void record_eval(self_ptr self, std::vector<float> params, bool final_eval, std::int64_t at_step) {
  auto& st = self->state;
  auto res = evaluate(st.cfg.job.model, params, st.cfg.data->test, *st.eval_backend);
  auto p = current_point(st);
  if (at_step >= 0) p.step = at_step;
  if (st.diverged_above > 0 && !(res.loss <= st.diverged_above)) {
    std::ostringstream why;
    why << "training diverged at step " << p.step << ": test loss " << res.loss
        << ", above 1000 x that of predicting nothing (" << st.diverged_above / 1000 << "; lr "
        << st.cfg.job.optim.lr << ", " << st.cfg.job.workers << " " << st.cfg.job.mode
        << " worker(s)): lower [optim] lr, clip gradients with [job] "
        << "clip-norm, or scale the data ([data] standardize)";
    return fail_job(self, why.str());
  }
  p.test_loss = res.loss;
  p.test_accuracy = res.accuracy;
  p.classes = res.classes;
  st.loss_sum = 0;
  st.loss_rows = 0;
  st.result.history.push_back(p);
  if (st.cfg.hooks.on_eval) st.cfg.hooks.on_eval(p);
  write_pending(self);
  if (auto* hub = st.cfg.hooks.hub) {
    // Evaluation points carry the test metrics; throughput comes from the ticks' intervals.
    hub->add_curve_point({p.seconds, p.samples, p.train_loss, p.test_loss, p.test_accuracy,
                          std::nan(""), p.classes});
    publish_snapshot(st, *hub, false);
  }
  if (final_eval) {
    st.result.params = std::move(params);
    st.result.test = res;
    finish(self);
    return;
  }
  if (st.cfg.job.target_accuracy > 0 && res.accuracy >= st.cfg.job.target_accuracy &&
      !st.finishing) {
    self->state.event("target accuracy " + std::to_string(st.cfg.job.target_accuracy) +
                      " reached: stopping");
    st.stopping_early = true;
    st.finishing = true;
    st.train_seconds = st.elapsed();
    for (auto& w : st.workers)
      if (w.alive) self->send(w.handle, stop_atom::value);
    st.result.params = std::move(params);
    st.result.test = res;
    finish(self);
  }
}

}  // namespace

progress_point current_point(coordinator_state& st) {
  progress_point p;
  p.epoch = st.epoch;
  p.samples = st.samples;
  p.seconds = st.elapsed();
  p.train_loss = st.loss_rows > 0 ? st.loss_sum / static_cast<double>(st.loss_rows) : 0;
  for (auto& w : st.workers) p.step = std::max(p.step, w.step);
  return p;
}

void evaluate_now(self_ptr self, bool final_eval) {
  auto& st = self->state;
  if (st.evaluating) return;
  st.evaluating = true;
  gather_params(self, [self, final_eval](std::vector<float> params) {
    self->state.evaluating = false;
    record_eval(self, std::move(params), final_eval);
  });
}

/// Where a test loss means the model diverged: 1000 x the loss of a model that predicts nothing
/// (a classifier's uniform guess: ln(classes); a regression's zero: the mean squared target).
/// Training that works stays far below it; a diverging run overshoots it by many orders of
/// magnitude within a few evaluations (a linear model on a standardized 3-feature CSV at 30 async
/// workers ended at 5.7e10 against a bound of 1.1e3; softmax on Fashion-MNIST at lr 1e30 at
/// 3.4e30 against 2.3e3). Its gradients can stay finite all along, which the shards' non-finite
/// check cannot see.
double diverged_loss_bound(const model_spec& m, const dataset& test) {
  if (test.rows == 0) return 0;
  if (is_classifier_kind(m.kind) || test.num_classes > 0)
    return 1000 * std::log(std::max(2, std::max(test.num_classes, m.output_dim)));
  double sq = 0;
  for (float y : test.y) sq += static_cast<double>(y) * y;
  return 1000 * std::max(sq / static_cast<double>(test.rows), 1e-6);
}

/// sync (one barrier per shard, every worker its own group): evaluation at fixed global steps,
/// one step being a batch from each of the n workers. The first eval_window points are asked
/// for before any worker has work (the barriers hold each until its step), and one more each
/// time a point is evaluated; the points the job does not reach fail when the barriers stop,
/// after the final evaluation.
void plan_sync_evaluations(self_ptr self, std::int64_t rows, int n) {
  auto& st = self->state;
  auto& job = st.cfg.job;
  if (job.mode == "sync" && !job.local_aggregation && job.eval_every > 0 &&
      job.eval_every < job.epochs) {
    auto per_step = static_cast<double>(n) * job.batch;
    st.eval_steps = std::max<std::int64_t>(
        1, std::llround(job.eval_every * static_cast<double>(rows) / per_step));
    for (int k = 0; k < eval_window; ++k) {
      st.last_eval_step += st.eval_steps;
      evaluate_at_step(self, st.last_eval_step);
    }
  }
}

}  // namespace actrain
