// The coordinator node: the registrar ps and worker nodes register with, and the job it runs on
// their handles (include/actrain/cluster.hpp). Shared basics live in cluster_common.cpp, the ps and
// worker nodes in cluster_nodes.cpp.
#include <actrain/cluster.hpp>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <utility>

#include <unistd.h>

#include <actrain/system.hpp>
#include "actors/barrier.hpp"
#include "actors/coordinator.hpp"
#include "actors/shard.hpp"
#include "actors/worker.hpp"
#include "cluster/beacon.hpp"
#include "cluster/chunking.hpp"
#include "cluster/traffic.hpp"
#include "cluster/transport.hpp"

namespace actrain {

// -- the registrar (coordinator node) -----------------------------------------------------------

namespace {

/// Workers in all, joined ones included, a job takes (cluster_options::max_workers; by default
/// twice job.workers, within max_cluster_workers).
std::int32_t joinable_workers(const job_spec& job, const cluster_options& opts) {
  return opts.max_workers > 0
             ? std::max(opts.max_workers, job.workers)
             : std::max(job.workers, std::min(2 * job.workers, max_cluster_workers));
}

struct cluster_members {
  std::vector<shard_actor> shards;
  std::vector<replicated_shard_actor> replicas;  ///< per shard ([cluster] replicas = 1)
  /// Per shard: the sync/ssp barrier its ps node runs in front of it (join_front), or none.
  std::vector<shard_actor> fronts;
  std::vector<worker_actor> workers;
  std::map<caf::node_id, std::string> names;  ///< registered nodes' names
};

struct registrar_state {
  static inline const char* name = "actrain.registrar";
  job_spec job;
  cluster_options opts;
  std::function<void(const std::string&)> on_event;
  std::shared_ptr<cluster_members> members;  ///< read by the node's thread once complete
  int next_ps = 0;
  int next_worker = 0;
  int max_workers = 0;  ///< workers in all (joined_workers): the first job.workers, then joiners
  coordinator_actor coordinator;  ///< set once the job runs: joining workers go to it
  /// Workers beyond job.workers: (index, handle) that joined before the job ran, every one that
  /// joined (stopped with the cluster), and their names until the job runs (the node's thread
  /// reads members->names while it builds the job).
  std::vector<std::pair<std::int32_t, worker_actor>> early;
  std::map<std::int32_t, worker_actor> joined;  ///< by index: each joins once
  std::map<caf::node_id, std::string> early_names;
  int shards_joined = 0;
  int replicas_joined = 0;
  int workers_joined = 0;
  std::vector<caf::typed_response_promise<bool>> waiting;
  std::vector<ps_endpoint> peers;  ///< per ps index
  std::vector<bool> peer_known;    ///< per ps index: it told us its endpoint
  int peers_known = 0;
  std::vector<caf::typed_response_promise<std::vector<ps_endpoint>>> waiting_peers;
  // Per-node traffic: the registered nodes' last reports (by name, members->names), and who sent
  // a final one.
  std::map<std::string, std::vector<socket_traffic>> traffic;
  std::set<std::string> final_traffic;
  /// Nodes that will send no final report: their connection dropped (a member actor of theirs
  /// went down unreachable), by name.
  std::set<std::string> gone;
  /// When each node's beacon was last heard, by name: one silent for [cluster] node-timeout is
  /// taken as lost by the coordinator and sends no final report either.
  std::map<std::string, std::chrono::steady_clock::time_point> heard;
  std::vector<caf::typed_response_promise<std::vector<observe::node_traffic>>> waiting_traffic;
  std::chrono::steady_clock::time_point traffic_deadline;  ///< when waiting_traffic is answered
  net::traffic_meter own_traffic;
  std::string own_name;
  observe::metrics_hub* hub = nullptr;

