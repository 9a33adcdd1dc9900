#include <actrain/protocol.hpp>

#include <stdexcept>

#include <actrain/data.hpp>

namespace actrain {

shard_range_t param_range(std::int64_t num_params, int shards, int index) {
  if (shards < 1 || index < 0 || index >= shards || num_params < shards)
    throw std::invalid_argument("param_range: need 0 <= index < shards <= num_params");
  // The same partition as a data set's rows (include/actrain/data.hpp): one function for both.
  auto r = shard_range(num_params, shards, index);
  return {r.first, r.second};
}

std::string to_string(errc x) {
  switch (x) {
    case errc::none:
      return "none";
    case errc::bad_length:
      return "bad_length";
    case errc::non_finite:
      return "non_finite";
    case errc::bad_token:
      return "bad_token";
    case errc::version_mismatch:
      return "version_mismatch";
    case errc::bad_config:
      return "bad_config";
    case errc::stopped:
      return "stopped";
    case errc::timeout:
      return "timeout";
    case errc::node_down:
      return "node_down";
    case errc::no_worker:
      return "no_worker";
    case errc::bad_message:
      return "bad_message";
    case errc::compute_failed:
      return "compute_failed";
    case errc::io_failed:
      return "io_failed";
    case errc::job_failed:
      return "job_failed";
    case errc::job_stopped:
      return "job_stopped";
  }
  return "unknown";
}

std::string describe_error(const caf::error& err) {
  if (!err) return "no error";
  std::string out;
  if (err.category() == errc_category()) {
    out = "actrain." + to_string(static_cast<errc>(err.code()));
  } else {
    out = caf::to_string(err.category()) + "." + std::to_string(err.code());
    if (err.category() == caf::atom("system"))
      out = "caf." + caf::to_string(static_cast<caf::sec>(err.code()));
    else if (err.category() == caf::atom("exit"))  // an actor's exit reason: "exit.kill"
      out = "exit." + caf::to_string(static_cast<caf::exit_reason>(err.code()));
  }
  if (!err.context().empty()) {
    auto& ctx = err.context();
    if (ctx.match_elements<std::string>())
      out += ": " + ctx.get_as<std::string>(0);
    else
      out += ": " + caf::to_string(ctx);
  }
  return out;
}

}  // namespace actrain
