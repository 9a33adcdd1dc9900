// ps and worker nodes: connect, register, dial the ps nodes directly, spawn and join their
// actors, wait until stopped (include/actrain/cluster.hpp).
#include <actrain/cluster.hpp>

#include <algorithm>
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
#include "cluster/beacon.hpp"
#include "cluster/bulk.hpp"
#include "cluster/chunking.hpp"
#include "cluster/traffic.hpp"
#include "cluster/transport.hpp"

namespace actrain {

// -- ps and worker nodes ------------------------------------------------------------------------

caf::expected<registrar_actor> connect_registrar(caf::actor_system& sys,
                                                 const cluster_options& opts) {
  // The coordinator may not listen yet: wait for it until the join deadline (a launcher starts
  // all nodes at once).
  auto c =
      net::connect(sys, opts.host, opts.port, std::chrono::steady_clock::now() + opts.join_timeout,
                   true, sys.message_types<registrar_actor>());
  if (c.failure != net::connect_failure::none) return make_error(errc::node_down, c.message);
  if (!c.published)
    return make_error(errc::node_down, "no coordinator is published at " + opts.host + ":" +
                                           std::to_string(opts.port));
  return caf::actor_cast<registrar_actor>(c.published);
}

namespace {

struct registration {
  registrar_actor reg;
  std::int32_t index = -1;
  std::int32_t count = 0;
};

std::string node_name(node_role role, const cluster_options& opts) {
  if (!opts.name.empty()) return opts.name;
  return to_string(role) + "-" + std::to_string(::getpid());
}

/// An error's own message when it carries one, else its code.
std::string error_text(const caf::error& e) {
  if (e.context().match_elements<std::string>()) return e.context().get_as<std::string>(0);
  return describe_error(e);
}

/// Connects and registers; on failure, the message to show (already naming the coordinator).
caf::expected<registration> register_node(caf::actor_system& sys, caf::scoped_actor& self,
                                          node_role role, const cluster_options& opts,
                                          const job_spec&) {
  auto where = opts.host + ":" + std::to_string(opts.port);
  auto reg = connect_registrar(sys, opts);
  if (!reg)
    return make_error(errc::node_down, "cannot reach the coordinator: " + error_text(reg.error()));
  registration out;
  out.reg = *reg;
  caf::error err;
  self->request(out.reg, opts.join_timeout, hello_atom::value, to_string(role), opts.token,
                protocol_version, byte_order_probe(), node_name(role, opts))
      .receive(
          [&](std::int32_t index, std::int32_t count, const tensor& probe) {
            out.index = index;
            out.count = count;
            if (!is_byte_order_probe(probe))
              err = make_error(errc::version_mismatch,
                               "byte order or float format of the coordinator at " + where +
                                   " differs from this node's");
          },
          [&](caf::error& e) { err = std::move(e); });
  if (err)
    return make_error(errc::bad_config, "registration with the coordinator at " + where +
                                            " refused: " + describe_error(err));
  return out;
}

/// Opens a BASP connection to every ps node that listens, before the worker joins: messages to a
/// node go over a direct connection once one exists (CAF's routing table prefers it), so the
/// shard handles the coordinator hands out later reach the shards without crossing it. A ps
/// node that cannot be reached stays reachable through the coordinator.
struct dialed_peer {
  ps_endpoint at;
  caf::node_id node;  ///< none when the dial failed
};

std::vector<dialed_peer> dial_ps_nodes(caf::actor_system& sys, caf::scoped_actor& self,
                                       const registrar_actor& reg, const cluster_options& opts,
                                       int only = -1) {
  std::vector<ps_endpoint> peers;
  std::vector<dialed_peer> out;
  self->request(reg, opts.join_timeout, peers_atom::value)
      .receive([&](std::vector<ps_endpoint>& p) { peers = std::move(p); }, [&](caf::error&) {});
  for (std::size_t i = 0; i < peers.size(); ++i) {
    out.push_back({peers[i], caf::node_id{}});
    if (only >= 0 && static_cast<int>(i) != only) continue;
    const auto& host = peers[i].host;
    const auto port = peers[i].port;
    if (port == 0 || host.empty()) continue;
    auto c =
        net::connect(sys, host, port, std::chrono::steady_clock::now() + opts.join_timeout, false);
    if (c.failure != net::connect_failure::none)
      std::cerr << "actrain: cannot connect to ps node " << i << " (" << c.message
                << "); its shards are reached through the coordinator node\n";
    else
      out.back().node = c.node;
  }
  return out;
}

/// Whether this job's workers and ps nodes use the bulk channel (cluster_options::bulk_channel);
/// every node decides the same way from the same job and [cluster] settings.
bool uses_bulk_channel(const job_spec& job, const cluster_options& o) {
  return o.bulk_channel && o.direct_connections && !o.tls.enabled() && o.replicas == 0 &&
         job.compression == "none";
}

/// Where a worker node's proxies reach each ps node's bulk channel (port 0: not there).
std::vector<bulk::endpoint> bulk_endpoints(const std::vector<dialed_peer>& peers,
                                           const cluster_options& opts, std::int32_t index) {
  std::vector<bulk::endpoint> out;
  for (auto& p : peers) {
    bulk::endpoint e;
    e.host = p.at.host;
    e.port = p.at.host.empty() || !p.node ? std::uint16_t{0} : p.at.bulk_port;
    e.node = p.node;
    e.token = opts.token;
    e.name = opts.name.empty() ? "worker " + std::to_string(index) : opts.name;
    e.timeout = opts.chunking.timeout;
    out.push_back(std::move(e));
  }
  return out;
}

/// Waits until every actor of `mine` is down; if the coordinator goes first (its connection
/// drops, or this node's beacon gets no answer for [cluster] node-timeout), kills them.
void wait_node(caf::scoped_actor& self, const registrar_actor& reg, std::vector<caf::actor> mine,
               const cluster_options& opts, node_outcome& out) {
  self->monitor(reg);
  for (auto& a : mine) self->monitor(a);
  caf::actor beacon;
  if (opts.node_timeout.count() > 0) {
    beacon = spawn_beacon(self->home_system(), reg, beacon_period(opts), opts.node_timeout);
    self->monitor(beacon);
  }
  struct stop_beacon {
    caf::scoped_actor& self;
    caf::actor& beacon;
    ~stop_beacon() {
      if (beacon) self->send_exit(beacon, caf::exit_reason::user_shutdown);
    }
  } stopper{self, beacon};
  auto alive = mine.size();
  bool coordinator_gone = false;
  std::string silence;    // why this node's beacon took the coordinator as gone
  std::string evicted;    // why the coordinator took this node as lost (its heartbeats stopped)
  std::string job_error;  // the cause a failed or stopped job's coordinator ended the actors with
  bool stopped = false;
  std::string own_failure;  // the first error an actor of this node ended with otherwise
  bool own_failure_is_actrains = false;  // that error is actrain's own (not a lost peer)
  // This node's bytes per connection go to the registrar every half second, and once more when
  // its actors are down (unless other nodes share this process: its sockets are not its own).
  net::node_scope in_process;
  net::traffic_meter meter;
  // Sampled every 100 ms: a connection that closes keeps the counts of its last sample.
  // A plain send, the last one too: a request for it would wait its whole timeout when the
  // coordinator node is already exiting; the wait below ends on the registrar's down instead.
  auto report_traffic = [&](bool last) {
    if (net::node_scope::alone()) self->send(reg, traffic_atom::value, meter.sample(), last);
  };
  constexpr auto sample_every = std::chrono::milliseconds(100);
  constexpr int samples_per_report = 5;
  int samples = 0;
  auto next_sample = std::chrono::steady_clock::now() + sample_every;
  while (alive > 0) {
    auto now = std::chrono::steady_clock::now();
    if (now >= next_sample) {
      if (++samples % samples_per_report == 0)
        report_traffic(false);
      else if (net::node_scope::alone())
        meter.sample();
      next_sample = now + sample_every;
    }
    self->receive(
        [&](caf::down_msg& dm) {
          const bool silent = beacon && dm.source == beacon.address();
          if (silent && (!dm.reason || dm.reason == caf::exit_reason::user_shutdown)) return;
          if (dm.source == reg.address() || silent) {
            if (silent && !coordinator_gone) silence = error_text(dm.reason);
            if (!coordinator_gone)
              for (auto& a : mine) self->send_exit(a, caf::exit_reason::kill);
            coordinator_gone = true;
            return;
          }
          for (auto& a : mine)
            if (a.address() == dm.source) alive -= 1;
          auto& r = dm.reason;
          auto code = static_cast<errc>(r ? r.code() : 0);
          if (r && r.category() == errc_category() && code == errc::node_down &&
              !coordinator_gone) {
            // The coordinator took this node as lost (its heartbeats did not arrive in time)
            // and told its actors to exit: the job goes on without it.
            if (evicted.empty()) evicted = error_text(r);
          } else if (job_error.empty() && r && r.category() == errc_category() &&
                     (code == errc::job_failed || code == errc::job_stopped)) {
            job_error = error_text(r);
            stopped = code == errc::job_stopped;
          } else if (own_failure.empty() && r && !coordinator_gone &&
                     r != caf::exit_reason::user_shutdown) {
            // An actor of this node failed on its own (a worker whose shard went down): the job
            // cannot have completed as planned.
            own_failure = describe_error(r);
            own_failure_is_actrains = r.category() == errc_category();
          }
        },
        caf::after(std::chrono::duration_cast<caf::timespan>(next_sample - now)) >> [] {});
  }
  // Waits up to `bound` for the registrar's down (the coordinator node gone).
  auto await_registrar_down = [&](std::chrono::seconds bound) {
    auto until = std::chrono::steady_clock::now() + bound;
    while (!coordinator_gone && std::chrono::steady_clock::now() < until)
      self->receive(
          [&](caf::down_msg& dm) {
            if (dm.source == reg.address()) coordinator_gone = true;
          },
          caf::after(std::chrono::milliseconds(100)) >> [] {});
  };
  // A ps node that lost the coordinator a moment before this node did ends its shards, and an
  // actor here can go down with node_down from that (over the bulk channel) before this node
  // sees the registrar go: before calling this node evicted, wait a moment (bounded) for the
  // registrar's down. An evicted node's registrar stays up; it only exits a second later.
  if (!evicted.empty() && !coordinator_gone) await_registrar_down(std::chrono::seconds(1));
  // Gone while this node's actors ran: the job did not end (it ends by stopping them first).
  bool gone_mid_job = coordinator_gone;
  if (!coordinator_gone && net::node_scope::alone()) {
    // The final report, then this node keeps its connections open until the registrar is done
    // (it collects every node's final counts before it stops): a peer that exited first would
    // otherwise close a connection before its last bytes were counted here. Bounded.
    report_traffic(true);
    await_registrar_down(std::chrono::seconds(3));
  }
  bulk::close_retired();  // counted: the bulk channel's finished sockets can go
  if (!job_error.empty()) {
    out.ok = false;
    out.job_failed = !stopped;
    out.job_stopped = stopped;
    out.message = (stopped ? "the job was stopped: " : "the job failed: ") + job_error;
    return;
  }
  // A request of this node's actor that failed as the coordinator went (the receiver or the route
  // was on its node) is the coordinator's loss, not this node's failure.
  if (coordinator_gone && !own_failure.empty() && !own_failure_is_actrains) {
    own_failure.clear();
    gone_mid_job = true;
  }
  if (!own_failure.empty()) {
    out.ok = false;
    out.job_failed = true;
    out.message = "the job failed: " + own_failure;
    return;
  }
  out.ok = true;
  out.coordinator_lost = gone_mid_job;
  out.message = gone_mid_job ? "the coordinator went away" +
                                   (silence.empty() ? std::string{} : " (" + silence + ")") +
                                   "; local actors stopped"
                : !evicted.empty() ? "the coordinator took this node as lost (" + evicted +
                                         "); the job goes on without it"
                                   : "stopped by the coordinator";
}

/// Runs `life` (one registration: register, serve, wait) and, while it ends because the
/// coordinator went away mid-job and opts.rejoin_timeout allows, again: the node waits that long
/// for a coordinator at the same host:port (a restarted one; with --resume it continues from its
/// checkpoint, restoring the shards) and registers anew.
template <class Life>
node_outcome rejoining(const cluster_options& opts, const std::shared_ptr<node_control>& control,
                       Life life) {
  using std::chrono::steady_clock;
  auto out = life(opts);
  auto killed = [&] { return control && control->killed(); };
  while (out.coordinator_lost && opts.rejoin_timeout.count() > 0 && !killed()) {
    std::cerr << "actrain node: the coordinator went away; waiting up to "
              << opts.rejoin_timeout.count() << " ms for it at " << opts.host << ":" << opts.port
              << " ([cluster] rejoin-timeout)" << std::endl;
    auto index = out.index;
    auto deadline = steady_clock::now() + opts.rejoin_timeout;
    auto again = opts;
    // A coordinator coming back may close a first connection mid-handshake (still starting),
    // and a hello may reach a registrar that was just withdrawn and never answer: registration
    // is tried again, each attempt bounded by 5 s, until the deadline.
    for (;;) {
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady_clock::now());
      again.join_timeout =
          std::clamp(left, std::chrono::milliseconds(1), std::chrono::milliseconds(5000));
      out = life(again);
      if (out.index >= 0 || steady_clock::now() >= deadline || killed()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (out.index < 0) {
      out.index = index;
      out.message = "the coordinator went away and did not come back within " +
                    std::to_string(opts.rejoin_timeout.count()) + " ms: " + out.message;
    }
  }
  return out;
}

/// A ps node's life: registers, opens its port for workers, tells the registrar where it is,
/// lets SIGTERM stop the job, spawns its shards with spawn(index, count, mine) (which joins
/// them), waits until they are stopped or the coordinator is gone, closes the port.
template <class Spawn>
node_outcome serve_ps_node_once(caf::actor_system& sys, const job_spec& job,
                                const cluster_options& opts, std::shared_ptr<node_control> control,
                                bool dense, Spawn& spawn) {
  node_outcome out;
  caf::scoped_actor self{sys};
  auto r = register_node(sys, self, node_role::ps, opts, job);
  if (!r) {
    out.message = describe_error(r.error());
    return out;
  }
  out.index = r->index;
  // The peer port opens before the shards join: a worker dials it before its first step.
  std::uint16_t peer_port = 0;
  std::string advertised;
  if (opts.direct_connections) {
    auto bind = ps_listen_address(opts);
    auto p = net::open(sys, opts.listen_port, bind);
    if (!p) {
      out.message = "cannot listen for workers on " + (bind.empty() ? "*" : bind) + ":" +
                    std::to_string(opts.listen_port) +
                    " ([cluster] listen-host, listen-port): " + sys.render(p.error());
      return out;  // the coordinator sees this node's connection close and fails the job
    }
    peer_port = *p;
    advertised = !opts.advertise_host.empty() ? opts.advertise_host : bind;
  }
  // The bulk channel's port opens with the peer port (workers learn both from the registrar).
  std::unique_ptr<bulk::server> bulk_server;
  std::uint16_t bulk_port = 0;
  if (dense && peer_port != 0 && uses_bulk_channel(job, opts)) {
    bulk_server = std::make_unique<bulk::server>(sys, opts.token, opts.chunking.timeout);
    auto bind = ps_listen_address(opts);
    auto p = bulk_server->listen(bind, opts.bulk_port);
    if (!p) {
      net::close(sys, peer_port);
      out.message =
          "cannot listen for the bulk channel ([cluster] bulk-port): " + describe_error(p.error());
      return out;
    }
    bulk_port = *p;
  }
  self->send(r->reg, peer_atom::value, r->index, ps_endpoint{advertised, peer_port, bulk_port});
  if (control) {
    // SIGTERM: this node's shards hold part of the model, so it asks the coordinator to end the
    // job as stopped after a last checkpoint (the cluster resumes from it with --resume) and
    // keeps serving until the job ends; a second signal ends the process at once.
    control->on_stop([reg = r->reg, index = r->index](const std::string& why) {
      caf::anon_send(reg, stop_atom::value, "ps node " + std::to_string(index) + ": " + why);
    });
  }
  std::vector<caf::actor> mine;
  auto keep = [&](const caf::actor& a) {
    if (control) control->add(a);
    mine.push_back(a);
  };
  spawn(self, r->reg, r->index, r->count, keep, bulk_server.get());
  wait_node(self, r->reg, std::move(mine), opts, out);
  if (bulk_server) bulk_server->stop();
  if (peer_port != 0) net::close(sys, peer_port);
  return out;
}

/// serve_ps_node_once, again after a coordinator that went away came back (rejoining).
template <class Spawn>
node_outcome serve_ps_node(caf::actor_system& sys, const job_spec& job, const cluster_options& opts,
                           std::shared_ptr<node_control> control, bool dense, Spawn spawn) {
  return rejoining(opts, control, [&](const cluster_options& o) {
    return serve_ps_node_once(sys, job, o, control, dense, spawn);
  });
}

}  // namespace

node_outcome run_ps_node(caf::actor_system& sys, const job_spec& job, const cluster_options& opts,
                         std::shared_ptr<node_control> control) {
  validate(opts.chunking);
  validate_replicas(job, opts);
  bool chunked = uses_chunking(job, opts);
  return serve_ps_node(
      sys, job, opts, control, true,
      [&](caf::scoped_actor& self, const registrar_actor& reg, std::int32_t index,
          std::int32_t count, auto& keep, bulk::server* bulk) {
        // With replicas, updates go to the next ps node over a connection of
        // their own, open before this node's shards join (so before the job
        // runs): not through the coordinator node, where a switch of route
        // could reorder them, and a loss of that node is seen here at once.
        if (opts.replicas > 0 && count > 1 && opts.direct_connections)
          dial_ps_nodes(sys, self, reg, opts, (index + 1) % count);
        auto configs = make_shard_configs(job);
        auto sizes = slice_sizes(job);
        // sync over the bulk channel: this node runs its shards' barriers
        // (own_fronts), so a step's slices reach them in one hop and the mean
        // goes to the shard in-process. Only sync: its workers have one request
        // per shard in flight, while an ssp worker's prefetched pull, held by
        // the barrier, would stall the push behind it on the channel's
        // connection (answered one frame at a time).
        const auto topo = plan_topology(job, placement::cluster);
        const bool own_fronts = bulk && topo.barriers && job.mode == "sync" && !chunked;
        for (std::size_t s = 0; s < configs.size(); ++s) {
          if (static_cast<std::int32_t>(s) % count != index) continue;
          shard_actor h = sys.spawn(shard, std::move(configs[s]));
          keep(caf::actor_cast<caf::actor>(h));
          const auto si = static_cast<std::int32_t>(s);
          if (own_fronts) {
            // Tracks every worker index a cluster can hand out: the coordinator
            // node's [cluster] max-workers need not be known here.
            shard_actor b = sys.spawn(barrier, front_config(job, topo, s, h, max_cluster_workers));
            keep(caf::actor_cast<caf::actor>(b));
            bulk->serve(si, b, sizes[s]);
            self->send(reg, join_front_atom::value, si, b);
          } else if (bulk) {
            bulk->serve(si, h, sizes[s]);
          }
          if (chunked) {
            // Other nodes get the gateway (linked to the shard: either going
            // down takes the other).
            h = sys.spawn(shard_gateway, h, sizes[s], opts.chunking);
            keep(caf::actor_cast<caf::actor>(h));
          }
          self->send(reg, join_shard_atom::value, static_cast<std::int32_t>(s), h);
        }
        // [cluster] replicas = 1: copies of the shards of the ps node before
        // this one, fed by their primaries once the job runs.
        if (opts.replicas < 1 || count < 2) return;
        auto copies = make_shard_configs(job);
        for (std::size_t s = 0; s < copies.size(); ++s) {
          if (static_cast<std::int32_t>(s) % count != (index + count - 1) % count) continue;
          auto r = sys.spawn(shard, std::move(copies[s]));
          keep(caf::actor_cast<caf::actor>(r));
          self->send(reg, join_replica_atom::value, static_cast<std::int32_t>(s), r);
        }
      });
}

node_outcome run_sparse_ps_node(caf::actor_system& sys, const sparse_job& job,
                                const cluster_options& opts,
                                std::shared_ptr<node_control> control) {
  job_spec counts;  // register_node takes the dense job; a sparse one's counts are enough
  counts.shards = job.shards;
  counts.workers = job.workers;
  return serve_ps_node(sys, counts, opts, control, false,
                       [&](caf::scoped_actor& self, const registrar_actor& reg, std::int32_t index,
                           std::int32_t count, auto& keep, bulk::server*) {
                         for (std::int32_t s = 0; s < job.shards; ++s) {
                           if (s % count != index) continue;
                           auto h = spawn_sparse_shard(sys, job, s);
                           keep(caf::actor_cast<caf::actor>(h));
                           // Joined under the dense interface's handle: the registrar only stops
                           // it.
                           self->send(reg, join_shard_atom::value, s,
                                      caf::actor_cast<shard_actor>(h));
                         }
                       });
}

namespace {

node_outcome serve_worker_node_once(caf::actor_system& sys, const job_spec& job,
                                    const std::shared_ptr<const job_data>& data,
                                    const cluster_options& opts,
                                    const std::shared_ptr<node_control>& control) {
  node_outcome out;
  caf::scoped_actor self{sys};
  auto r = register_node(sys, self, node_role::worker, opts, job);
  if (!r) {
    out.message = describe_error(r.error());
    return out;
  }
  out.index = r->index;
  std::vector<dialed_peer> peers;
  if (opts.direct_connections) peers = dial_ps_nodes(sys, self, r->reg, opts);
  std::vector<bulk::endpoint> bulk;
  if (uses_bulk_channel(job, opts)) bulk = bulk_endpoints(peers, opts, r->index);
  auto train = std::shared_ptr<const dataset>(data, &data->train);
  auto wc = make_worker_config(job, plan_topology(job, placement::cluster), train, r->index);
  wc.source = data->train_source;
  if (opts.worker_delay_s > 0) wc.delay_s = opts.worker_delay_s;
  validate(opts.chunking);
  // With the bulk channel the worker runs on the scheduler: the reader thread that delivers the
  // weights it waits for runs it (cluster/bulk_inline.hpp), so a step wakes no thread of its own.
  worker_actor h = spawn_worker(sys, std::move(wc), !opts.worker_on_scheduler && bulk.empty());
  if (control) control->add(caf::actor_cast<caf::actor>(h));
  std::vector<caf::actor> mine{caf::actor_cast<caf::actor>(h)};
  if (uses_chunking(job, opts) || !bulk.empty()) {
    // The coordinator talks to a front that swaps remote shard handles for local proxies.
    h = sys.spawn(chunking_front, h, opts.chunking, uses_chunking(job, opts), std::move(bulk));
    if (control) control->add(caf::actor_cast<caf::actor>(h));
    mine.push_back(caf::actor_cast<caf::actor>(h));
  }
  self->send(r->reg, join_worker_atom::value, r->index, h);
  wait_node(self, r->reg, std::move(mine), opts, out);
  return out;
}

}  // namespace

node_outcome run_worker_node(caf::actor_system& sys, const job_spec& job,
                             std::shared_ptr<const job_data> data, const cluster_options& opts,
                             std::shared_ptr<node_control> control) {
  default_blas_threads(1);
  return rejoining(opts, control, [&](const cluster_options& o) {
    return serve_worker_node_once(sys, job, data, o, control);
  });
}

namespace {

node_outcome serve_sparse_worker_node_once(caf::actor_system& sys, const sparse_job& job,
                                           std::shared_ptr<const sparse_dataset> train,
                                           const cluster_options& opts,
                                           const std::shared_ptr<node_control>& control) {
  node_outcome out;
  job_spec counts;
  counts.shards = job.shards;
  counts.workers = job.workers;
  caf::scoped_actor self{sys};
  auto r = register_node(sys, self, node_role::worker, opts, counts);
  if (!r) {
    out.message = describe_error(r.error());
    return out;
  }
  out.index = r->index;
  if (opts.direct_connections) dial_ps_nodes(sys, self, r->reg, opts);
  auto h = spawn_sparse_worker(sys, job, std::move(train), r->index, !opts.worker_on_scheduler);
  if (control) control->add(caf::actor_cast<caf::actor>(h));
  self->send(r->reg, join_worker_atom::value, r->index, caf::actor_cast<worker_actor>(h));
  wait_node(self, r->reg, {caf::actor_cast<caf::actor>(h)}, opts, out);
  return out;
}

}  // namespace

node_outcome run_sparse_worker_node(caf::actor_system& sys, const sparse_job& job,
                                    std::shared_ptr<const sparse_dataset> train,
                                    const cluster_options& opts,
                                    std::shared_ptr<node_control> control) {
  return rejoining(opts, control, [&](const cluster_options& o) {
    return serve_sparse_worker_node_once(sys, job, train, o, control);
  });
}

}  // namespace actrain
