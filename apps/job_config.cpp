#include "apps/job_config.hpp"

#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace actrain {

app_config::app_config() {
  using str = std::string;
  opt_group{custom_options_, "job"}
      .add<str>("name", "job name (used in metrics and reports)")
      .add<str>("mode", "async | sync | ssp")
      .add<int64_t>("workers", "worker count")
      .add<int64_t>("shards", "parameter shard count")
      .add<int64_t>("batch", "mini-batch rows per worker step")
      .add<int64_t>("epochs", "passes over the training set")
      .add<double>("target-accuracy", "stop once test accuracy reaches this (0 = off)")
      .add<double>("eval-every", "evaluate every this many epochs")
      .add<int64_t>("window", "max pushes in flight per shard per worker")
      .add<double>("clip-norm", "worker-side gradient norm clipping (0 = off)")
      .add<int64_t>("seed", "random seed")
      .add<str>("device", "cpu | cuda:N | auto")
      .add<str>("metrics", "metrics file (.csv or .jsonl)")
      .add<double>("stall-after",
                   "name a worker or barrier step as stalled after this many seconds")
      .add<int64_t>("backup", "sync: backup workers (K = workers - backup)")
      .add<int64_t>("ssp-bound", "ssp: max steps ahead of the slowest worker")
      .add<str>("late-policy", "sync with backup: drop | fold late slices")
      .add<std::vector<int64_t>>("stragglers", "ids of workers to slow down, e.g. [0]")
      .add<double>("straggler-delay", "stragglers: extra seconds per step")
      .add<double>("straggler-jitter", "stragglers: plus uniform [0, jitter) seconds per step")
      .add<double>("simulated-compute", "> 0: seconds of busy time instead of forward/backward")
      .add<bool>("local-aggregation", "workers of one process push one combined slice per shard");
  opt_group{custom_options_, "model"}
      .add<str>("kind", "linear | softmax | mlp | a registered kind (further keys: its options)")
      .add<std::vector<int64_t>>("hidden", "mlp hidden layer sizes, e.g. [256]")
      .add<int64_t>("input-dim", "input features (0 = from the data)")
      .add<int64_t>("output-dim", "classes (0 = from the data)");
  opt_group{custom_options_, "optim"}
      .add<str>("kind",
                "sgd | momentum | nesterov | adagrad | adam | a registered kind (further keys: "
                "its options)")
      .add<double>("lr", "learning rate")
      .add<double>("momentum", "momentum factor")
      .add<double>("beta1", "adam beta1")
      .add<double>("beta2", "adam beta2")
      .add<double>("eps", "adam/adagrad epsilon")
      .add<double>("weight-decay", "L2 weight decay")
      .add<str>("schedule", "constant | step | cosine")
      .add<int64_t>("step-size", "step schedule: updates between decays")
      .add<double>("gamma", "step schedule: decay factor")
      .add<int64_t>("total-steps", "cosine schedule: updates from lr to min-lr")
      .add<double>("min-lr", "cosine schedule: final learning rate");
  opt_group{custom_options_, "staleness"}
      .add<str>("policy", "none (default) | sqrt | inverse | drop")
      .add<int64_t>("max", "drop: staleness bound; inverse: 0 = unbounded")
      .add<str>("momentum",
                "corrected (default: lower momentum by what asynchrony adds) | explicit")
      .add<double>("delay-compensation", "DC-ASGD-a strength (0 = off)")
      .add<int64_t>("history", "weight versions a shard keeps for delay compensation");
  opt_group{custom_options_, "checkpoint"}
      .add<str>("dir", "checkpoint folder (\"\" = no checkpoints)")
      .add<int64_t>("every-steps",
                    "checkpoint every N steps (sync: global steps; async/ssp: all updates)")
      .add<double>("every-seconds", "checkpoint after this many seconds of training")
      .add<int64_t>("keep", "newest checkpoints kept in the folder")
      .add<bool>("at-end", "one more after the final evaluation (default true)")
      .add<str>("model", "write the trained model to this file at the end");
  opt_group{custom_options_, "data"}
      .add<str>("kind", "fashion_mnist | synthetic_linear | csv")
      .add<str>("path", "data directory or file (\"\" = Debian's Fashion-MNIST)")
      .add<str>("test-path", "csv: test file")
      .add<str>("label", "csv: label column name")
      .add<int64_t>("rows", "synthetic: training rows")
      .add<int64_t>("test-rows", "synthetic: test rows")
      .add<int64_t>("features", "synthetic: features")
      .add<double>("noise", "synthetic: noise standard deviation")
      .add<int64_t>("train-subset", "use the first N training rows (0 = all)")
      .add<int64_t>("test-subset", "use the first N test rows (0 = all)");
  // `actrain node`: how nodes find and trust each other (include/actrain/cluster.hpp,
  // docs/deployment.md).
  opt_group{custom_options_, "cluster"}
      .add<str>("role", "coordinator | ps | worker (or --role)")
      .add<str>("host", "coordinator host; the coordinator binds to it (0.0.0.0 = all)")
      .add<int64_t>("port", "coordinator port (0 on the coordinator: any free port)")
      .add<str>("token", "shared cluster token; nodes with another token are refused")
      .add<int64_t>("ps-nodes", "ps nodes the coordinator waits for")
      .add<str>("name", "this node's name in messages")
      .add<str>("port-file", "coordinator: write the bound port to this file")
      .add<int64_t>("heartbeat", "milliseconds between heartbeats on every connection")
      .add<int64_t>("connection-timeout", "milliseconds of silence before a peer is down")
      .add<int64_t>("join-timeout", "milliseconds to connect and to wait for all nodes")
      .add<double>("worker-delay", "worker node: extra seconds per step (fault injection)")
      .add<int64_t>("chunk-bytes", "slices above this many bytes cross nodes in chunks (0 = off)")
      .add<int64_t>("chunk-window", "chunks in flight per transfer")
      .add<bool>("direct-connections", "workers connect to every ps node directly (default true)")
      .add<str>("listen-host",
                "ps node: address of its port for workers (\"\" = host if "
                "loopback, else all)")
      .add<int64_t>("listen-port", "ps node: port for workers (0 = any free port)")
      .add<str>("advertise-host",
                "ps node: address workers dial (\"\" = as the coordinator sees it)");
}

