#pragma once
// Large tensors across nodes, transparently. A shard_gateway stands in front of a shard (or a
// barrier) on its own node and is the handle other nodes get; a shard_proxy stands in for a
// remote gateway on the node that uses it (a worker node, or the coordinator node for its
// evaluation pulls and its barriers' pushes). Between the two, a slice up to chunk_bytes travels
// as one message, as before; a larger one travels as chunks of chunk_bytes with at most `window`
// unacknowledged (measured with CAF 0.17: one 64 MiB BASP message runs at half the speed of 4 MiB
// chunks two in flight, and no message may reach CAF's 32-bit lengths), and is reassembled before
// the shard, barrier or worker sees it. Workers, shards and barriers never know: they keep talking
// shard_actor. docs/protocol.md, "Chunked transfers".
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>

#include <actrain/cluster.hpp>
#include <actrain/protocol.hpp>
#include "cluster/bulk.hpp"

namespace actrain {

/// Reassembles incoming transfers, keyed by sender and transfer id. Validates every chunk
/// (index, count, offset, shape, the size the receiver expects) before copying it; a bad chunk is
/// refused with an error naming what is wrong and leaves other transfers untouched. Bounded: at
/// most max_open incomplete transfers, the oldest is dropped when a new one would exceed it.
class reassembly {
 public:
  /// expected_floats: the size every whole tensor must have (a shard's slice); a receiver
  /// constructed with 0 (its size unknown) refuses every chunk.
  reassembly(std::int64_t expected_floats, std::size_t max_open)
      : expected_(expected_floats), max_open_(max_open) {}
  caf::error add(const caf::actor_addr& from, const tensor_chunk& c);
  /// The whole tensor of a finished transfer (and forgets it), or an error if it is unknown or
  /// incomplete.
  caf::expected<tensor> take(const caf::actor_addr& from, std::uint64_t transfer);
  /// Forgets what `from` left unfinished (it went down).
  void drop(const caf::actor_addr& from);
  std::size_t open() const { return open_.size(); }
  std::int64_t chunks() const { return chunks_; }

 private:
  struct partial {
    std::vector<float> values;
    shape_t shape;
    std::int32_t count = 0;
    std::int32_t received = 0;
    std::int64_t filled = 0;
    std::int64_t per = 0;  ///< values in every chunk but the last (0 until a chunk tells)
    std::vector<bool> seen;
  };
  using key = std::pair<caf::actor_addr, std::uint64_t>;
  std::int64_t expected_;
  std::size_t max_open_;
  std::map<key, partial> open_;
  std::deque<key> order_;  ///< arrival order of open_'s keys, for dropping the oldest
  std::int64_t chunks_ = 0;
  /// Whole tensors handed out, their buffers reused once their users let go: a fresh 64 MiB
  /// buffer per transfer costs ~16k page faults, as much as moving the bytes (bench wire).
  tensor_pool recycled_{4};
};

struct gateway_state {
  static inline const char* name = "actrain.shard_gateway";
  shard_actor target;
  chunk_options opts;
  reassembly incoming{0, 64};
  std::uint64_t next_transfer = 1;
  std::set<caf::actor_addr> watched;  ///< requesters that sent chunks (monitored)
};

/// In front of `target` (a shard or barrier of this node), linked to it: either going down takes
/// the other. Resolves chunked pushes before forwarding, and chunks large pull replies back to a
/// remote requester. `expected_floats` is the target's slice size.
chunked_shard_actor::behavior_type shard_gateway(
    chunked_shard_actor::stateful_pointer<gateway_state> self, shard_actor target,
    std::int64_t expected_floats, chunk_options opts);

struct proxy_state {
  static inline const char* name = "actrain.shard_proxy";
  chunked_shard_actor remote;
  chunk_options opts;
  reassembly incoming{0, 64};
  std::uint64_t next_transfer = 1;
  std::uint64_t next_key = 1;
  /// Requests waiting for the remote gateway, failed at once when it goes down.
  std::unordered_map<std::uint64_t, caf::response_promise> pending;
  /// A chunked transfer is out: later operations wait in `queue` (their order is kept).
  bool busy = false;
  std::deque<std::function<void()>> queue;
};

/// Stands in for the remote gateway `remote` on this node: shard_actor to its users, chunks to
/// the gateway. Monitors the gateway: when it (or its node) goes down, fails every outstanding
/// request with actrain.node_down at once and quits with the same reason, so users monitoring
/// the proxy see the shard go. Also quits when `owner` (if any) goes down.
chunked_shard_actor::behavior_type shard_proxy(
    chunked_shard_actor::stateful_pointer<proxy_state> self, chunked_shard_actor remote,
    std::int64_t expected_floats, chunk_options opts, caf::actor owner);

/// Spawns a proxy for every shard handle in `shards` that lives on another node (local ones are
/// kept as they are); `sizes` are the slice sizes in floats. The proxies quit with `owner` if
/// given, else when their gateway goes down or they are sent an exit.
std::vector<shard_actor> proxy_remote_shards(caf::actor_system& sys,
                                             const std::vector<shard_actor>& shards,
                                             const std::vector<std::int64_t>& sizes,
                                             const chunk_options& opts, caf::actor owner = {});

struct chunking_front_state {
  static inline const char* name = "actrain.chunking_front";
  worker_actor worker;
  chunk_options opts;
  bool chunked = true;                             ///< the job's shards sit behind gateways
  std::vector<bulk::endpoint> bulk;                ///< per ps node index (port 0: none)
  std::map<caf::actor_addr, shard_actor> proxies;  ///< one per remote shard handle
};

/// A worker node's stand-in for its worker, registered with the coordinator instead of it:
/// rewrites each assignment's remote shard handles to local proxies, then forwards it: a bulk
/// channel proxy (cluster/bulk.hpp) when shard s's handle lives on its ps node, s % bulk.size(),
/// and that node has a bulk port,
/// else a chunking proxy when the job chunks (`chunked`; a failed bulk connection falls back to
/// them, or to the handle itself, with a line on stderr). Linked to the worker and quits when it
/// does.
worker_actor::behavior_type chunking_front(
    worker_actor::stateful_pointer<chunking_front_state> self, worker_actor worker,
    chunk_options opts, bool chunked = true, std::vector<bulk::endpoint> bulk = {});

}  // namespace actrain
