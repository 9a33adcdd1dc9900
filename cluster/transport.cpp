// Every connection of a node through one middleman actor, plain or TLS (cluster/transport.hpp).
#include "cluster/transport.hpp"

#include <algorithm>
#include <thread>

#include <caf/openssl/manager.hpp>

namespace actrain::net {

namespace {

caf::io::middleman_actor middleman_of(caf::actor_system& sys) {
  return sys.has_openssl_manager() ? sys.openssl_manager().actor_handle()
                                   : sys.middleman().actor_handle();
}

/// Publishing and opening bind a socket at once; this only bounds a wedged multiplexer.
constexpr auto local_timeout = std::chrono::seconds(30);

}  // namespace

bool uses_tls(caf::actor_system& sys) {
  return sys.has_openssl_manager();
}

caf::expected<std::uint16_t> publish(caf::actor_system& sys, const caf::strong_actor_ptr& whom,
                                     std::set<std::string> sigs, std::uint16_t port,
                                     const std::string& bind) {
  if (!whom) return caf::make_error(caf::sec::cannot_publish_invalid_actor);
  caf::scoped_actor self{sys};
  caf::expected<std::uint16_t> out{caf::make_error(caf::sec::request_timeout)};
  self->request(middleman_of(sys), local_timeout, caf::publish_atom::value, port, whom,
                std::move(sigs), bind, true)
      .receive([&](std::uint16_t p) { out = p; }, [&](caf::error& e) { out = std::move(e); });
  return out;
}

void unpublish(caf::actor_system& sys, const caf::actor_addr& whom, std::uint16_t port) {
  caf::scoped_actor self{sys};
  self->request(middleman_of(sys), local_timeout, caf::unpublish_atom::value, whom, port)
      .receive([] {}, [](caf::error&) {});
}

caf::expected<std::uint16_t> open(caf::actor_system& sys, std::uint16_t port,
                                  const std::string& bind) {
  caf::scoped_actor self{sys};
  caf::expected<std::uint16_t> out{caf::make_error(caf::sec::request_timeout)};
  self->request(middleman_of(sys), local_timeout, caf::open_atom::value, port, bind, true)
      .receive([&](std::uint16_t p) { out = p; }, [&](caf::error& e) { out = std::move(e); });
  return out;
}

void close(caf::actor_system& sys, std::uint16_t port) {
  caf::scoped_actor self{sys};
  self->request(middleman_of(sys), local_timeout, caf::close_atom::value, port)
      .receive([] {}, [](caf::error&) {});
}

namespace {

/// What a failed handshake most likely means, from where this node stands. CAF does not say why
/// a TLS handshake failed (OpenSSL's reason is only logged), so the message names the causes a
/// TLS connection to a node that accepted TCP can have.
std::string handshake_hint(bool tls) {
  if (tls)
    return "the TLS handshake failed: that node does not use TLS, or one side's certificate is "
           "not signed by the CA the other trusts ([cluster] tls-certificate, tls-ca)";
  return "that node probably requires TLS, and a node configured for TLS refuses plaintext "
         "peers: give this node [cluster] tls-certificate, tls-key and tls-ca too";
}

}  // namespace

namespace {

/// One attempt, bounded by `timeout`.
connection connect_once(caf::actor_system& sys, const std::string& host, std::uint16_t port,
                        std::chrono::milliseconds timeout, const std::set<std::string>& expect) {
  connection out;
  const auto where = host + ":" + std::to_string(port);
  const bool tls = uses_tls(sys);
  caf::scoped_actor self{sys};
  caf::error err;
  self->request(middleman_of(sys), timeout, caf::connect_atom::value, host, port)
      .receive(
          [&](caf::node_id& nid, caf::strong_actor_ptr& published, std::set<std::string>& ifs) {
            out.node = std::move(nid);
            out.published = std::move(published);
            if (!expect.empty() && out.published && !sys.assignable(ifs, expect)) {
              out.failure = connect_failure::other;
              out.message = "the actor published at " + where + " is not the one expected";
            }
          },
          [&](caf::error& e) { err = std::move(e); });
  if (!err) return out;
  if (err == caf::sec::cannot_connect_to_node) {
    out.failure = connect_failure::unreachable;
    out.message = "nothing accepts connections at " + where + " (" + sys.render(err) + ")";
  } else if (err == caf::sec::connection_timeout) {
    out.failure = connect_failure::dropped;
    out.message = where + " completed no handshake before this node's connection timeout";
  } else if (err == caf::sec::request_timeout) {
    out.failure = connect_failure::refused;
    out.message = where + " accepted the connection but completed no handshake within " +
                  std::to_string(timeout.count()) + " ms: " + handshake_hint(tls);
  } else if (err == caf::sec::disconnect_during_handshake) {
    out.failure = connect_failure::refused;
    out.message = where + " closed the connection during the handshake: " + handshake_hint(tls);
  } else {
    out.failure = connect_failure::other;
    out.message = "cannot connect to " + where + ": " + sys.render(err);
  }
  return out;
}

}  // namespace

// CAF 0.17.6's BASP broker creates a dialled connection's context with last_seen at the clock's
// epoch (basp_broker.cpp, connect_atom: `ctx[hdl]` default-constructs it) and its heartbeat tick
// drops every context silent for connection-timeout: the next tick, at most one heartbeat
// interval later, drops the attempt unless the peer's handshake arrived first. Plaintext
// handshakes arrive within a millisecond and almost always win; a TLS handshake takes several
// (more when nodes join at once: 3 of 4 nodes joining a TLS cluster together were dropped), so
// such a drop (sec::connection_timeout) is retried with a fresh connection.
connection connect(caf::actor_system& sys, const std::string& host, std::uint16_t port,
                   std::chrono::steady_clock::time_point deadline, bool wait_for_listener,
                   const std::set<std::string>& expect) {
  using namespace std::chrono;
  for (;;) {
    auto left = duration_cast<milliseconds>(deadline - steady_clock::now());
    auto c = connect_once(sys, host, port,
                          std::clamp(left, milliseconds(1000), milliseconds(10000)), expect);
    bool again = c.failure == connect_failure::dropped ||
                 (c.failure == connect_failure::unreachable && wait_for_listener);
    if (!again || steady_clock::now() >= deadline) return c;
    if (c.failure == connect_failure::unreachable) std::this_thread::sleep_for(milliseconds(50));
  }
}

}  // namespace actrain::net