namespace {

/// Rejects keys of `file` that no option declares, and values of the wrong type.
/// Where a key no option declares goes: the option map of [model] or [optim], else nowhere.
std::map<std::string, std::string>* free_options(app_config& cfg, const std::string& group) {
  if (group == "model") return &cfg.model_options;
  if (group == "optim") return &cfg.optim_options;
  return nullptr;
}

/// A value of the INI file as the text a model's option() reads: strings without quotes.
std::string option_text(const caf::config_value& v) {
  if (auto* s = caf::get_if<std::string>(&v)) return *s;
  return caf::to_string(v);
}

std::string check_file(app_config& cfg, const std::string& file) {
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec))
    return "config " + file + ": is a directory, not a job file";
  {
    std::ifstream probe(file);
    if (!probe) return "config " + file + ": cannot open the file";
  }
  auto parsed = caf::actor_system_config::parse_config_file(file.c_str());
  if (!parsed) return "config " + file + ": " + cfg.render(parsed.error());
  if (parsed->empty())
    return "config " + file +
           ": holds no settings (an empty file? a job file has [job], "
           "[model], [optim], [data] groups; examples in config/)";
  for (auto& [group, value] : *parsed) {
    auto* dict = caf::get_if<caf::settings>(&value);
    if (!dict) return "config " + file + ": '" + group + "' must be a [group] of keys";
    for (auto& [key, v] : *dict) {
      auto opt = cfg.options().qualified_name_lookup(group, key);
      if (!opt) {
        if (auto* free = free_options(cfg, group)) {
          (*free)[key] = option_text(v);
          continue;
        }
        return "config " + file + ": unknown key '" + group + "." + key + "'";
      }
      if (auto err = opt->check(v))
        return "config " + file + ": " + group + "." + key + " must be " +
               std::string(opt->type_name().begin(), opt->type_name().end()) + ", got " +
               caf::to_string(v);
    }
  }
  return {};
}

}  // namespace

