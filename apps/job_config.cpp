#include "apps/job_config.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
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
      .add<str>("async-pull",
                "async: auto | prefetch | with-push (next weights answer the push) | in-turn "
                "(pull holding a compute slot; one process)")
      .add<int64_t>("compute-slots", "async-pull in-turn: workers computing at once (0: cores + 1)")
      .add<int64_t>("turn-steps", "async-pull in-turn: steps a worker computes per turn")
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
      .add<bool>("local-aggregation", "workers of one process push one combined slice per shard")
      .add<str>("compression", "gradients on the wire: none | fp16 | topk (error feedback)")
      .add<double>("topk-fraction", "topk: fraction of a step's entries (sparse: rows) sent");
  opt_group{custom_options_, "model"}
      .add<str>("kind", "linear | softmax | mlp | a registered kind (further keys: its options)")
      .add<std::vector<int64_t>>("hidden", "mlp hidden layer sizes, e.g. [256]")
      .add<int64_t>("input-dim", "input features (0 = from the data)")
      .add<int64_t>("output-dim", "classes (0 = from the data)")
      .add<int64_t>("factors", "fm: factors per id");
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
      .add<double>("min-lr", "cosine schedule: final learning rate")
      .add<double>("l1", "ftrl: L1 strength")
      .add<double>("l2", "ftrl: L2 strength")
      .add<double>("beta", "ftrl: beta of the per-coordinate rate")
      .add<double>("initial-accumulator", "sparse adagrad: starting accumulator");
  opt_group{custom_options_, "table"}
      .add<int64_t>("rows", "sparse models: ids in the embedding table (0 = from the data)")
      .add<str>("partition", "hash | range: how ids map to shards")
      .add<double>("init-scale", "new rows uniform in [-s, s) (0 = zeros)")
      .add<int64_t>("max-rows",
                    "rows one shard holds at most, least recently used evicted (0 = all)");
  opt_group{custom_options_, "staleness"}
      .add<str>("policy", "damped (default) | none | sqrt | inverse | drop")
      .add<int64_t>("max", "drop: staleness bound; inverse, damped: 0 = unbounded")
      .add<int64_t>("tolerance", "damped: staleness that still takes the full step (2)")
      .add<str>("momentum",
                "corrected (default: lower momentum by what asynchrony adds) | explicit")
      .add<double>("delay-compensation", "DC-ASGD-a strength (0 = off)")
      .add<int64_t>("history", "weight versions a shard keeps for delay compensation")
      .add<int64_t>("buffer", "async: pushes a shard sums into one update (0 = workers)")
      .add<int64_t>("average",
                    "updates the evaluated weight average spans (-1 = auto: 100 unless sync, "
                    "0 = off)");
  opt_group{custom_options_, "checkpoint"}
      .add<str>("dir", "checkpoint folder (\"\" = no checkpoints)")
      .add<int64_t>("every-steps",
                    "checkpoint every N steps (sync: global steps; async/ssp: all updates)")
      .add<double>("every-seconds", "checkpoint after this many seconds of training")
      .add<int64_t>("keep", "newest checkpoints kept in the folder")
      .add<bool>("at-end", "one more after the final evaluation (default true)")
      .add<str>("model", "write the trained model to this file at the end");
  opt_group{custom_options_, "data"}
      .add<str>("kind", "fashion_mnist | synthetic_linear | csv | libsvm | synthetic_ctr")
      .add<str>("path", "data directory or file (\"\" = Debian's Fashion-MNIST)")
      .add<str>("test-path", "csv: test file")
      .add<str>("label", "csv: label column name")
      .add<bool>("header", "csv: the first line names the columns (default true)")
      .add<str>("delimiter", "csv: field separator, one character or \"tab\" (default \",\")")
      .add<double>("test-fraction", "csv without test-path: last fraction held out (0.1)")
      .add<bool>("standardize", "csv: standardize features and a regression target")
      .add<int64_t>("rows", "synthetic: training rows")
      .add<int64_t>("test-rows", "synthetic: test rows")
      .add<int64_t>("features", "synthetic: features")
      .add<double>("noise", "synthetic: noise standard deviation")
      .add<int64_t>("hash-buckets", "libsvm: ids taken modulo this (0 = as written)")
      .add<int64_t>("fields", "synthetic_ctr: categorical fields per row")
      .add<int64_t>("ids-per-field", "synthetic_ctr: values per field")
      .add<double>("zipf", "synthetic_ctr: power-law exponent of value frequencies")
      .add<double>("weight-sd", "synthetic_ctr: standard deviation of the true weights")
      .add<double>("bias", "synthetic_ctr: the true model's bias")
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
      .add<int64_t>("max-workers",
                    "coordinator: workers in all, joined ones included (0 = twice job.workers)")
      .add<int64_t>("replicas", "1: every shard has a hot replica on the next ps node (0 = none)")
      .add<str>("name", "this node's name in messages")
      .add<str>("port-file", "coordinator: write the bound port to this file")
      .add<int64_t>("heartbeat", "milliseconds between heartbeats on every connection")
      .add<int64_t>("connection-timeout", "milliseconds of silence before a peer is down")
      .add<int64_t>("node-timeout",
                    "milliseconds without actrain heartbeats before a node is lost (0 = off)")
      .add<int64_t>("join-timeout", "milliseconds to connect and to wait for all nodes")
      .add<int64_t>("rejoin-timeout",
                    "ps/worker node: milliseconds to wait for a coordinator that went away "
                    "mid-job to come back (0 = exit)")
      .add<double>("worker-delay", "worker node: extra seconds per step (fault injection)")
      .add<int64_t>("chunk-bytes", "slices above this many bytes cross nodes in chunks (0 = off)")
      .add<int64_t>("chunk-window", "chunks in flight per transfer")
      .add<bool>("direct-connections", "workers connect to every ps node directly (default true)")
      .add<str>("listen-host",
                "ps node: address of its port for workers (\"\" = host if "
                "loopback, else all)")
      .add<int64_t>("listen-port", "ps node: port for workers (0 = any free port)")
      .add<bool>("bulk-channel",
                 "pulls and pushes between workers and ps nodes on a TCP connection of their "
                 "own, beside BASP (default true)")
      .add<int64_t>("bulk-port", "ps node: the bulk channel's port (0 = any free port)")
      .add<str>("advertise-host",
                "ps node: address workers dial (\"\" = as the coordinator sees it)")
      .add<str>("tls-certificate", "this node's PEM certificate (TLS between nodes when set)")
      .add<str>("tls-key", "this node's unencrypted PEM private key")
      .add<str>("tls-ca", "PEM CA certificate every node's certificate must be signed by");
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

