#pragma once
#include <map>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include <actrain/job.hpp>

namespace actrain {

/// The actor system config of the `actrain` command: CAF's own options plus the job's, in the
/// groups [job], [model], [optim], [staleness], [checkpoint], [data] of an INI file (CAF's format),
/// each overridable on the command line as --group.key=value.
class app_config : public caf::actor_system_config {
 public:
  app_config();
  const caf::config_option_set& options() const { return custom_options_; }
  /// Keys of [model] and [optim] that no option declares (`[model] width=32`, or
  /// `--model.width=32`), as text: options of a registered model or optimizer kind, which checks
  /// them itself (a built-in kind refuses any).
  std::map<std::string, std::string> model_options, optim_options;
};

/// Parses `args` (already without the subcommand) into cfg: `--config FILE` (or
/// --config-file=FILE) names the INI file. Unknown keys, wrongly typed values and unknown
/// command-line options are errors naming the key and the file (CAF alone would ignore them), as
/// are a missing --config, a directory and a file without settings. --help, --long-help and
/// --dump-config print and succeed with cfg.cli_helptext_printed set: the caller then stops.
/// Returns an empty string on success, else the message to show.
std::string load_app_config(app_config& cfg, std::vector<std::string> args);
/// load_app_config with the job file's contents `ini` given as text, named `name` in messages
/// (REQUIRES: not empty), and `args` the other arguments (no --config): the same checks and
/// messages, without a file (tests and the fuzz target of fuzz/).
std::string load_app_config_text(app_config& cfg, const std::string& name, const std::string& ini,
                                 std::vector<std::string> args = {});

/// Removes `NAME X` / `NAME=X` from args and returns X ("" when absent).
std::string take_option(std::vector<std::string>& args, const std::string& name);
/// take_option(args, "--http"): "" when absent (the endpoint is off).
std::string take_http_option(std::vector<std::string>& args);

/// The value of `key` ("group.name") in a parsed config, or `def` when absent. config_i32 throws
/// std::invalid_argument naming the key for a value outside int32.
std::int64_t config_i64(const app_config& cfg, const char* key, std::int64_t def);
int config_i32(const app_config& cfg, const char* key, int def);
double config_f64(const app_config& cfg, const char* key, double def);
std::string config_str(const app_config& cfg, const char* key, const std::string& def);

/// The job described by a parsed config; throws std::invalid_argument naming a bad field.
job_spec job_from_config(const app_config& cfg);

}  // namespace actrain
