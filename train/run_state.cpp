#include <actrain/run_state.hpp>

namespace actrain::observe {

void metrics_hub::update(const std::function<void(run_snapshot&)>& fn) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    fn(state_);
  }
  changed_.notify_all();
}

run_snapshot metrics_hub::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_;
}

void metrics_hub::add_curve_point(const curve_point& p) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& c = state_.curve;
  if (c.size() >= max_curve_points) {
    // Keep every second point of the older half: resolution degrades gracefully with age.
    std::vector<curve_point> thinned;
    thinned.reserve(c.size());
    const std::size_t half = c.size() / 2;
    for (std::size_t i = 0; i < half; i += 2) thinned.push_back(c[i]);
    thinned.insert(thinned.end(), c.begin() + static_cast<std::ptrdiff_t>(half), c.end());
    c.swap(thinned);
  }
  c.push_back(p);
  changed_.notify_all();
}

bool metrics_hub::wait_until(const std::function<bool(const run_snapshot&)>& pred,
                             std::chrono::steady_clock::time_point deadline) const {
  std::unique_lock<std::mutex> lock(mutex_);
  return changed_.wait_until(lock, deadline, [&] { return pred(state_); });
}

}  // namespace actrain::observe