  bool complete() const {
    return shards_joined == job.shards && workers_joined == job.workers &&
           (opts.replicas == 0 || replicas_joined == job.shards);
  }
  std::string status() const {
    return std::to_string(next_ps) + " of " + std::to_string(opts.ps_nodes) + " ps nodes, " +
           std::to_string(shards_joined) + " of " + std::to_string(job.shards) + " shards, " +
           (opts.replicas > 0 ? std::to_string(replicas_joined) + " of " +
                                    std::to_string(job.shards) + " replicas ([cluster] replicas), "
                              : std::string{}) +
           std::to_string(workers_joined) + " of " + std::to_string(job.workers) +
           " workers joined";
  }
  void event(const std::string& line) const {
    if (on_event) on_event(line);
  }
};

using registrar_ptr = registrar_impl::stateful_pointer<registrar_state>;

/// Refuses what check_hello finds wrong and a role that is full; else hands out the next index.
caf::result<std::int32_t, std::int32_t, tensor> on_hello(registrar_ptr self,
                                                         const std::string& role,
                                                         const std::string& token,
                                                         std::uint32_t version, const tensor& probe,
                                                         const std::string& name) {
  auto& st = self->state;
  auto refuse = [&](caf::error err) {
    st.event("refused " + role + " node '" + name + "': " + describe_error(err));
    return err;
  };
  if (auto err = check_hello(st.opts.token, role, token, version, probe))
    return refuse(std::move(err));
  const bool ps = role == "ps";
  auto& next = ps ? st.next_ps : st.next_worker;
  const int count = ps ? st.opts.ps_nodes : st.job.workers;
  const int cap = ps ? count : st.max_workers;
  if (next >= cap)
    return refuse(make_error(
        errc::bad_config,
        "the cluster already has its " + std::to_string(cap) +
            (ps ? " ps nodes ([cluster] ps-nodes)"
                : cap == count ? " workers ([job] workers; no more may join this job)"
                               : " workers ([cluster] max-workers, joined ones included)")));
  auto index = next++;
  st.event(role + " node '" + name + "' registered as " + role + " " + std::to_string(index));
  if (auto sender = self->current_sender()) {
    // Two nodes named alike (the same [cluster] name) are told apart by role and index.
    auto shown = name;
    auto& names = st.members->names;
    for (auto* known : {&names, &st.early_names})
      for (auto& [id, n] : *known)
        if (n == shown && id != sender->node()) shown = name + "-" + role + std::to_string(index);
    const bool joins = !ps && index >= count;
    if (joins) st.event("worker " + std::to_string(index) + " joins the " +
                        (st.coordinator ? "running job" : "job once it runs"));
    (joins && !st.coordinator ? st.early_names : names)[sender->node()] = shown;
  }
  return {index, static_cast<std::int32_t>(count), byte_order_probe()};
}

/// Delivers `members` to those waiting once every shard and worker joined.
void maybe_complete(registrar_ptr self) {
  auto& st = self->state;
  if (!st.complete()) return;
  st.event("all nodes joined: " + st.status());
  for (auto& p : st.waiting) p.deliver(true);
  st.waiting.clear();
}

/// Fills slot `index` of `slots` once: a joined member is never replaced (a confused or late
/// node); an index outside the job or an empty handle is ignored.
template <class Handle>
void join(registrar_ptr self, std::vector<Handle>& slots, std::int32_t index, Handle h,
          int& joined) {
  if (index < 0 || static_cast<std::size_t>(index) >= slots.size() || !h) return;
  auto& slot = slots[static_cast<std::size_t>(index)];
  if (slot) return;
  slot = std::move(h);
  self->monitor(slot);  // its node's connection dropping: no final traffic report will come
  joined += 1;
  maybe_complete(self);
}

/// Hands a worker beyond job.workers to the running job's coordinator, with its node's name.
void forward_join(registrar_ptr self, std::int32_t index, worker_actor h) {
  auto& names = self->state.members->names;
  auto it = names.find(h.node());
  auto name = it != names.end() ? it->second : std::string{"unregistered"};
  self->send(self->state.coordinator, join_worker_atom::value, index, std::move(h),
             std::move(name));
}

/// A worker beyond job.workers joined: it goes to the coordinator (now, or once the job runs).
void join_late_worker(registrar_ptr self, std::int32_t index, worker_actor h) {
  auto& st = self->state;
  if (index < st.job.workers || index >= st.next_worker || !h || st.joined.count(index)) return;
  st.joined.emplace(index, h);
  self->monitor(h);
  if (!st.coordinator) {
    st.early.emplace_back(index, std::move(h));
    return;
  }
  forward_join(self, index, std::move(h));
}

/// The job runs: workers that joined before it go to its coordinator.
void on_job_runs(registrar_ptr self, coordinator_actor coordinator) {
  auto& st = self->state;
  if (st.coordinator || !coordinator) return;
  st.coordinator = std::move(coordinator);
  st.members->names.merge(st.early_names);
  for (auto& [index, h] : std::exchange(st.early, {})) forward_join(self, index, std::move(h));
}

/// A node's beacon: answered true when its node is registered, and passed on to the running
/// job's coordinator by the node's registered name (its liveness check).
bool on_heartbeat(registrar_ptr self) {
  auto& st = self->state;
  auto sender = self->current_sender();
  if (!sender) return false;
  auto& names = st.members->names;
  if (auto it = names.find(sender->node()); it != names.end()) {
    st.heard[it->second] = std::chrono::steady_clock::now();
    if (st.coordinator) self->send(st.coordinator, heartbeat_atom::value, it->second);
    return true;
  }
  return st.early_names.count(sender->node()) > 0;
}

/// Records where workers reach ps node `index`; answers peers requests once all are known.
void add_peer(registrar_ptr self, std::int32_t index, const std::string& host, std::uint16_t port,
              std::uint16_t bulk_port) {
  auto& st = self->state;
  auto i = static_cast<std::size_t>(index);
  if (st.peer_known[i]) return;
  st.peer_known[i] = true;
  if (port != 0 && host.empty()) {
    st.event("ps " + std::to_string(index) +
             " listens, but its address is unknown: workers reach it through this node");
    port = 0;
  }
  st.peers[i] =
      ps_endpoint{port != 0 ? host : std::string{}, port, port != 0 ? bulk_port : std::uint16_t{0}};
  if (port != 0)
    st.event("ps " + std::to_string(index) + " takes worker connections at " + host + ":" +
             std::to_string(port) +
             (bulk_port != 0 ? " (bulk channel at port " + std::to_string(bulk_port) + ")" : ""));
  if (++st.peers_known < st.opts.ps_nodes) return;
  for (auto& p : st.waiting_peers) p.deliver(st.peers);
  st.waiting_peers.clear();
}

/// A ps node's peer endpoint. Without a host, the address this node sees the ps node's
/// connection come from (its own middleman knows it) is what workers dial.
void on_peer(registrar_ptr self, std::int32_t index, const ps_endpoint& at) {
  auto& st = self->state;
  if (index < 0 || index >= st.opts.ps_nodes) return;
  auto sender = self->current_sender();
  if (at.port == 0 || !at.host.empty() || !sender)
    return add_peer(self, index, at.host, at.port, at.bulk_port);
  auto port = at.port;
  auto bulk_port = at.bulk_port;
  self->request(self->home_system().middleman().actor_handle(), std::chrono::seconds(5),
                caf::get_atom::value, sender->node())
      .then([=](const caf::node_id&, const std::string& seen,
                std::uint16_t) { add_peer(self, index, seen, port, bulk_port); },
            [=](caf::error&) { add_peer(self, index, "", port, bulk_port); });
}

/// How often a node samples its connections' counts (net::traffic_meter).
constexpr auto traffic_sample_every = std::chrono::milliseconds(100);

/// Every node's traffic joined, the coordinator node's own connections sampled now (a node
/// sharing its process with others reports none: its sockets are not its own alone), and put in
/// the hub.
std::vector<observe::node_traffic> publish_traffic(registrar_ptr self) {
  auto& st = self->state;
  auto all = st.traffic;
  if (net::node_scope::alone()) all[st.own_name] = st.own_traffic.sample();
  auto nodes = net::join_traffic(all);
  if (st.hub) st.hub->update([&](observe::run_snapshot& snap) { snap.nodes = nodes; });
  return nodes;
}

/// Whether a registered node may still send its final traffic report: it has not, its
/// connection did not drop, and its beacon (when it runs one) was heard within node-timeout.
/// Nodes sharing this process (simulated ones) send none: their sockets are not theirs alone.
bool final_reports_to_come(const registrar_state& st) {
  if (!net::node_scope::alone()) return false;
  const auto now = std::chrono::steady_clock::now();
  const auto timeout = st.opts.node_timeout;
  for (auto& [id, name] : st.members->names) {
    if (st.final_traffic.count(name) || st.gone.count(name)) continue;
    auto beat = st.heard.find(name);
    if (timeout.count() > 0 && beat != st.heard.end() && now - beat->second >= timeout) continue;
    return true;
  }
  return false;
}

/// Answers those waiting for the final traffic once every registered node sent its final report
/// (or their wait timed out); false while they still wait (or none does).
bool maybe_deliver_traffic(registrar_ptr self, bool timed_out) {
  auto& st = self->state;
  if (st.waiting_traffic.empty()) return false;
  if (!timed_out && final_reports_to_come(st)) return false;
  auto nodes = publish_traffic(self);
  for (auto& p : st.waiting_traffic) p.deliver(nodes);
  st.waiting_traffic.clear();
  return true;
}

/// A registered node's connections (reports from anyone else are ignored).
caf::result<bool> on_traffic(registrar_ptr self, std::vector<socket_traffic>& sockets, bool last) {
  auto& st = self->state;
  auto sender = self->current_sender();
  auto& names = st.members->names;
  auto it = sender ? names.find(sender->node()) : names.end();
  if (it == names.end()) return false;
  if (auto why = net::check_traffic_report(sockets); !why.empty())
    return make_error(errc::bad_config, "node '" + it->second + "' sent " + why);
  st.traffic[it->second] = std::move(sockets);
  if (last) st.final_traffic.insert(it->second);
  if (!maybe_deliver_traffic(self, false)) publish_traffic(self);
  return true;
}

/// Ends the cluster: every joined actor is told to stop (so remote nodes exit even when the job
/// never started or failed), waiting callers fail, and the registrar quits.
std::string on_stop(registrar_ptr self) {
  auto& st = self->state;
  for (auto& s : st.members->shards)
    if (s) self->send_exit(s, caf::exit_reason::user_shutdown);
  for (auto& s : st.members->replicas)
    if (s) self->send_exit(s, caf::exit_reason::user_shutdown);
  for (auto& w : st.members->workers)
    if (w) self->send(w, stop_atom::value);
  for (auto& [index, w] : st.joined) self->send(w, stop_atom::value);
  auto stopped = make_error(errc::stopped, "the coordinator node stopped: " + st.status());
  for (auto& p : st.waiting) p.deliver(stopped);
  for (auto& p : st.waiting_peers) p.deliver(stopped);
  st.waiting.clear();
  st.waiting_peers.clear();
  auto s = st.status();
  self->quit();
  return s;
}

registrar_impl::behavior_type registrar(registrar_ptr self, job_spec job, cluster_options opts,
                                        std::function<void(const std::string&)> on_event,
                                        std::shared_ptr<cluster_members> members,
                                        std::shared_ptr<node_control> control,
                                        observe::metrics_hub* hub) {
  auto& st = self->state;
  st.job = std::move(job);
  st.opts = std::move(opts);
  st.on_event = std::move(on_event);
  st.members = std::move(members);
  st.members->shards.resize(static_cast<std::size_t>(st.job.shards));
  st.members->replicas.resize(static_cast<std::size_t>(st.job.shards));
  st.members->fronts.resize(static_cast<std::size_t>(st.job.shards));
  st.members->workers.resize(static_cast<std::size_t>(st.job.workers));
  st.max_workers = joinable_workers(st.job, st.opts);
  st.peers.resize(static_cast<std::size_t>(st.opts.ps_nodes));
  st.peer_known.resize(static_cast<std::size_t>(st.opts.ps_nodes));
  st.own_name = st.opts.name.empty() ? "coordinator-" + std::to_string(::getpid()) : st.opts.name;
  st.hub = hub;
  self->set_down_handler([self](caf::down_msg& dm) {
    if (dm.reason != caf::exit_reason::remote_link_unreachable) return;
    auto& st = self->state;
    if (auto it = st.members->names.find(dm.source.node()); it != st.members->names.end()) {
      st.gone.insert(it->second);
      maybe_deliver_traffic(self, false);
    }
  });
  self->send(self, tick_atom::value);
  return {
      [self](hello_atom, const std::string& role, const std::string& token, std::uint32_t version,
             const tensor& probe,
             const std::string& name) { return on_hello(self, role, token, version, probe, name); },
      [self](join_shard_atom, std::int32_t index, shard_actor h) {
        join(self, self->state.members->shards, index, std::move(h), self->state.shards_joined);
      },
      // Kept (and stopped with the cluster) even when this node wants none: a ps node started
      // with replicas = 1 under a coordinator without them holds copies nobody uses.
      [self](join_replica_atom, std::int32_t index, replicated_shard_actor h) {
        join(self, self->state.members->replicas, index, std::move(h),
             self->state.replicas_joined);
      },
      // Not counted: a ps node sends it before its shard's join_shard, so a complete cluster
      // holds every front its ps nodes run. The ps node stops it with its shard.
      [self](join_front_atom, std::int32_t index, shard_actor h) {
        auto& fronts = self->state.members->fronts;
        if (index < 0 || static_cast<std::size_t>(index) >= fronts.size() || !h) return;
        auto& slot = fronts[static_cast<std::size_t>(index)];
        if (!slot) slot = std::move(h);
      },
      [self](join_worker_atom, std::int32_t index, worker_actor h) {
        if (index >= self->state.job.workers) return join_late_worker(self, index, std::move(h));
        join(self, self->state.members->workers, index, std::move(h), self->state.workers_joined);
      },
      [self](run_atom, coordinator_actor c) { on_job_runs(self, std::move(c)); },
      [self](heartbeat_atom) { return on_heartbeat(self); },
      [self](peer_atom, std::int32_t index, const ps_endpoint& at) { on_peer(self, index, at); },
      [self](peers_atom) -> caf::result<std::vector<ps_endpoint>> {
        auto& st = self->state;
        if (st.peers_known == st.opts.ps_nodes) return st.peers;
        st.waiting_peers.push_back(self->make_response_promise<std::vector<ps_endpoint>>());
        return st.waiting_peers.back();
      },
      [self](traffic_atom, std::vector<socket_traffic>& sockets, bool last) {
        return on_traffic(self, sockets, last);
      },
      [self](traffic_atom, bool wait) -> caf::result<std::vector<observe::node_traffic>> {
        auto& st = self->state;
        if (!wait) return publish_traffic(self);
        st.waiting_traffic.push_back(
            self->make_response_promise<std::vector<observe::node_traffic>>());
        auto p = st.waiting_traffic.back();
        st.traffic_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
        maybe_deliver_traffic(self, false);
        return p;
      },
      // Every 100 ms: this node's own connections are sampled (one that closes keeps the counts
      // of its last sample), and a wait for final reports ends past its deadline or once the
      // nodes yet to report fell silent.
      [self](tick_atom) {
        auto& st = self->state;
        if (net::node_scope::alone()) st.own_traffic.sample();
        if (!st.waiting_traffic.empty())
          maybe_deliver_traffic(self, std::chrono::steady_clock::now() >= st.traffic_deadline);
        self->delayed_send(self, traffic_sample_every, tick_atom::value);
      },
      [self](members_atom) -> caf::result<bool> {
        auto& st = self->state;
        if (st.complete()) return true;
        st.waiting.push_back(self->make_response_promise<bool>());
        return st.waiting.back();
      },
      [self](stop_atom) { return on_stop(self); },
      // A ps node that received SIGTERM: its shards hold the model, so the job ends as stopped
      // after a last checkpoint, as on the coordinator's own SIGTERM (node_control::stop).
      [self, control](stop_atom, const std::string& why) {
        if (self->state.on_event) self->state.on_event("stopping the job: " + why);
        if (control) control->stop(why);
      },
  };
}

}  // namespace

namespace {

/// What the coordinator node puts between the cluster's members and its coordinator: proxies for
/// remote shards (chunked slices), barriers (sync, ssp) and their gateways. `owned` lists what
/// this node spawned and must stop itself when the job fails.
struct job_fronts {
  std::vector<shard_actor> shards;  ///< what this node reaches the shards through
  std::vector<shard_actor> fronts;  ///< what workers talk to
  std::vector<shard_actor> owned;   ///< barriers, gateways and proxies spawned here
};

job_fronts wire_fronts(caf::actor_system& sys, const job_spec& job, const topology& topo,
                       const cluster_members& members, const cluster_options& opts, bool chunked) {
  job_fronts out;
  // With chunking, members.shards are the ps nodes' gateways; this node reaches them through
  // proxies (its evaluation pulls and its barriers' pushes are as large as the workers').
  out.shards = chunked ? proxy_remote_shards(sys, members.shards, slice_sizes(job), opts.chunking)
                       : members.shards;
  if (chunked) out.owned = out.shards;
  // async: workers talk to the remote shards (or their gateways) directly. sync and ssp: one
  // barrier per shard. Where the shard's ps node runs it (join_front: that node serves a bulk
  // channel), workers push to it over that channel and it reaches its shard in-process; the
  // coordinator's leave, stats and checkpoint requests cross to it. Else it runs on this node,
  // in front of the remote shard (it monitors it and requests it with timeouts), and workers on
  // other nodes reach it through a gateway when slices are chunked.
  if (!topo.barriers) {
    out.fronts = members.shards;
    return out;
  }
  auto sizes = slice_sizes(job);
  out.fronts.resize(out.shards.size());
  for (std::size_t s = 0; s < out.shards.size(); ++s) {
    if (s < members.fronts.size() && members.fronts[s]) {
      out.fronts[s] = members.fronts[s];
      continue;
    }
    auto& f = out.fronts[s];
    f = sys.spawn(barrier, front_config(job, topo, s, out.shards[s], joinable_workers(job, opts)));
    if (chunked) f = sys.spawn(shard_gateway, f, sizes[s], opts.chunking);
    out.owned.push_back(f);
  }
  return out;
}

/// Write then rename: a launcher polling the file never reads half a number.
void write_port_file(const std::string& path, std::uint16_t port) {
  auto tmp = path + ".tmp";
  std::ofstream(tmp) << port << "\n";
  std::rename(tmp.c_str(), path.c_str());
}

/// Runs the coordinator on the joined members and returns its result (or why it stopped).
engine_result drive_job(caf::actor_system& sys, caf::scoped_actor& self, const job_spec& job,
                        std::shared_ptr<const job_data> data, const topology& topo,
                        const cluster_members& members, const registrar_actor& reg,
                        const cluster_options& opts, node_hooks& hooks,
                        std::shared_ptr<const checkpoint> resume, bool recover) {
  auto w = wire_fronts(sys, job, topo, members, opts, uses_chunking(job, opts));
  coordinator_config cc;
  cc.job = job;
  cc.data = std::move(data);
  cc.ranges = job_ranges(job);
  cc.shards = w.shards;
  cc.fronts = w.fronts;
  cc.workers = members.workers;
  cc.max_workers = joinable_workers(job, opts);
  cc.shard_loss_recoverable = recover;
  auto name_of = [&](const caf::node_id& n) {
    auto it = members.names.find(n);
    return it != members.names.end() ? it->second : n == sys.node() ? "local" : "unregistered";
  };
  for (auto& wk : members.workers) cc.worker_nodes.push_back(name_of(wk.node()));
  for (auto& sh : members.shards) cc.shard_nodes.push_back(name_of(sh.node()));
  if (opts.replicas > 0) {
    cc.replicas = members.replicas;
    for (auto& r : members.replicas) cc.replica_nodes.push_back(name_of(r.node()));
  }
  cc.node_timeout = opts.node_timeout;
  cc.node_check = beacon_period(opts);
  for (auto& [id, name] : members.names) cc.watched_nodes.push_back(name);
  cc.hooks = hooks.engine;  // a copy: a ps node's recovery runs the job again with them
  cc.resume = std::move(resume);
  auto coord = sys.spawn(coordinator, std::move(cc));
  if (hooks.control) {
    hooks.control->add(caf::actor_cast<caf::actor>(coord));
    // SIGTERM: the job ends as stopped after a last checkpoint (with checkpoints on), so the
    // cluster can be restarted with --resume; a second signal kills.
    hooks.control->on_stop([addr = coord.address()](const std::string& why) {
      if (auto c = caf::actor_cast<coordinator_actor>(addr))
        caf::anon_send(c, stop_atom::value, why);
    });
  }
  self->monitor(coord);
  self->send(coord, run_atom::value);
  // From now on workers that register beyond [job] workers join through the coordinator (its
  // run is in its mailbox first).
  self->send(reg, run_atom::value, coordinator_actor{coord});
  engine_result result;
  self->receive([&](engine_result& r) { result = std::move(r); },
                [&](caf::error& err) { result.error = describe_error(err); },
                [&](caf::down_msg& dm) {
                  result.error = "the coordinator stopped: " + describe_error(dm.reason);
                });
  self->wait_for(coord);
  // The coordinator stops the barriers when it finishes, but not when it fails (a shard went
  // down): an actor left alive would hang this node's actor system at exit.
  for (auto& a : w.owned) self->send_exit(a, caf::exit_reason::user_shutdown);
  result.ok = result.ok && result.error.empty();
  return result;
}

/// Publishes the registrar on opts.host:opts.port, waits (bounded by join_timeout) for
/// counts.shards shards and counts.workers workers, runs drive(self, members), stops the
/// registrar (which stops every member) and unpublishes. Result: engine_result or sparse_result.
template <class Result, class Drive>
Result serve_cluster(caf::actor_system& sys, const job_spec& counts, const cluster_options& opts,
                     node_hooks& hooks, Drive drive, std::uint16_t* bound = nullptr) {
  auto members = std::make_shared<cluster_members>();
  net::node_scope in_process;
  auto reg =
      sys.spawn(registrar, counts, opts, hooks.on_event, members, hooks.control, hooks.engine.hub);
  caf::scoped_actor self{sys};
  auto stop_registrar = [&] {
    std::string status;
    self->request(reg, std::chrono::seconds(5), stop_atom::value)
        .receive([&](std::string& s) { status = std::move(s); }, [&](caf::error&) {});
    self->wait_for(reg);
    return status;
  };
  Result fail;
  const std::string bind = opts.host == "0.0.0.0" ? "" : opts.host;
  auto port = net::publish(sys, caf::actor_cast<caf::strong_actor_ptr>(reg), sys.message_types(reg),
                           opts.port, bind);
  if (!port) {
    stop_registrar();
    fail.error = "cannot listen on " + opts.host + ":" + std::to_string(opts.port) + ": " +
                 sys.render(port.error());
    return fail;
  }
  if (hooks.control) hooks.control->on_kill([reg] { caf::anon_send(reg, stop_atom::value); });
  if (bound) *bound = *port;
  if (!opts.port_file.empty()) write_port_file(opts.port_file, *port);
  if (hooks.on_listening) hooks.on_listening(*port);
  std::string why;
  bool complete = false;
  self->request(reg, opts.join_timeout, members_atom::value)
      .receive([&](bool) { complete = true; }, [&](caf::error& e) { why = describe_error(e); });
  Result result;
  if (complete) {
    result = drive(self, *members, reg);
    bool recovering = false;
    if constexpr (std::is_same_v<Result, engine_result>) recovering = result.shard_lost >= 0;
    if (recovering) {
      // The job restarts from its last checkpoint: the registrar goes without telling anyone
      // to stop, so every node sees it go and registers again (rejoin-timeout).
      self->send_exit(reg, caf::exit_reason::kill);
      self->wait_for(reg);
      net::unpublish(sys, reg.address(), *port);
      return result;
    }
    // Every node's bytes once its actors are down (each sends a final report then).
    self->request(reg, std::chrono::seconds(5), traffic_atom::value, result.ok)
        .receive([&](std::vector<observe::node_traffic>& n) { result.nodes = std::move(n); },
                 [&](caf::error&) {});
    stop_registrar();
  } else {
    result.error = "the cluster did not form within " + std::to_string(opts.join_timeout.count()) +
                   " ms (" + why + "): " + stop_registrar();
  }
  net::unpublish(sys, reg.address(), *port);
  return result;
}

}  // namespace

engine_result run_coordinator_node(caf::actor_system& sys, const job_spec& job,
                                   std::shared_ptr<const job_data> data,
                                   const cluster_options& opts, node_hooks hooks,
                                   std::shared_ptr<const checkpoint> resume) {
  validate(job);
  if (opts.ps_nodes < 1 || opts.ps_nodes > job.shards)
    throw std::invalid_argument(
        "cluster.ps-nodes must be in [1, job.shards = " + std::to_string(job.shards) + "], got " +
        std::to_string(opts.ps_nodes));
  if (job.workers > max_cluster_workers)
    throw std::invalid_argument("job.workers must be <= " + std::to_string(max_cluster_workers) +
                                " in a cluster, got " + std::to_string(job.workers));
  if (opts.max_workers != 0 &&
      (opts.max_workers < job.workers || opts.max_workers > max_cluster_workers))
    throw std::invalid_argument(
        "cluster.max-workers must be 0 or in [job.workers = " + std::to_string(job.workers) + ", " +
        std::to_string(max_cluster_workers) + "], got " + std::to_string(opts.max_workers));
  const auto topo = plan_topology(job, placement::cluster);
  validate(opts.chunking);
  validate_replicas(job, opts);
  default_blas_threads(1);
  if (uses_chunking(job, opts) && hooks.on_event)
    hooks.on_event("shard slices up to " + std::to_string(max_slice_bytes(job)) +
                   " bytes cross nodes in chunks of " + std::to_string(opts.chunking.chunk_bytes) +
                   " bytes, " + std::to_string(opts.chunking.window) + " in flight");
  // With checkpoints and rejoin-timeout, a lost ps node does not end the job: once it is back
  // (restarted with its command) the job goes on from the newest good checkpoint.
  const bool recover = !job.checkpoint.dir.empty() && opts.rejoin_timeout.count() > 0;
  auto round = opts;
  for (;;) {
    auto res = serve_cluster<engine_result>(
        sys, job, round, hooks,
        [&](caf::scoped_actor& self, const cluster_members& members, const registrar_actor& reg) {
          return drive_job(sys, self, job, data, topo, members, reg, opts, hooks, resume, recover);
        },
        &round.port);
    if (res.shard_lost < 0) return res;
    checkpoint_store store(job.checkpoint.dir, std::max(1, job.checkpoint.keep));
    std::vector<std::string> refused;
    auto from = store.latest(job_fingerprint(job), &refused);
    for (auto& why : refused)
      if (hooks.on_event) hooks.on_event("refused checkpoint " + why);
    if (!from) {
      res.error += " and no good checkpoint of the job is in " + job.checkpoint.dir;
      res.shard_lost = -1;
      return res;
    }
    if (hooks.on_event)
      hooks.on_event(res.error + ": the job goes on from checkpoint " +
                     std::to_string(from->sequence) + " (" + std::to_string(from->samples) +
                     " samples) once its ps node is back; waiting up to " +
                     std::to_string(opts.rejoin_timeout.count()) +
                     " ms ([cluster] rejoin-timeout)");
    resume = std::make_shared<const checkpoint>(std::move(*from));
    round.join_timeout = opts.rejoin_timeout;
  }
}

sparse_result run_sparse_coordinator_node(caf::actor_system& sys, const sparse_job& job,
                                          std::int64_t train_rows, const sparse_dataset& test,
                                          const cluster_options& opts, node_hooks hooks) {
  if (opts.ps_nodes < 1 || opts.ps_nodes > job.shards)
    throw std::invalid_argument(
        "cluster.ps-nodes must be in [1, job.shards = " + std::to_string(job.shards) + "], got " +
        std::to_string(opts.ps_nodes));
  // The registrar counts members; a sparse job's are table shards and sparse workers, joined
  // under the dense interfaces' handles (the registrar only stops them) and cast back here.
  job_spec counts;
  counts.name = describe(job.model);
  counts.shards = job.shards;
  counts.workers = job.workers;
  // A sparse job takes no joining workers (its coordinator has no join_worker).
  auto fixed = opts;
  fixed.max_workers = job.workers;
  return serve_cluster<sparse_result>(
      sys, counts, fixed, hooks,
      [&](caf::scoped_actor&, const cluster_members& members, const registrar_actor&) {
        std::vector<sparse_shard_actor> tables;
        for (auto& s : members.shards) tables.push_back(caf::actor_cast<sparse_shard_actor>(s));
        std::vector<sparse_worker_actor> workers;
        for (auto& w : members.workers) workers.push_back(caf::actor_cast<sparse_worker_actor>(w));
        // The model's few dense parameters (its bias) live here, next to the sync barriers.
        auto dense = spawn_dense_shard(sys, job);
        return drive_sparse_job(sys, job, train_rows, dense, tables, workers, test);
      });
}

}  // namespace actrain