/// A job file is small; a larger one is not read at all.
constexpr std::uintmax_t max_config_bytes = 1 << 20;

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return {};
  auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

/// The file as CAF's INI parser reads it, or why it cannot be: a UTF-8 byte order mark and CRLF
/// line ends are dropped and `#` comment lines become `;` ones (editors write all three, and
/// CAF's parser stops at them with a bare position); a key given twice in one group, or a group
/// opened twice, is an error naming both lines (CAF would keep one of them silently).
std::string normalized_ini(std::string raw, std::string& text) {
  if (raw.rfind("\xEF\xBB\xBF", 0) == 0) raw.erase(0, 3);
  std::istringstream lines(raw);
  std::map<std::string, int> group_line;  // group -> line it opened on
  std::map<std::string, int> key_line;    // group.key -> line it was set on
  std::string group;
  int n = 0;
  for (std::string line; std::getline(lines, line);) {
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    auto t = trim(line);
    if (!t.empty() && t[0] == '#') line = ";" + line.substr(line.find('#') + 1);
    if (t.empty() || t[0] == '#' || t[0] == ';') {
      text += line + "\n";
      continue;
    }
    if (t[0] == '[' && t.back() == ']') {
      group = trim(t.substr(1, t.size() - 2));
      auto [it, fresh] = group_line.emplace(group, n);
      if (!fresh)
        return "line " + std::to_string(n) + ": group [" + group +
               "] appears a second time (first " + "on line " + std::to_string(it->second) +
               "); put all its keys in one group";
    } else if (auto eq = t.find('='); eq != std::string::npos) {
      auto key = group + "." + trim(t.substr(0, eq));
      auto [it, fresh] = key_line.emplace(key, n);
      if (!fresh)
        return "line " + std::to_string(n) + ": " + key + " is set a second time (first on line " +
               std::to_string(it->second) + ")";
    }
    text += line + "\n";
  }
  return {};
}

