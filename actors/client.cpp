// The client: each call is one short-lived actor that sends one request per shard and fulfils a
// std::promise once every shard answered (or the first one failed).
#include <actrain/client.hpp>

#include <stdexcept>
#include <string>

#include <actrain/errors.hpp>

namespace actrain {
namespace {

/// What one call collects; lives in its actor and completes the promise exactly once.
template <class T>
struct call {
  std::promise<T> promise;
  T value;
  std::size_t outstanding = 0;
  bool done = false;

  void fail(std::size_t shard, const caf::error& e) {
    if (done) return;
    done = true;
    promise.set_exception(std::make_exception_ptr(std::runtime_error(
        "shard " + std::to_string(shard) + ": " + describe_error(e))));
  }
  /// One more answer; true when it was the last.
  bool answered() {
    if (done || --outstanding > 0) return false;
    done = true;
    promise.set_value(std::move(value));
    return true;
  }
};

/// Copies a shard's weights into the assembled vector; false (and the call failed) when the
/// slice does not have the size of the shard's range.
bool place(call<pulled>& c, std::size_t i, const shard_range_t& r, const weights& w) {
  auto got = w.values.values();
  if (static_cast<std::int64_t>(got.size()) != r.end - r.begin) {
    c.fail(i, make_error(errc::bad_length, "its slice has " + std::to_string(got.size()) +
                                               " values, its range " +
                                               std::to_string(r.end - r.begin)));
    return false;
  }
  std::copy(got.begin(), got.end(), c.value.values.begin() + r.begin);
  c.value.versions[i] = w.version;
  return true;
}

}  // namespace

client::client(caf::actor_system& sys, std::vector<shard_actor> shards, std::int64_t num_params,
               std::int32_t id, std::chrono::milliseconds timeout)
    : sys_(sys), shards_(std::move(shards)), num_params_(num_params), id_(id), timeout_(timeout) {
  if (shards_.empty()) throw std::invalid_argument("client: no shards");
  const int n = static_cast<int>(shards_.size());
  for (int i = 0; i < n; ++i) ranges_.push_back(param_range(num_params_, n, i));
  shared_->base_versions.assign(shards_.size(), 0);
}

std::vector<gradient> client::slices(const std::vector<float>& grad, std::int32_t rows) {
  if (static_cast<std::int64_t>(grad.size()) != num_params_)
    throw std::invalid_argument("client: the gradient has " + std::to_string(grad.size()) +
                                " values, the model " + std::to_string(num_params_));
  std::lock_guard<std::mutex> lock(shared_->mtx);
  const std::int64_t step = shared_->step++;
  std::vector<gradient> out;
  for (std::size_t i = 0; i < shards_.size(); ++i) {
    const auto& r = ranges_[i];
    gradient g;
    g.worker = id_;
    g.step = step;
    g.base_version = shared_->base_versions[i];
    g.rows = rows;
    g.values = tensor(std::vector<float>(grad.begin() + r.begin, grad.begin() + r.end));
    out.push_back(std::move(g));
  }
  return out;
}

pending<pulled> client::gather(std::vector<caf::message> requests) {
  auto c = std::make_shared<call<pulled>>();
  pending<pulled> result{c->promise.get_future().share()};
  c->value.values.assign(static_cast<std::size_t>(num_params_), 0.f);
  c->value.versions.assign(shards_.size(), 0);
  c->outstanding = shards_.size();
  sys_.spawn([c, shards = shards_, ranges = ranges_, sh = shared_, rs = std::move(requests),
              timeout = timeout_](caf::event_based_actor* self) {
    for (std::size_t i = 0; i < shards.size(); ++i)
      self->request(caf::actor_cast<caf::actor>(shards[i]), timeout, rs[i])
          .then(
              [=](const weights& w) {
                if (!place(*c, i, ranges[i], w)) return self->quit();
                if (c->outstanding == 1) {  // the last slice: these versions are the new base
                  std::lock_guard<std::mutex> lock(sh->mtx);
                  sh->base_versions = c->value.versions;
                }
                if (c->answered()) self->quit();
              },
              [=](caf::error& e) {
                c->fail(i, e);
                self->quit();
              });
  });
  return result;
}

pending<pulled> client::pull() {
  std::int64_t step;
  {
    std::lock_guard<std::mutex> lock(shared_->mtx);
    step = shared_->step;
  }
  std::vector<caf::message> rs;
  for (std::size_t i = 0; i < shards_.size(); ++i)
    rs.push_back(caf::make_message(pull_atom::value, pull_request{id_, step}));
  return gather(std::move(rs));
}

pending<pushed> client::push(const std::vector<float>& grad, std::int32_t rows) {
  auto gs = slices(grad, rows);
  auto c = std::make_shared<call<pushed>>();
  pending<pushed> result{c->promise.get_future().share()};
  c->value.acks.resize(shards_.size());
  c->outstanding = shards_.size();
  sys_.spawn([c, shards = shards_, gs = std::move(gs),
              timeout = timeout_](caf::event_based_actor* self) {
    for (std::size_t i = 0; i < shards.size(); ++i)
      self->request(shards[i], timeout, push_atom::value, gs[i])
          .then(
              [=](const push_ack& a) {
                c->value.acks[i] = a;
                if (c->answered()) self->quit();
              },
              [=](caf::error& e) {
                c->fail(i, e);
                self->quit();
              });
  });
  return result;
}

pending<pulled> client::push_pull(const std::vector<float>& grad, std::int32_t rows) {
  std::vector<caf::message> rs;
  for (auto& g : slices(grad, rows)) rs.push_back(caf::make_message(push_pull_atom::value, std::move(g)));
  return gather(std::move(rs));
}

}  // namespace actrain
