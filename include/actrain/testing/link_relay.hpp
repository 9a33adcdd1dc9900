#pragma once
// A loopback TCP relay for link faults in tests: it listens on 127.0.0.1 (port 0) and forwards
// every connection it accepts to one target (host, port), byte for byte in both directions. The
// owner can then delay every forwarded chunk, cut the link (close both sides, refuse new
// connections) or silence it (swallow every byte, keep the sockets open: only heartbeats notice).
// It knows nothing about the protocol it carries; CAF-free. Owns one thread (Boost.Asio).
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace actrain {

/// What a relay has carried so far (every connection, both directions).
struct link_counts {
  std::uint64_t to_target = 0;    ///< bytes forwarded from the connecting side to the target
  std::uint64_t from_target = 0;  ///< bytes forwarded from the target back
  std::uint64_t dropped = 0;      ///< bytes swallowed while silenced
  int connections = 0;            ///< connections accepted and joined to the target
};

/// How a relay forwards right now.
enum class link_state { open, cut, silent };

/// Thread-safe: every call may come from any thread. The destructor closes every socket and
/// joins the relay's thread.
class link_relay {
 public:
  /// Starts listening on 127.0.0.1 with a free port; throws std::runtime_error if it cannot.
  link_relay(std::string target_host, std::uint16_t target_port);
  ~link_relay();
  link_relay(const link_relay&) = delete;
  link_relay& operator=(const link_relay&) = delete;

  /// Where to connect instead of the target.
  std::uint16_t port() const;

  /// Every chunk read from now on is written `d` later (in order; reading goes on meanwhile, so
  /// this adds latency, not a bandwidth cap). 0 forwards at once. Chunks already queued keep
  /// their time.
  void set_delay(std::chrono::microseconds d);
  /// Closes every connection (both sides see the close at once) and the listener: new
  /// connections are refused. Final. Returns once done (bounded: 5 s).
  void cut();
  /// Stops forwarding: bytes read are dropped, sockets stay open and new connections are
  /// refused, like a pulled cable; the peers only notice through heartbeats. Final.
  void silence();

  link_state state() const;
  link_counts counts() const;
  /// Waits until `done(counts())` holds or `bound` passed (the relay's thread counts a chunk once
  /// its write completed, which may be just after the reader got it); returns the counts then.
  link_counts wait_for_counts(const std::function<bool(const link_counts&)>& done,
                              std::chrono::milliseconds bound) const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;  ///< outlives the relay's thread (joined in the destructor)
};

}  // namespace actrain
