#include <actrain/testing/sim_cluster.hpp>

#include <stdexcept>

namespace actrain {

namespace {

/// A node's own actor system config: the cluster defaults, fewer threads (many nodes share
/// the cores of one machine).
struct sim_config : caf::actor_system_config {
  sim_config(const cluster_options& opts, int threads) {
    prepare_cluster_config(*this, opts);
    set("scheduler.max-threads", static_cast<std::int64_t>(threads));
  }
};

template <class T>
T get_bounded(std::future<T>& f, std::chrono::milliseconds bound, const std::string& what) {
  if (!f.valid()) throw std::runtime_error(what + ": already collected");
  if (f.wait_for(bound) != std::future_status::ready)
    throw std::runtime_error(what + " did not finish within " + std::to_string(bound.count()) +
                             " ms");
  return f.get();
}

}  // namespace

sim_cluster::sim_cluster(sim_cluster_config cfg) : cfg_(std::move(cfg)) {
  cfg_.cluster.host = "127.0.0.1";
  cfg_.cluster.port = 0;
  cfg_.cluster.ps_nodes = cfg_.ps_nodes;
  std::promise<std::uint16_t> listening;
  auto port = listening.get_future();
  std::promise<engine_result> result;
  result_ = result.get_future();
  std::promise<sparse_result> sparse;
  sparse_result_ = sparse.get_future();
  coordinator_thread_ =
      std::thread([this, listening = std::move(listening), result = std::move(result),
                   sparse = std::move(sparse)]() mutable {
        bool told = false;
        try {
          sim_config sc{cfg_.cluster, cfg_.threads_per_node};
          caf::actor_system sys{sc};
          node_hooks hooks;
          hooks.engine = cfg_.hooks;
          hooks.control = coordinator_control_;
          hooks.on_listening = [&](std::uint16_t p) {
            told = true;
            listening.set_value(p);
          };
          hooks.on_event = [this](const std::string& line) {
            std::lock_guard<std::mutex> guard{events_mtx_};
            events_.push_back(line);
          };
          // The engine's events (lost workers) go to the same list, and on to the caller's hook.
          hooks.engine.on_event = [this, user = cfg_.hooks.on_event](const std::string& line) {
            {
              std::lock_guard<std::mutex> guard{events_mtx_};
              events_.push_back(line);
            }
            if (user) user(line);
          };
          if (cfg_.sparse) {
            auto job = *cfg_.sparse;
            job.on_event = hooks.engine.on_event;
            auto r = run_sparse_coordinator_node(sys, job, cfg_.sparse_train->rows,
                                                 *cfg_.sparse_test, cfg_.cluster, std::move(hooks));
            if (!told) listening.set_value(0);
            engine_result summary;  // wait() on a sparse cluster: ok and error only
            summary.ok = r.ok;
            summary.error = r.error;
            result.set_value(std::move(summary));
            sparse.set_value(std::move(r));
            return;
          }
          auto r = run_coordinator_node(sys, cfg_.job, cfg_.data, cfg_.cluster, std::move(hooks));
          if (!told) listening.set_value(0);
          result.set_value(std::move(r));
          sparse.set_value(sparse_result{});
        } catch (...) {
          if (!told) listening.set_value(0);
          result.set_exception(std::current_exception());
          sparse.set_exception(std::current_exception());
        }
      });
  try {
    port_ = get_bounded(port, cfg_.cluster.join_timeout, "the simulated coordinator node");
  } catch (...) {
    coordinator_control_->kill();
    coordinator_thread_.join();
    throw;
  }
  if (port_ == 0) {
    coordinator_thread_.join();
    auto r = result_.get();
    throw std::runtime_error("the simulated coordinator node did not start: " + r.error);
  }
  for (int i = 0; i < cfg_.ps_nodes; ++i) {
    ps_.push_back(std::make_unique<node>());
    auto opts = cfg_.cluster;
    opts.name = "sim-ps-" + std::to_string(i);
    start_node(*ps_.back(), node_role::ps, opts);
  }
  for (int i = 0; i < cfg_.job.workers; ++i) {
    auto opts = cfg_.cluster;
    opts.name = "sim-worker-" + std::to_string(i);
    if (static_cast<std::size_t>(i) < cfg_.worker_delays.size())
      opts.worker_delay_s = cfg_.worker_delays[static_cast<std::size_t>(i)];
    add_worker_node(opts);
  }
}

void sim_cluster::start_node(node& n, node_role role, cluster_options opts) {
  opts.host = "127.0.0.1";
  opts.port = port_;
  opts.ps_nodes = cfg_.ps_nodes;
  if (cfg_.relay_links) {
    n.relay = std::make_unique<link_relay>("127.0.0.1", port_);
    opts.port = n.relay->port();
  }
  std::promise<node_outcome> done;
  n.outcome = done.get_future();
  n.thread = std::thread([this, role, opts, control = n.control, done = std::move(done)]() mutable {
    try {
      sim_config sc{opts, cfg_.threads_per_node};
      caf::actor_system sys{sc};
      node_outcome out;
      if (cfg_.sparse)
        out = role == node_role::ps
                  ? run_sparse_ps_node(sys, *cfg_.sparse, opts, control)
                  : run_sparse_worker_node(sys, *cfg_.sparse, cfg_.sparse_train, opts, control);
      else
        out = role == node_role::ps ? run_ps_node(sys, cfg_.job, opts, control)
                                    : run_worker_node(sys, cfg_.job, cfg_.data, opts, control);
      if (control->killed()) out.message = "killed (fault injection)";
      done.set_value(std::move(out));
    } catch (...) {
      done.set_exception(std::current_exception());
    }
  });
}

int sim_cluster::add_worker_node(cluster_options opts) {
  opts.worker_on_scheduler = true;  // see cluster_options::worker_on_scheduler
  workers_.push_back(std::make_unique<node>());
  start_node(*workers_.back(), node_role::worker, std::move(opts));
  return static_cast<int>(workers_.size()) - 1;
}

void sim_cluster::kill_worker(int i) {
  workers_.at(static_cast<std::size_t>(i))->control->kill();
}

void sim_cluster::kill_ps(int i) {
  ps_.at(static_cast<std::size_t>(i))->control->kill();
}

link_relay& sim_cluster::relay_of(sim_node n) const {
  auto& list = n.role == node_role::ps ? ps_ : workers_;
  if (n.role == node_role::coordinator || n.index < 0 ||
      static_cast<std::size_t>(n.index) >= list.size())
    throw std::out_of_range("sim_cluster: no " + to_string(n.role) + " node " +
                            std::to_string(n.index) + " (link faults name a ps or worker node)");
  auto& relay = list[static_cast<std::size_t>(n.index)]->relay;
  if (!relay)
    throw std::logic_error("sim_cluster: link faults need sim_cluster_config::relay_links");
  return *relay;
}

void sim_cluster::delay_links(sim_node n, std::chrono::microseconds d) {
  relay_of(n).set_delay(d);
}

void sim_cluster::cut_links(sim_node n) {
  relay_of(n).cut();
}

void sim_cluster::silence_links(sim_node n) {
  relay_of(n).silence();
}

link_counts sim_cluster::link_traffic(sim_node n) const {
  return relay_of(n).counts();
}

engine_result sim_cluster::wait(std::chrono::milliseconds bound) {
  return get_bounded(result_, bound, "the simulated job");
}

sparse_result sim_cluster::wait_sparse(std::chrono::milliseconds bound) {
  return get_bounded(sparse_result_, bound, "the simulated sparse job");
}

node_outcome sim_cluster::worker_outcome(int i, std::chrono::milliseconds bound) {
  return get_bounded(workers_.at(static_cast<std::size_t>(i))->outcome, bound,
                     "simulated worker node " + std::to_string(i));
}

node_outcome sim_cluster::ps_outcome(int i, std::chrono::milliseconds bound) {
  return get_bounded(ps_.at(static_cast<std::size_t>(i))->outcome, bound,
                     "simulated ps node " + std::to_string(i));
}

std::vector<std::string> sim_cluster::events() const {
  std::lock_guard<std::mutex> guard{events_mtx_};
  return events_;
}

sim_cluster::~sim_cluster() {
  // Stop the coordinator first: its registrar tells every joined actor to stop, so the other
  // nodes end on their own; then kill whatever is left (nodes still registering).
  coordinator_control_->kill();
  if (coordinator_thread_.joinable()) coordinator_thread_.join();
  for (auto* list : {&ps_, &workers_})
    for (auto& n : *list) n->control->kill();
  for (auto* list : {&ps_, &workers_})
    for (auto& n : *list)
      if (n->thread.joinable()) n->thread.join();
}

}  // namespace actrain
