#pragma once
// Pulls a front (barrier, aggregator) holds back until the step they ask for may be answered.
#include <utility>
#include <vector>

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

}  // namespace actrain