/// CAF's parser error for `text`, with the line it stopped at and a hint for the usual cause.
std::string parse_error_text(app_config& cfg, const caf::error& err, const std::string& text) {
  auto msg = cfg.render(err);
  // CAF renders it as parser_error(unexpected_character, ({"column" = 8, "line" = 3})).
  auto number_after = [&msg](const std::string& key) {
    auto at = msg.find(key);
    return at == std::string::npos ? 0 : std::atoi(msg.c_str() + at + key.size());
  };
  int line_no = number_after("\"line\" = ");
  int column = number_after("\"column\" = ");
  if (line_no <= 0) return msg;
  std::istringstream lines(text);
  std::string line;
  for (int i = 0; i < line_no && std::getline(lines, line); ++i) {
  }
  if (line.empty()) return msg;
  auto open = msg.find('('), comma = msg.find(',');
  auto what = open != std::string::npos && comma != std::string::npos && comma > open
                  ? msg.substr(open + 1, comma - open - 1)
                  : msg;
  std::replace(what.begin(), what.end(), '_', ' ');
  msg = "line " + std::to_string(line_no) + ", column " + std::to_string(column) + ": " + what +
        " in `" + trim(line) + "`";
  auto eq = line.find('=');
  if (eq != std::string::npos) {
    auto v = trim(line.substr(eq + 1));
    bool word = !v.empty() && (std::isalpha(static_cast<unsigned char>(v[0])) || v[0] == '/') &&
                v != "true" && v != "false";
    if (word) msg += " (a string value is quoted: " + trim(line.substr(0, eq)) + "=\"" + v + "\")";
  }
  return msg;
}

std::string too_large(const std::string& file, std::uintmax_t size) {
  return "config " + file + ": " + std::to_string(size) + " bytes; a job file is at most " +
         std::to_string(max_config_bytes) + " bytes";
}

/// The checks of a job file's contents `raw` (named `file` in messages); `text` receives it as
/// CAF's parser reads it.
std::string check_text(app_config& cfg, const std::string& file, std::string raw,
                       std::string& text) {
  if (auto why = normalized_ini(std::move(raw), text); !why.empty())
    return "config " + file + ": " + why;
  std::istringstream source(text);
  auto parsed = caf::actor_system_config::parse_config(source);
  if (!parsed) return "config " + file + ": " + parse_error_text(cfg, parsed.error(), text);
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

std::string check_file(app_config& cfg, const std::string& file, std::string& text) {
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec))
    return "config " + file + ": is a directory, not a job file";
  std::ifstream in(file, std::ios::binary);
  if (!in) return "config " + file + ": cannot open the file";
  auto size = std::filesystem::file_size(file, ec);
  if (!ec && size > max_config_bytes) return too_large(file, size);
  std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return check_text(cfg, file, std::move(raw), text);
}

