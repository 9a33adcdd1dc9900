#pragma once
// The second process of `actrain bench wire`: a raw-TCP peer, a CAF server (plain and TLS) whose
// sink shards only move bytes, and sink shards behind a bulk-channel server; the measuring
// process (bench_wire.cpp) forks it and talks to all of them.
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include <boost/asio/ip/tcp.hpp>

#include <actrain/cluster.hpp>

namespace actrain {

/// The tensor sizes the bench moves, in MB.
inline const std::vector<std::size_t> wire_sizes_mb{1, 16, 64};

/// The completion condition raw TCP reads and writes its payloads with: the whole rest of the
/// buffer in each recv/send, as the bulk channel does. Asio's default (transfer_all) caps each
/// call at 64 KiB, so a 1 MB payload took 16 calls, each one a chance to sleep and be woken:
/// a baseline slower than TCP itself.
inline std::size_t whole_rest(const boost::system::error_code& ec, std::size_t) {
  return ec ? 0 : static_cast<std::size_t>(-1);
}

/// Raw TCP peer: op byte + 8-byte size; 'P' read size, ack 1 byte; 'L' write size; 'X' read then
/// write size; 'R' 1-byte echo; 'Q' quit.
void serve_raw(boost::asio::ip::tcp::socket sock);

/// The second process of the measurement, forked before any thread exists; its ports come back
/// through a pipe.
struct server_process {
  pid_t pid = -1;
  std::uint16_t ports[4] = {0, 0, 0, 0};  ///< raw TCP, CAF, CAF over TLS (0 = none), bulk
};

/// Forks the server process (TLS rows when `tls` is enabled); it dies with this one. Throws
/// std::runtime_error when it does not start.
server_process start_server(const tls_options& tls);

}  // namespace actrain
