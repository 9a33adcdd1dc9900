#pragma once
// The connections of one node: every publish, connect, open and close goes through the
// middleman actor this node uses, CAF's OpenSSL one when [cluster] configures TLS and the plain
// one otherwise, so a TLS node never opens or accepts a plaintext connection (fail closed).
// Internal to actrain::cluster.
#include <chrono>
#include <cstdint>
#include <set>
#include <string>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

namespace actrain::net {

/// Whether this actor system's connections use TLS (prepare_cluster_config loaded CAF's OpenSSL
/// module because [cluster] names a certificate).
bool uses_tls(caf::actor_system& sys);

/// Publishes `whom` (its messaging interface `sigs`) at bind:port ("" = every interface);
/// returns the bound port.
caf::expected<std::uint16_t> publish(caf::actor_system& sys, const caf::strong_actor_ptr& whom,
                                     std::set<std::string> sigs, std::uint16_t port,
                                     const std::string& bind);
void unpublish(caf::actor_system& sys, const caf::actor_addr& whom, std::uint16_t port);

/// A BASP port without a published actor (a ps node's peer port); returns the bound port.
caf::expected<std::uint16_t> open(caf::actor_system& sys, std::uint16_t port,
                                  const std::string& bind);
void close(caf::actor_system& sys, std::uint16_t port);

/// Why a connection attempt failed, as the caller should act on it.
enum class connect_failure {
  none,
  unreachable,  ///< nothing listens there (yet): worth retrying
  dropped,      ///< CAF dropped the attempt before the handshake could complete: retry
  refused,      ///< something listens but the handshake failed or never came: do not retry
  other,
};

struct connection {
  caf::node_id node;
  caf::strong_actor_ptr published;  ///< the actor published at that port, if any
  connect_failure failure = connect_failure::none;
  std::string message;  ///< what failed, naming host:port and, for a handshake, the likely cause
};

/// Opens (or reuses) the BASP connection to host:port, retrying until `deadline` while nothing
/// listens there (when `wait_for_listener`: a launcher starts every node at once) and while
/// CAF drops the attempt before its handshake could complete (see transport.cpp). A handshake
/// that failed is not retried. When `expect` is not empty, the actor published there must
/// accept at least that interface.
connection connect(caf::actor_system& sys, const std::string& host, std::uint16_t port,
                   std::chrono::steady_clock::time_point deadline, bool wait_for_listener,
                   const std::set<std::string>& expect = {});

}  // namespace actrain::net