/// A command-line option CAF refused, said with the option's key and what it takes.
std::string bad_option_text(app_config& cfg, const caf::error& err) {
  auto msg = cfg.render(err);
  auto key = std::string("\"argument\" = \"");
  auto at = msg.find(key);
  if (at == std::string::npos) return "bad option: " + msg;
  auto end = msg.find('"', at + key.size());
  auto arg = msg.substr(at + key.size(),
                        end == std::string::npos ? std::string::npos : end - at - key.size());
  auto name = arg.rfind("--", 0) == 0 ? arg.substr(2) : arg;
  auto eq = name.find('=');
  auto value = eq == std::string::npos ? std::string{} : name.substr(eq + 1);
  name = name.substr(0, eq);
  auto dot = name.find('.');
  const caf::config_option* opt =
      dot == std::string::npos
          ? nullptr
          : cfg.options().qualified_name_lookup(name.substr(0, dot), name.substr(dot + 1));
  if (!opt) return "unknown option " + arg + " (no such key; --long-help lists them)";
  auto type = std::string(opt->type_name().begin(), opt->type_name().end());
  return "bad option " + arg + ": " + name + " takes a value of type " + type + ", not '" + value +
         "'";
}

/// What load_app_config does once the job file `file` (if any) is checked: `text` is the file as
/// CAF's parser reads it, `rest` the other arguments.
std::string apply_options(app_config& cfg, const std::string& file, const std::string& text,
                          std::vector<std::string> rest) {
  // Arguments `--group.key=value` that CAF's parser cannot take: undeclared keys of [model] and
  // [optim] (options of registered kinds; they override the file's), and `=true` / `=false` for
  // a boolean (CAF 0.17 takes it as a bare flag only: `--data.header=false` is refused), set
  // after parsing instead.
  std::vector<std::string> declared;
  std::vector<std::pair<std::string, bool>> booleans;
  for (auto& a : rest) {
    auto dot = a.find('.'), eq = a.find('=');
    if (a.rfind("--", 0) != 0 || dot == std::string::npos || eq == std::string::npos || eq < dot) {
      declared.push_back(a);
      continue;
    }
    auto group = a.substr(2, dot - 2), key = a.substr(dot + 1, eq - dot - 1);
    auto value = a.substr(eq + 1);
    auto* opt = cfg.options().qualified_name_lookup(group, key);
    auto* free = free_options(cfg, group);
    if (free && !opt)
      (*free)[key] = value;
    else if (opt && opt->is_flag() && (value == "true" || value == "false"))
      booleans.emplace_back(group + "." + key, value == "true");
    else
      declared.push_back(a);
  }
  rest = std::move(declared);
  caf::error err;
  if (file.empty()) {
    std::istringstream empty;
    err = cfg.parse(rest, empty);
  } else {
    std::istringstream source(text);
    err = cfg.parse(rest, source);
  }
  if (err) return bad_option_text(cfg, err);
  for (auto& [key, value] : booleans) cfg.set(key, value);
  if (!cfg.remainder.empty())
    return "unknown command-line argument '" + cfg.remainder.front() + "'";
  if (cfg.cli_helptext_printed) return {};  // --help, --long-help, --dump-config: the caller stops
  if (file.empty())
    return "no job file: give --config FILE (the built-in defaults are no job; examples in "
           "config/)";
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
  std::string text;  // the file as CAF reads it (normalized_ini)
  if (!file.empty()) {
    if (auto msg = check_file(cfg, file, text); !msg.empty()) return msg;
  }
  return apply_options(cfg, file, text, std::move(rest));
}

