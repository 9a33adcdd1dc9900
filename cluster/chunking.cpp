// The actors of chunked transfers: sending chunks in a window, the shard gateway, the shard
// proxy and the worker node's chunking front (cluster/chunking.hpp; reassembly.cpp holds the rest).
#include "cluster/chunking.hpp"

#include <algorithm>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <stdexcept>

namespace actrain {

// -- sending chunks -----------------------------------------------------------------------------

namespace {

/// One outgoing transfer: chunks go out as requests, at most `window` unanswered; `done` runs
/// once, with the first error or with none after the last acknowledgement.
struct chunk_send {
  chunked_shard_actor dest;
  tensor whole;
  std::uint64_t id = 0;
  std::size_t per = 0;  ///< floats per chunk
  std::int32_t count = 0;
  std::int32_t next = 0;
  std::int32_t acked = 0;
  chunk_options opts;
  bool finished = false;
  std::function<void(caf::error)> done;

  void finish(caf::error err) {
    if (finished) return;
    finished = true;
    done(std::move(err));
  }
};

template <class Self>
void pump(Self* self, const std::shared_ptr<chunk_send>& s) {
  while (!s->finished && s->next < s->count && s->next - s->acked < s->opts.window) {
    auto i = s->next++;
    auto begin = static_cast<std::size_t>(i) * s->per;
    tensor_chunk c;
    c.transfer = s->id;
    c.index = i;
    c.count = s->count;
    c.offset = static_cast<std::int64_t>(begin);
    c.shape = s->whole.shape();
    c.part = s->whole.slice(begin, std::min(s->per, s->whole.size() - begin));
    self->request(s->dest, s->opts.timeout, chunk_atom::value, std::move(c))
        .then(
            [self, s](std::int32_t) {
              if (++s->acked == s->count)
                s->finish(caf::none);
              else
                pump(self, s);
            },
            [s](caf::error& err) { s->finish(std::move(err)); });
  }
}

/// Sends `whole` to `dest` as transfer `id`; calls `done` once (error or none).
template <class Self>
void send_chunks(Self* self, chunked_shard_actor dest, tensor whole, std::uint64_t id,
                 const chunk_options& opts, std::function<void(caf::error)> done) {
  auto s = std::make_shared<chunk_send>();
  s->dest = std::move(dest);
  s->per = std::max<std::size_t>(1, opts.chunk_bytes / sizeof(float));
  s->count = static_cast<std::int32_t>((whole.size() + s->per - 1) / s->per);
  s->whole = std::move(whole);
  s->id = id;
  s->opts = opts;
  s->done = std::move(done);
  pump(self, s);
}

bool is_large(const tensor& t, const chunk_options& o) {
  return o.chunk_bytes > 0 && t.size() * sizeof(float) > o.chunk_bytes;
}

caf::actor_addr sender_addr(caf::local_actor* self) {
  return caf::actor_cast<caf::actor_addr>(self->current_sender());
}

/// Gateway side of a pull or push_pull reply: small or local -> as is; large to a remote
/// requester -> chunks to it first, then the weights without values naming the transfer.
void reply_weights(chunked_shard_actor::stateful_pointer<gateway_state> self,
                   caf::response_promise rp, chunked_shard_actor requester, weights w) {
  auto& st = self->state;
  if (!is_large(w.values, st.opts) || !requester || requester.node() == self->node()) {
    rp.deliver(std::move(w));
    return;
  }
  auto id = st.next_transfer++;
  auto values = w.values;
  w.values = tensor();
  w.transfer = id;
  send_chunks(self, requester, std::move(values), id, st.opts, [rp, w](caf::error err) mutable {
    if (err)
      rp.deliver(make_error(errc::node_down,
                            "sending weights in chunks failed (does the requester "
                            "run with the same cluster.chunk-bytes?): " +
                                describe_error(err)));
    else
      rp.deliver(std::move(w));
  });
}

}  // namespace

// -- gateway ------------------------------------------------------------------------------------

chunked_shard_actor::behavior_type shard_gateway(
    chunked_shard_actor::stateful_pointer<gateway_state> self, shard_actor target,
    std::int64_t expected_floats, chunk_options opts) {
  auto& st = self->state;
  st.target = std::move(target);
  st.opts = opts;
  st.incoming = reassembly(expected_floats, opts.max_open);
  self->link_to(st.target);
  // A requester that goes down mid-transfer leaves chunks behind: forget them.
  self->set_down_handler([self](caf::down_msg& dm) {
    self->state.incoming.drop(dm.source);
    self->state.watched.erase(dm.source);
  });
  auto resolve = [self](gradient& g) -> caf::error {
    if (g.transfer == 0) return caf::none;
    auto t = self->state.incoming.take(sender_addr(self), g.transfer);
    if (!t) return std::move(t.error());
    g.values = std::move(*t);
    g.transfer = 0;
    return caf::none;
  };
  return {
      [self](chunk_atom, const tensor_chunk& c) -> caf::result<std::int32_t> {
        auto from = sender_addr(self);
        if (auto err = self->state.incoming.add(from, c)) return err;
        if (self->state.watched.insert(from).second) self->monitor(from);
        return c.index;
      },
      [self](pull_atom, const pull_request& r) -> caf::result<weights> {
        // Before make_response_promise(): it moves the sender out of the current message.
        auto requester = caf::actor_cast<chunked_shard_actor>(self->current_sender());
        auto rp = self->make_response_promise();
        self->request(self->state.target, self->state.opts.timeout, pull_atom::value, r)
            .then([self, rp, requester](
                      weights& w) mutable { reply_weights(self, rp, requester, std::move(w)); },
                  [rp](caf::error& err) mutable { rp.deliver(std::move(err)); });
        return rp;
      },
      [self, resolve](push_atom, gradient& g) -> caf::result<push_ack> {
        if (auto err = resolve(g)) return err;
        return self->delegate(self->state.target, push_atom::value, std::move(g));
      },
      [self, resolve](push_pull_atom, gradient& g) -> caf::result<weights> {
        if (auto err = resolve(g)) return err;
        auto requester = caf::actor_cast<chunked_shard_actor>(self->current_sender());
        auto rp = self->make_response_promise();
        self->request(self->state.target, self->state.opts.timeout, push_pull_atom::value,
                      std::move(g))
            .then([self, rp, requester](
                      weights& w) mutable { reply_weights(self, rp, requester, std::move(w)); },
                  [rp](caf::error& err) mutable { rp.deliver(std::move(err)); });
        return rp;
      },
      [self](stats_atom) -> caf::result<shard_stats> {
        return self->delegate(self->state.target, stats_atom::value);
      },
      [self](checkpoint_atom, std::int64_t step) -> caf::result<shard_checkpoint> {
        return self->delegate(self->state.target, checkpoint_atom::value, step);
      },
      [self](restore_atom, shard_checkpoint& c) -> caf::result<std::int64_t> {
        return self->delegate(self->state.target, restore_atom::value, std::move(c));
      },
      [self](leave_atom, std::int32_t worker, bool lost) {
        self->send(self->state.target, leave_atom::value, worker, lost);
      },
  };
}

// -- proxy --------------------------------------------------------------------------------------

namespace {

using proxy_ptr = chunked_shard_actor::stateful_pointer<proxy_state>;

/// Parks `rp` until finish() or fail(); returns its key.
std::uint64_t park(proxy_ptr self, caf::response_promise rp) {
  auto key = self->state.next_key++;
  self->state.pending.emplace(key, std::move(rp));
  return key;
}

template <class T>
void finish(proxy_ptr self, std::uint64_t key, T&& x) {
  auto it = self->state.pending.find(key);
  if (it == self->state.pending.end()) return;  // already failed (the gateway went down)
  auto rp = std::move(it->second);
  self->state.pending.erase(it);
  rp.deliver(std::forward<T>(x));
}

/// Weights from the gateway: reassembled first when they came in chunks, and checked (the
/// workers this proxy serves trust local handles).
void finish_weights(proxy_ptr self, std::uint64_t key, weights& w) {
  if (w.transfer != 0) {
    auto t =
        self->state.incoming.take(caf::actor_cast<caf::actor_addr>(self->state.remote), w.transfer);
    if (!t) {
      finish(self, key, std::move(t.error()));
      return;
    }
    w.values = std::move(*t);
    w.transfer = 0;
  }
  if (!w.values.all_finite()) {
    finish(self, key,
           make_error(errc::non_finite, "weights of shard " + std::to_string(w.shard) +
                                            " from another node hold NaN or infinity"));
    return;
  }
  finish(self, key, std::move(w));
}

/// Runs `op` now, or after the operations before it: everything the proxy sends the gateway
/// leaves in the order its users sent it, as with a direct handle (a barrier relies on its
/// push of a step's mean reaching the shard before the pulls it delegates after it).
void run_in_order(proxy_ptr self, std::function<void()> op) {
  auto& st = self->state;
  if (st.busy || !st.queue.empty()) {
    st.queue.push_back(std::move(op));
    return;
  }
  op();
}

/// Runs queued operations until one starts a chunked transfer (busy again) or none is left.
void drain(proxy_ptr self) {
  auto& st = self->state;
  while (!st.busy && !st.queue.empty()) {
    auto op = std::move(st.queue.front());
    st.queue.pop_front();
    op();
  }
}

/// Sends g to the gateway (in chunks when large), then `op` with the gradient's metadata; the
/// reply (push_ack or weights) completes `key`. While the chunks are out, later operations wait.
template <class Op>
void forward_gradient(proxy_ptr self, std::uint64_t key, Op op, gradient g) {
  auto& st = self->state;
  auto send_op = [self, key, op](gradient g) {
    auto req = self->request(self->state.remote, self->state.opts.timeout, op, std::move(g));
    auto on_err = [self, key](caf::error& err) { finish(self, key, std::move(err)); };
    if constexpr (std::is_same<Op, push_atom>::value)
      req.then([self, key](push_ack& a) { finish(self, key, std::move(a)); }, on_err);
    else
      req.then([self, key](weights& w) { finish_weights(self, key, w); }, on_err);
  };
  if (!is_large(g.values, st.opts)) {
    send_op(std::move(g));
    return;
  }
  auto id = st.next_transfer++;
  auto values = std::move(g.values);
  g.values = tensor();
  g.transfer = id;
  st.busy = true;
  send_chunks(self, st.remote, std::move(values), id, st.opts,
              [self, key, g, send_op](caf::error err) mutable {
                self->state.busy = false;
                if (err)
                  finish(self, key, std::move(err));
                else
                  send_op(std::move(g));
                drain(self);
              });
}

/// A push or push_pull from a user: parked, then forwarded (in chunks when large) in order.
template <class Op>
caf::response_promise gradient_in_order(proxy_ptr self, Op op, gradient g) {
  auto rp = self->make_response_promise();
  auto key = park(self, rp);
  run_in_order(self,
               [self, key, op, g]() mutable { forward_gradient(self, key, op, std::move(g)); });
  return rp;
}

/// A small request relayed to the gateway in order; its `Reply` (or error) answers the user.
template <class Reply, class... Ts>
caf::response_promise relay_in_order(proxy_ptr self, Ts... xs) {
  auto rp = self->make_response_promise();
  auto key = park(self, rp);
  run_in_order(self, [self, key, xs...] {
    self->request(self->state.remote, self->state.opts.timeout, xs...)
        .then([self, key](Reply& r) { finish(self, key, std::move(r)); },
              [self, key](caf::error& err) { finish(self, key, std::move(err)); });
  });
  return rp;
}

}  // namespace

chunked_shard_actor::behavior_type shard_proxy(proxy_ptr self, chunked_shard_actor remote,
                                               std::int64_t expected_floats, chunk_options opts,
                                               caf::actor owner) {
  auto& st = self->state;
  st.remote = std::move(remote);
  st.opts = opts;
  st.incoming = reassembly(expected_floats, opts.max_open);
  self->monitor(st.remote);
  if (owner) self->monitor(owner);
  self->set_down_handler([self](caf::down_msg& dm) {
    auto& st = self->state;
    bool gateway = dm.source == caf::actor_cast<caf::actor_addr>(st.remote);
    auto err = gateway ? make_error(errc::node_down,
                                    "the remote shard went down: " + describe_error(dm.reason))
                       : make_error(errc::stopped, "the proxy's owner stopped");
    auto pending = std::move(st.pending);
    st.pending.clear();
    st.queue.clear();
    for (auto& kv : pending) kv.second.deliver(err);
    self->quit(gateway ? dm.reason : caf::exit_reason::normal);
  });
  return {
      [self](chunk_atom, const tensor_chunk& c) -> caf::result<std::int32_t> {
        if (auto err = self->state.incoming.add(sender_addr(self), c)) return err;
        return c.index;
      },
      [self](pull_atom, const pull_request& r) -> caf::result<weights> {
        auto rp = self->make_response_promise();
        auto key = park(self, rp);
        run_in_order(self, [self, key, r] {
          self->request(self->state.remote, self->state.opts.timeout, pull_atom::value, r)
              .then([self, key](weights& w) { finish_weights(self, key, w); },
                    [self, key](caf::error& err) { finish(self, key, std::move(err)); });
        });
        return rp;
      },
      [self](push_atom, gradient& g) -> caf::result<push_ack> {
        return gradient_in_order(self, push_atom::value, std::move(g));
      },
      [self](push_pull_atom, gradient& g) -> caf::result<weights> {
        return gradient_in_order(self, push_pull_atom::value, std::move(g));
      },
      // The rest is small: relayed in order, answered by the gateway's side.
      [self](stats_atom) -> caf::result<shard_stats> {
        return relay_in_order<shard_stats>(self, stats_atom::value);
      },
      [self](checkpoint_atom, std::int64_t step) -> caf::result<shard_checkpoint> {
        return relay_in_order<shard_checkpoint>(self, checkpoint_atom::value, step);
      },
      [self](restore_atom, shard_checkpoint& c) -> caf::result<std::int64_t> {
        return relay_in_order<std::int64_t>(self, restore_atom::value, std::move(c));
      },
      [self](leave_atom, std::int32_t worker, bool lost) {
        run_in_order(self, [self, worker, lost] {
          self->send(self->state.remote, leave_atom::value, worker, lost);
        });
      },
  };
}

std::vector<shard_actor> proxy_remote_shards(caf::actor_system& sys,
                                             const std::vector<shard_actor>& shards,
                                             const std::vector<std::int64_t>& sizes,
                                             const chunk_options& opts, caf::actor owner) {
  std::vector<shard_actor> out;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    auto& h = shards[i];
    if (!h || h.node() == sys.node()) {
      out.push_back(h);
      continue;
    }
    out.push_back(sys.spawn(shard_proxy, caf::actor_cast<chunked_shard_actor>(h),
                            i < sizes.size() ? sizes[i] : 0, opts, owner));
  }
  return out;
}