std::string load_app_config(app_config& cfg, std::vector<std::string> args) {
  std::string file;
  std::vector<std::string> rest;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--config" && i + 1 < args.size()) {
      file = args[++i];
    } else if (args[i].rfind("--config=", 0) == 0) {
      file = args[i].substr(9);
    } else if (args[i].rfind("--config-file=", 0) == 0) {
      file = args[i].substr(14);
    } else {
      rest.push_back(args[i]);
    }
  }
  if (!file.empty()) {
    if (auto msg = check_file(cfg, file); !msg.empty()) return msg;
  }
  // --model.KEY=VALUE and --optim.KEY=VALUE for undeclared keys: options of registered kinds
  // (they override the file's).
  std::vector<std::string> declared;
  for (auto& a : rest) {
    auto dot = a.find('.'), eq = a.find('=');
    if (a.rfind("--", 0) != 0 || dot == std::string::npos || eq == std::string::npos || eq < dot) {
      declared.push_back(a);
      continue;
    }
    auto group = a.substr(2, dot - 2), key = a.substr(dot + 1, eq - dot - 1);
    auto* free = free_options(cfg, group);
    if (free && !cfg.options().qualified_name_lookup(group, key))
      (*free)[key] = a.substr(eq + 1);
    else
      declared.push_back(a);
  }
  rest = std::move(declared);
  caf::error err;
  if (file.empty()) {
    std::istringstream empty;
    err = cfg.parse(rest, empty);
  } else {
    err = cfg.parse(rest, file.c_str());
  }
  if (err) return "bad option: " + cfg.render(err);
  if (!cfg.remainder.empty())
    return "unknown command-line argument '" + cfg.remainder.front() + "'";
  if (cfg.cli_helptext_printed) return {};  // --help, --long-help, --dump-config: the caller stops
  if (file.empty())
    return "no job file: give --config FILE (the built-in defaults are no job; examples in "
           "config/)";
  return {};
}

std::string take_option(std::vector<std::string>& args, const std::string& name) {
  std::string out;
  std::vector<std::string> rest;
  auto eq = name + "=";
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == name && i + 1 < args.size())
      out = args[++i];
    else if (args[i].rfind(eq, 0) == 0)
      out = args[i].substr(eq.size());
    else
      rest.push_back(args[i]);
  }
  args = rest;
  return out;
}

std::string take_http_option(std::vector<std::string>& args) {
  return take_option(args, "--http");
}