std::string load_app_config_text(app_config& cfg, const std::string& name, const std::string& ini,
                                 std::vector<std::string> args) {
  if (ini.size() > max_config_bytes) return too_large(name, ini.size());
  std::string text;
  if (auto msg = check_text(cfg, name, ini, text); !msg.empty()) return msg;
  return apply_options(cfg, name, text, std::move(args));
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

namespace {
// caf::string_view converts from a const char* only where CAF's headers see gcc; clang (the fuzz
// build) needs the length given.
caf::string_view key_view(const char* key) {
  return caf::string_view{key, std::strlen(key)};
}
}  // namespace

std::int64_t config_i64(const app_config& cfg, const char* key, std::int64_t def) {
  return caf::get_or(caf::content(cfg), key_view(key), def);
}
int config_i32(const app_config& cfg, const char* key, int def) {
  auto v = config_i64(cfg, key, def);
  if (v < INT32_MIN || v > INT32_MAX)
    throw std::invalid_argument(std::string(key) + " is out of range: " + std::to_string(v));
  return static_cast<int>(v);
}
double config_f64(const app_config& cfg, const char* key, double def) {
  return caf::get_or(caf::content(cfg), key_view(key), def);
}
std::string config_str(const app_config& cfg, const char* key, const std::string& def) {
  return caf::get_or(caf::content(cfg), key_view(key), def);
}

job_spec job_from_config(const app_config& cfg) {
  using caf::get_or;
  job_spec j;
  auto& c = caf::content(cfg);
  auto i64 = [&](const char* key, std::int64_t def) { return config_i64(cfg, key, def); };
  auto i32 = [&](const char* key, int def) { return config_i32(cfg, key, def); };
  auto f64 = [&](const char* key, double def) { return config_f64(cfg, key, def); };
  auto str = [&](const char* key, const std::string& def) { return config_str(cfg, key, def); };
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
  j.compression = str("job.compression", j.compression);
  j.topk_fraction = f64("job.topk-fraction", j.topk_fraction);
  j.seed = static_cast<std::uint64_t>(i64("job.seed", static_cast<std::int64_t>(j.seed)));
  j.device = str("job.device", j.device);
  j.metrics_path = str("job.metrics", j.metrics_path);
  j.backup = i32("job.backup", j.backup);
  j.ssp_bound = i32("job.ssp-bound", j.ssp_bound);
  j.late_policy = str("job.late-policy", j.late_policy);
  j.async_pull = str("job.async-pull", j.async_pull);
  j.compute_slots = i32("job.compute-slots", j.compute_slots);
  j.turn_steps = i32("job.turn-steps", j.turn_steps);
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
  j.staleness.tolerance = i64("staleness.tolerance", j.staleness.tolerance);
  j.staleness.momentum = str("staleness.momentum", j.staleness.momentum);
  j.staleness.delay_compensation =
      static_cast<float>(f64("staleness.delay-compensation", j.staleness.delay_compensation));
  j.staleness.history = i64("staleness.history", j.staleness.history);
  j.staleness.buffer = i32("staleness.buffer", j.staleness.buffer);
  j.staleness.average = i64("staleness.average", j.staleness.average);
  j.checkpoint.dir = str("checkpoint.dir", j.checkpoint.dir);
  j.checkpoint.every_steps = i64("checkpoint.every-steps", j.checkpoint.every_steps);
  j.checkpoint.every_seconds = f64("checkpoint.every-seconds", j.checkpoint.every_seconds);
  j.checkpoint.keep = i32("checkpoint.keep", j.checkpoint.keep);
  j.checkpoint.at_end = get_or(c, "checkpoint.at-end", j.checkpoint.at_end);
  j.data.kind = str("data.kind", j.data.kind);
  j.data.path = str("data.path", j.data.path);
  j.data.test_path = str("data.test-path", j.data.test_path);
  j.data.label = str("data.label", j.data.label);
  j.data.header = caf::get_or(c, "data.header", j.data.header);
  j.data.delimiter = str("data.delimiter", j.data.delimiter);
  j.data.test_fraction = f64("data.test-fraction", j.data.test_fraction);
  j.data.standardize = caf::get_or(c, "data.standardize", j.data.standardize);
  j.data.rows = i64("data.rows", j.data.rows);
  j.data.test_rows = i64("data.test-rows", j.data.test_rows);
  j.data.features = i32("data.features", j.data.features);
  j.data.noise = static_cast<float>(f64("data.noise", j.data.noise));
  j.data.train_subset = i64("data.train-subset", j.data.train_subset);
  j.data.test_subset = i64("data.test-subset", j.data.test_subset);
  return j;
}

}  // namespace actrain
