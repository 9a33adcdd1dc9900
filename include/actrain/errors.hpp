#pragma once
#include <cstdint>
#include <string>

#include <caf/all.hpp>

namespace actrain {

/// actrain's error codes, carried as CAF errors in category "actrain".
enum class errc : std::uint8_t {
  none = 0,
  bad_length,        ///< a tensor whose length does not match what the receiver owns
  non_finite,        ///< NaN or infinity in a gradient or weights
  bad_token,         ///< a node registered with the wrong cluster token
  version_mismatch,  ///< protocol version or byte order differs between nodes
  bad_config,        ///< a job or node configuration is invalid
  stopped,           ///< the job was stopped
  timeout,           ///< a request outlived its deadline
  node_down,         ///< the peer node went down with requests outstanding
  no_worker,         ///< every worker is gone
  bad_message,       ///< a message that does not hold together (a chunk's index, offset, shape;
                     ///< a transfer id 0; a slice sent twice): a misbehaving peer
  compute_failed,    ///< a worker's model or device threw (the exception's text is the context)
  io_failed,         ///< a checkpoint or model file could not be written or read
  job_failed,        ///< the exit reason of a failed job's actors: the context says why
  job_stopped,       ///< the exit reason of a stopped job's actors (a signal; resumable): why
};

std::string to_string(errc x);

inline caf::atom_value errc_category() {
  return caf::atom("actrain");
}

/// An actrain error with a context string (the message shown to users).
inline caf::error make_error(errc x, std::string context) {
  return caf::error{static_cast<std::uint8_t>(x), errc_category(),
                    caf::make_message(std::move(context))};
}

/// "actrain.bad_length: shard 1 expects 512 values, got 511" for any CAF error.
std::string describe_error(const caf::error& err);

}  // namespace actrain