// -- worker front -------------------------------------------------------------------------------

worker_actor::behavior_type chunking_front(
    worker_actor::stateful_pointer<chunking_front_state> self, worker_actor worker,
    chunk_options opts, bool chunked, std::vector<bulk::endpoint> bulk) {
  auto& st = self->state;
  st.worker = std::move(worker);
  st.opts = opts;
  st.chunked = chunked;
  st.bulk = std::move(bulk);
  self->link_to(st.worker);
  // A worker that finishes normally does not take linked actors along: watch it as well.
  self->monitor(st.worker);
  self->set_down_handler([self](caf::down_msg& dm) { self->quit(dm.reason); });
  return {
      [self](assign_atom, worker_assignment& a) {
        auto& st = self->state;
        auto me = caf::actor_cast<caf::actor>(self);
        for (std::size_t i = 0; i < a.shards.size(); ++i) {
          auto& h = a.shards[i];
          if (!h || h.node() == self->node()) continue;
          auto addr = caf::actor_cast<caf::actor_addr>(h);
          auto it = st.proxies.find(addr);
          if (it == st.proxies.end()) {
            auto size = i < a.ranges.size() ? a.ranges[i].end - a.ranges[i].begin : 0;
            shard_actor p;
            const bulk::endpoint* b_at = st.bulk.empty() ? nullptr : &st.bulk[i % st.bulk.size()];
            if (b_at && b_at->port != 0 && b_at->node == h.node()) {
              auto b = bulk::spawn_proxy(self->home_system(), *b_at, static_cast<std::int32_t>(i),
                                         size, h, me);
              if (b)
                p = *b;
              else
                std::cerr << "actrain: " << describe_error(b.error()) << "; shard " << i
                          << " is reached over BASP\n";
            }
            if (!p && st.chunked)
              p = self->spawn(shard_proxy, caf::actor_cast<chunked_shard_actor>(h), size, st.opts,
                              me);
            if (!p) p = h;
            it = st.proxies.emplace(addr, p).first;
          }
          h = it->second;
        }
        self->send(st.worker, assign_atom::value, std::move(a));
      },
      [self](stop_atom) { self->send(self->state.worker, stop_atom::value); },
      [self](release_atom, std::int32_t share) {
        return self->delegate(self->state.worker, release_atom::value, share);
      },
      // Jobs with replicas do not chunk (validate(cluster_options)): passed on as it is.
      [self](moved_atom, std::int32_t s, shard_actor h) {
        self->send(self->state.worker, moved_atom::value, s, std::move(h));
      },
  };
}

}  // namespace actrain
