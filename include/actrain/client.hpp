#pragma once
// A parameter-server client for applications that run their own training loop (ps-lite's
// KVWorker): pull the whole parameter vector, push a gradient, or push and get the weights that
// follow, each returning a handle to wait on. It talks to the same shard actors (or barriers,
// aggregators, proxies in front of them) that actrain's workers use, with the same messages.
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <vector>

#include <caf/all.hpp>

#include <actrain/protocol.hpp>

namespace actrain {

/// The outcome of one client call: wait() blocks until every shard answered; get() returns the
/// value or throws std::runtime_error naming the shard and its error (a rejected gradient, a
/// shard that is gone, a timeout). Copyable; every copy sees the same outcome.
template <class T>
class pending {
 public:
  explicit pending(std::shared_future<T> f) : f_(std::move(f)) {}
  void wait() const { f_.wait(); }
  /// True once the outcome is in, after waiting at most `d`.
  bool wait_for(std::chrono::milliseconds d) const {
    return f_.wait_for(d) == std::future_status::ready;
  }
  /// Waits, then returns the value (or throws the error).
  decltype(auto) get() const { return f_.get(); }

 private:
  std::shared_future<T> f_;
};

/// What pull and push_pull return: the whole vector, and the version of each shard's slice.
struct pulled {
  std::vector<float> values;
  std::vector<std::int64_t> versions;
};

/// What push returns: each shard's acknowledgement (its version after the push, the staleness
/// it measured, whether it applied the slice).
struct pushed {
  std::vector<push_ack> acks;
};

/// Splits the flat vector over `shards` by param_range (the engine's partitioning) and sends
/// one message per shard for each call, all shards in parallel. Each call runs in a short-lived
/// actor of `sys`; the calling thread only waits when it asks to. Gradients carry the versions
/// of this client's latest pull as their base, so shards measure staleness as for workers.
/// Thread-safe; the actor system must outlive every call still pending.
class client {
 public:
  /// REQUIRES: shards is not empty, num_params >= shards.size(). `id` is the worker id the
  /// shards see (for barriers: which worker is pushing).
  client(caf::actor_system& sys, std::vector<shard_actor> shards, std::int64_t num_params,
         std::int32_t id = 0, std::chrono::milliseconds timeout = std::chrono::seconds(30));

  std::int64_t num_params() const { return num_params_; }
  std::size_t shards() const { return shards_.size(); }

  /// The weights of every shard, assembled.
  pending<pulled> pull();
  /// Sends `grad` (num_params floats, the mean over `rows` samples), one slice per shard.
  /// Throws std::invalid_argument at once for a gradient of the wrong length.
  pending<pushed> push(const std::vector<float>& grad, std::int32_t rows = 1);
  /// Push, and the weights after it in the same round trip (push_pull_atom).
  pending<pulled> push_pull(const std::vector<float>& grad, std::int32_t rows = 1);

 private:
  /// Shared with the actors of calls still running (they may outlive the client).
  struct shared {
    std::mutex mtx;
    std::vector<std::int64_t> base_versions;  ///< from the latest pull or push_pull
    std::int64_t step = 0;                    ///< pushes sent so far
  };
  std::vector<gradient> slices(const std::vector<float>& grad, std::int32_t rows);
  /// Sends requests[i] to shard i, each answered with weights, and assembles them.
  pending<pulled> gather(std::vector<caf::message> requests);

  caf::actor_system& sys_;
  std::vector<shard_actor> shards_;
  std::vector<shard_range_t> ranges_;
  std::int64_t num_params_;
  std::int32_t id_;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<shared> shared_ = std::make_shared<shared>();
};

}  // namespace actrain