job_spec job_from_config(const app_config& cfg) {
  using caf::get_or;
  job_spec j;
  auto& c = caf::content(cfg);
  auto i64 = [&](const char* key, std::int64_t def) { return get_or(c, key, def); };
  auto i32 = [&](const char* key, int def) {
    auto v = get_or(c, key, static_cast<std::int64_t>(def));
    if (v < INT32_MIN || v > INT32_MAX)
      throw std::invalid_argument(std::string(key) + " is out of range: " + std::to_string(v));
    return static_cast<int>(v);
  };
  auto f64 = [&](const char* key, double def) { return get_or(c, key, def); };
  auto str = [&](const char* key, const std::string& def) { return get_or(c, key, def); };
  j.name = str("job.name", j.name);
  j.mode = str("job.mode", j.mode);
  j.workers = i32("job.workers", j.workers);
  j.shards = i32("job.shards", j.shards);
  j.batch = i32("job.batch", j.batch);
  j.epochs = i32("job.epochs", j.epochs);
  j.target_accuracy = f64("job.target-accuracy", j.target_accuracy);
  j.eval_every = f64("job.eval-every", j.eval_every);
  j.window = i32("job.window", j.window);
  j.clip_norm = static_cast<float>(f64("job.clip-norm", j.clip_norm));
  j.seed = static_cast<std::uint64_t>(i64("job.seed", static_cast<std::int64_t>(j.seed)));
  j.device = str("job.device", j.device);
  j.metrics_path = str("job.metrics", j.metrics_path);
  j.backup = i32("job.backup", j.backup);
  j.ssp_bound = i32("job.ssp-bound", j.ssp_bound);
  j.late_policy = str("job.late-policy", j.late_policy);
  for (auto w : get_or(c, "job.stragglers", std::vector<std::int64_t>{}))
    j.stragglers.push_back(static_cast<int>(w));
  j.straggler_delay_s = f64("job.straggler-delay", j.straggler_delay_s);
  j.straggler_jitter_s = f64("job.straggler-jitter", j.straggler_jitter_s);
  j.simulated_compute_s = f64("job.simulated-compute", j.simulated_compute_s);
  j.local_aggregation = get_or(c, "job.local-aggregation", j.local_aggregation);
  j.model.kind = str("model.kind", "mlp");
  for (auto h : get_or(c, "model.hidden", std::vector<std::int64_t>{}))
    j.model.hidden.push_back(static_cast<int>(h));
  j.model.input_dim = i32("model.input-dim", 0);
  j.model.output_dim = i32("model.output-dim", 0);
  j.model.options = cfg.model_options;
  j.optim.options = cfg.optim_options;
  j.optim.kind = str("optim.kind", j.optim.kind);
  j.optim.lr = static_cast<float>(f64("optim.lr", j.optim.lr));
  j.optim.momentum = static_cast<float>(f64("optim.momentum", j.optim.momentum));
  j.optim.beta1 = static_cast<float>(f64("optim.beta1", j.optim.beta1));
  j.optim.beta2 = static_cast<float>(f64("optim.beta2", j.optim.beta2));
  j.optim.eps = static_cast<float>(f64("optim.eps", j.optim.eps));
  j.optim.weight_decay = static_cast<float>(f64("optim.weight-decay", j.optim.weight_decay));
  j.optim.schedule = str("optim.schedule", j.optim.schedule);
  j.optim.step_size = i64("optim.step-size", j.optim.step_size);
  j.optim.gamma = static_cast<float>(f64("optim.gamma", j.optim.gamma));
  j.optim.total_steps = i64("optim.total-steps", j.optim.total_steps);
  j.optim.min_lr = static_cast<float>(f64("optim.min-lr", j.optim.min_lr));
  j.staleness.kind = str("staleness.policy", j.staleness.kind);
  j.staleness.max_staleness = i64("staleness.max", j.staleness.max_staleness);
  j.staleness.momentum = str("staleness.momentum", j.staleness.momentum);
  j.staleness.delay_compensation =
      static_cast<float>(f64("staleness.delay-compensation", j.staleness.delay_compensation));
  j.staleness.history = i64("staleness.history", j.staleness.history);
  j.checkpoint.dir = str("checkpoint.dir", j.checkpoint.dir);
  j.checkpoint.every_steps = i64("checkpoint.every-steps", j.checkpoint.every_steps);
  j.checkpoint.every_seconds = f64("checkpoint.every-seconds", j.checkpoint.every_seconds);
  j.checkpoint.keep = i32("checkpoint.keep", j.checkpoint.keep);
  j.checkpoint.at_end = get_or(c, "checkpoint.at-end", j.checkpoint.at_end);
  j.data.kind = str("data.kind", j.data.kind);
  j.data.path = str("data.path", j.data.path);
  j.data.test_path = str("data.test-path", j.data.test_path);
  j.data.label = str("data.label", j.data.label);
  j.data.rows = i64("data.rows", j.data.rows);
  j.data.test_rows = i64("data.test-rows", j.data.test_rows);
  j.data.features = i32("data.features", j.data.features);
  j.data.noise = static_cast<float>(f64("data.noise", j.data.noise));
  j.data.train_subset = i64("data.train-subset", j.data.train_subset);
  j.data.test_subset = i64("data.test-subset", j.data.test_subset);
  return j;
}

}  // namespace actrain
