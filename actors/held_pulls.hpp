#pragma once
// Pulls a front (barrier, aggregator) holds back until the step they ask for may be answered.
#include <string>
#include <utility>
#include <vector>

#include <caf/error.hpp>

#include <actrain/errors.hpp>

namespace actrain {

/// Answers, in arrival order, every held pull that `ready(h.req)` now allows (`answer(h)`) and
/// keeps the others held.
template <class Held, class Ready, class Answer>
void release_held(std::vector<Held>& held, Ready ready, Answer answer) {
  auto waiting = std::move(held);
  held.clear();
  for (auto& h : waiting) {
    if (ready(h.req))
      answer(h);
    else
      held.push_back(std::move(h));
  }
}

/// Ends a front with `reason`, keeping it in `self->state.ended_by` when it is actrain's own (a
/// stopped or failed job, a shard that failed) so that its held requests learn the job's fate,
/// not only that the front went away.
template <class SelfPtr>
void end_front(SelfPtr self, caf::error reason) {
  if (reason && reason.category() == errc_category()) self->state.ended_by = reason;
  self->quit(std::move(reason));
}

/// Answers every request a front still holds as it ends: CAF 0.17 drops a promise that is never
/// delivered without a word, so a requester (a worker, the bulk channel's connection thread) would
/// otherwise wait its whole timeout for a front that is gone, whatever ended it
/// (exit_reason::kill included). Called from the front's state destructor, which runs while the
/// actor finishes, before its cleanup, so the replies still leave. The answer is `ended_by` when
/// set, else errc::stopped with "`who` stopped `describe(h)`".
template <class Held, class Describe>
void answer_held_at_end(std::vector<Held>& held, const caf::error& ended_by, const std::string& who,
                        Describe describe) {
  for (auto& h : held)
    if (h.promise.pending())
      h.promise.deliver(ended_by ? ended_by
                                 : make_error(errc::stopped, who + " stopped " + describe(h)));
  held.clear();
}

}  // namespace actrain
