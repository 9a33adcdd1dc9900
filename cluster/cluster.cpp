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

#include <unistd.h>

#include <actrain/system.hpp>
#include "actors/barrier.hpp"
#include "actors/coordinator.hpp"
#include "actors/shard.hpp"
#include "actors/worker.hpp"
#include "cluster/chunking.hpp"

namespace actrain {

// -- the registrar (coordinator node) -----------------------------------------------------------

namespace {

struct cluster_members {
  std::vector<shard_actor> shards;
  std::vector<worker_actor> workers;
};

struct registrar_state {
  static inline const char* name = "actrain.registrar";
  job_spec job;
  cluster_options opts;
  std::function<void(const std::string&)> on_event;
  std::shared_ptr<cluster_members> members;  ///< read by the node's thread once complete
  int next_ps = 0;
  int next_worker = 0;
  int shards_joined = 0;
  int workers_joined = 0;
  std::vector<caf::typed_response_promise<bool>> waiting;
  std::vector<ps_endpoint> peers;  ///< per ps index
  std::vector<bool> peer_known;    ///< per ps index: it told us its endpoint
  int peers_known = 0;
  std::vector<caf::typed_response_promise<std::vector<ps_endpoint>>> waiting_peers;

  bool complete() const { return shards_joined == job.shards && workers_joined == job.workers; }
  std::string status() const {
    return std::to_string(next_ps) + " of " + std::to_string(opts.ps_nodes) + " ps nodes, " +
           std::to_string(shards_joined) + " of " + std::to_string(job.shards) + " shards, " +
           std::to_string(workers_joined) + " of " + std::to_string(job.workers) +
           " workers joined";
  }
  void event(const std::string& line) const {
    if (on_event) on_event(line);
  }
};

registrar_actor::behavior_type registrar(registrar_actor::stateful_pointer<registrar_state> self,
                                         job_spec job, cluster_options opts,
                                         std::function<void(const std::string&)> on_event,
                                         std::shared_ptr<cluster_members> members) {
  auto& st = self->state;
  st.job = std::move(job);
  st.opts = std::move(opts);
  st.on_event = std::move(on_event);
  st.members = std::move(members);
  st.members->shards.resize(static_cast<std::size_t>(st.job.shards));
  st.members->workers.resize(static_cast<std::size_t>(st.job.workers));
  st.peers.resize(static_cast<std::size_t>(st.opts.ps_nodes));
  st.peer_known.resize(static_cast<std::size_t>(st.opts.ps_nodes));
  auto add_peer = [self](std::int32_t index, const std::string& host, std::uint16_t port) {
    auto& st = self->state;
    auto i = static_cast<std::size_t>(index);
    if (st.peer_known[i]) return;
    st.peer_known[i] = true;
    if (port != 0 && host.empty()) {
      st.event("ps " + std::to_string(index) +
               " listens, but its address is unknown: workers reach it through this node");
      port = 0;
    }
    st.peers[i] = ps_endpoint{port != 0 ? host : std::string{}, port};
    if (port != 0)
      st.event("ps " + std::to_string(index) + " takes worker connections at " + host + ":" +
               std::to_string(port));
    if (++st.peers_known < st.opts.ps_nodes) return;
    for (auto& p : st.waiting_peers) p.deliver(st.peers);
    st.waiting_peers.clear();
  };
  auto joined = [self] {
    auto& st = self->state;
    if (!st.complete()) return;
    st.event("all nodes joined: " + st.status());
    for (auto& p : st.waiting) p.deliver(true);
    st.waiting.clear();
  };
  return {
      [self](hello_atom, const std::string& role, const std::string& token, std::uint32_t version,
             const tensor& probe,
             const std::string& name) -> caf::result<std::int32_t, std::int32_t, tensor> {
        auto& st = self->state;
        auto refuse = [&](caf::error err) {
          st.event("refused " + role + " node '" + name + "': " + describe_error(err));
          return err;
        };
        if (auto err = check_hello(st.opts.token, role, token, version, probe))
          return refuse(std::move(err));
        if (role == "ps") {
          if (st.next_ps >= st.opts.ps_nodes)
            return refuse(make_error(errc::bad_config, "the cluster already has its " +
                                                           std::to_string(st.opts.ps_nodes) +
                                                           " ps nodes ([cluster] ps-nodes)"));
          auto index = st.next_ps++;
          st.event("ps node '" + name + "' registered as ps " + std::to_string(index));
          return {index, static_cast<std::int32_t>(st.opts.ps_nodes), byte_order_probe()};
        }
        if (st.next_worker >= st.job.workers)
          return refuse(make_error(errc::bad_config, "the cluster already has its " +
                                                         std::to_string(st.job.workers) +
                                                         " workers ([job] workers)"));
        auto index = st.next_worker++;
        st.event("worker node '" + name + "' registered as worker " + std::to_string(index));
        return {index, static_cast<std::int32_t>(st.job.workers), byte_order_probe()};
      },
      [self, joined](join_shard_atom, std::int32_t index, shard_actor h) {
        auto& st = self->state;
        if (index < 0 || index >= st.job.shards || !h) return;
        auto& slot = st.members->shards[static_cast<std::size_t>(index)];
        if (slot) return;  // never replace a joined shard (a confused or late node)
        slot = std::move(h);
        st.shards_joined += 1;
        joined();
      },
      [self, joined](join_worker_atom, std::int32_t index, worker_actor h) {
        auto& st = self->state;
        if (index < 0 || index >= st.job.workers || !h) return;
        auto& slot = st.members->workers[static_cast<std::size_t>(index)];
        if (slot) return;
        slot = std::move(h);
        st.workers_joined += 1;
        joined();
      },
      // A ps node's peer endpoint. Without a host, the address this node sees the ps node's
      // connection come from (its own middleman knows it) is what workers dial.
      [self, add_peer](peer_atom, std::int32_t index, const ps_endpoint& at) {
        auto& st = self->state;
        if (index < 0 || index >= st.opts.ps_nodes) return;
        auto sender = self->current_sender();
        auto port = at.port;
        if (port == 0 || !at.host.empty() || !sender) return add_peer(index, at.host, port);
        self->request(self->home_system().middleman().actor_handle(), std::chrono::seconds(5),
                      caf::get_atom::value, sender->node())
            .then([=](const caf::node_id&, const std::string& seen,
                      std::uint16_t) { add_peer(index, seen, port); },
                  [=](caf::error&) { add_peer(index, "", port); });
      },
      [self](peers_atom) -> caf::result<std::vector<ps_endpoint>> {
        auto& st = self->state;
        if (st.peers_known == st.opts.ps_nodes) return st.peers;
        st.waiting_peers.push_back(self->make_response_promise<std::vector<ps_endpoint>>());
        return st.waiting_peers.back();
      },
      [self](members_atom) -> caf::result<bool> {
        auto& st = self->state;
        if (st.complete()) return true;
        st.waiting.push_back(self->make_response_promise<bool>());
        return st.waiting.back();
      },
      // Ends the cluster: every joined actor is told to stop (so remote nodes exit even when the
      // job never started or failed), waiting callers fail, and the registrar quits.
      [self](stop_atom) -> std::string {
        auto& st = self->state;
        for (auto& s : st.members->shards)
          if (s) self->send_exit(s, caf::exit_reason::user_shutdown);
        for (auto& w : st.members->workers)
          if (w) self->send(w, stop_atom::value);
        auto stopped = make_error(errc::stopped, "the coordinator node stopped: " + st.status());
        for (auto& p : st.waiting) p.deliver(stopped);
        for (auto& p : st.waiting_peers) p.deliver(stopped);
        st.waiting.clear();
        st.waiting_peers.clear();
        auto s = st.status();
        self->quit();
        return s;
      },
  };
}

}  // namespace

engine_result run_coordinator_node(caf::actor_system& sys, const job_spec& job,
                                   std::shared_ptr<const job_data> data,
                                   const cluster_options& opts, node_hooks hooks) {
  validate(job);
  if (opts.ps_nodes < 1 || opts.ps_nodes > job.shards)
    throw std::invalid_argument(
        "cluster.ps-nodes must be in [1, job.shards = " + std::to_string(job.shards) + "], got " +
        std::to_string(opts.ps_nodes));
  const auto topo = plan_topology(job, placement::cluster);
  default_blas_threads(1);
  engine_result fail;
  auto event = [&](const std::string& s) {
    if (hooks.on_event) hooks.on_event(s);
  };
  validate(opts.chunking);
  bool chunked = uses_chunking(job, opts);
  if (chunked)
    event("shard slices up to " + std::to_string(max_slice_bytes(job)) +
          " bytes cross nodes in chunks of " + std::to_string(opts.chunking.chunk_bytes) +
          " bytes, " + std::to_string(opts.chunking.window) + " in flight");
  auto members = std::make_shared<cluster_members>();
  auto reg = sys.spawn(registrar, job, opts, hooks.on_event, members);
  caf::scoped_actor self{sys};
  auto stop_registrar = [&] {
    std::string status;
    self->request(reg, std::chrono::seconds(5), stop_atom::value)
        .receive([&](std::string& s) { status = std::move(s); }, [&](caf::error&) {});
    self->wait_for(reg);
    return status;
  };
  const char* bind = opts.host.empty() || opts.host == "0.0.0.0" ? nullptr : opts.host.c_str();
  auto port = sys.middleman().publish(reg, opts.port, bind, true);
  if (!port) {
    stop_registrar();
    fail.error = "cannot listen on " + opts.host + ":" + std::to_string(opts.port) + ": " +
                 sys.render(port.error());
    return fail;
  }
  auto unpublish = [&] { sys.middleman().unpublish(reg, *port); };
  if (hooks.control) hooks.control->on_kill([reg] { caf::anon_send(reg, stop_atom::value); });
  if (!opts.port_file.empty()) {
    // Write then rename: a launcher polling the file never reads half a number.
    auto tmp = opts.port_file + ".tmp";
    std::ofstream(tmp) << *port << "\n";
    std::rename(tmp.c_str(), opts.port_file.c_str());
  }
  if (hooks.on_listening) hooks.on_listening(*port);
  bool complete = false;
  std::string why;
  self->request(reg, opts.join_timeout, members_atom::value)
      .receive([&](bool) { complete = true; }, [&](caf::error& e) { why = describe_error(e); });
  if (!complete) {
    auto status = stop_registrar();
    unpublish();
    fail.error = "the cluster did not form within " + std::to_string(opts.join_timeout.count()) +
                 " ms (" + why + "): " + status;
    return fail;
  }
  coordinator_config cc;
  cc.job = job;
  cc.data = std::move(data);
  cc.ranges = job_ranges(job);
  // With chunking, members->shards are the ps nodes' gateways; this node reaches them through
  // proxies (its evaluation pulls and its barriers' pushes are as large as the workers').
  cc.shards = chunked ? proxy_remote_shards(sys, members->shards, slice_sizes(job), opts.chunking)
                      : members->shards;
  // async: workers talk to the remote shards (or their gateways) directly. sync and ssp: one
  // barrier per shard on this node, in front of the remote shard (it monitors it and requests it
  // with timeouts); the coordinator's leave messages and stats requests to the barriers stay
  // local. Workers on other nodes reach a barrier through a gateway when slices are chunked.
  if (!topo.barriers) {
    cc.fronts = members->shards;
  } else {
    cc.fronts = make_fronts(sys, job, topo, cc.shards);
    if (chunked) {
      auto sizes = slice_sizes(job);
      for (std::size_t s = 0; s < cc.fronts.size(); ++s)
        cc.fronts[s] = sys.spawn(shard_gateway, cc.fronts[s], sizes[s], opts.chunking);
    }
  }
  auto fronts = cc.fronts;
  auto proxies = chunked ? cc.shards : std::vector<shard_actor>{};
  cc.workers = members->workers;
  cc.hooks = std::move(hooks.engine);
  auto coord = sys.spawn(coordinator, std::move(cc));
  if (hooks.control) hooks.control->add(caf::actor_cast<caf::actor>(coord));
  self->monitor(coord);
  self->send(coord, run_atom::value);
  engine_result result;
  self->receive([&](engine_result& r) { result = std::move(r); },
                [&](caf::error& err) { result.error = describe_error(err); },
                [&](caf::down_msg& dm) {
                  result.error = "the coordinator stopped: " + describe_error(dm.reason);
                });
  self->wait_for(coord);
  // The coordinator stops the barriers when it finishes, but not when it fails (a shard went
  // down): a barrier left alive would hang this node's actor system at exit.
  if (topo.barriers)
    for (auto& f : fronts) self->send_exit(f, caf::exit_reason::user_shutdown);
  for (auto& p : proxies) self->send_exit(p, caf::exit_reason::user_shutdown);
  result.ok = result.ok && result.error.empty();
  stop_registrar();
  unpublish();
  return result;
}

}  // namespace actrain
