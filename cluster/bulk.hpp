#pragma once
// The bulk channel: pulls and pushes between a worker node and a ps node over a TCP connection of
// their own, beside BASP. CAF 0.17 serializes every message into the middleman's buffer, zero-fills
// a receive buffer as large as the message and copies the tensor out of it again (the profile in
// docs/benchmarks.md, "Across processes"); here a tensor goes from its buffer to the socket and
// from the socket into a (recycled) buffer, nothing between. A frame is a 32-byte header, the
// message without its values (CAF's binary serializer, at most max_meta_bytes) and the values as
// raw float32 in host byte order (nodes check byte order when they register). A connection starts
// with the cluster token; a ps node takes only frames for the shards it serves, with exactly as
// many values as that shard's slice, so no peer can size an allocation. docs/protocol.md, "The
// bulk channel". Internal to actrain::cluster.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <caf/all.hpp>

#include <actrain/protocol.hpp>

namespace actrain::bulk {

constexpr std::uint32_t frame_magic = 0x31425441;  ///< "ATB1" on a little-endian host
constexpr std::uint32_t max_meta_bytes = 4096;

enum class kind : std::uint8_t {
  hello = 1,      ///< client: meta = (token, protocol version, node name)
  welcome = 2,    ///< server: the hello was accepted
  pull = 3,       ///< meta = pull_request
  push = 4,       ///< meta = gradient without values; payload = its values
  push_pull = 5,  ///< as push; answered with weights
  weights = 6,    ///< meta = weights without values, then its shape; payload = its values
  ack = 7,        ///< meta = push_ack
  error = 8,      ///< meta = the error's text
};

struct header {
  std::uint32_t magic = frame_magic;
  std::uint8_t kind = 0;
  std::uint8_t reserved[3] = {0, 0, 0};
  std::uint32_t target = 0;      ///< the shard's index
  std::uint32_t meta_bytes = 0;  ///< bytes of serialized metadata after the header
  std::uint64_t id = 0;          ///< the request's id; its reply carries the same
  std::uint64_t floats = 0;      ///< float32 values after the metadata
};
static_assert(sizeof(header) == 32, "the bulk channel's header is 32 bytes on every node");

/// Why a header from a peer is refused ("" when it is acceptable): a wrong magic, an unknown
/// kind, metadata over max_meta_bytes, or more values than `max_floats`.
std::string check_header(const header& h, std::uint64_t max_floats);

/// A ps node's end: accepts connections on its own port, checks each one's token, and answers
/// frames for the shards it serves by asking them: a thread per connection reads requests and
/// hands them to the shards, and the thread that sends an answer writes it to the socket (no
/// thread waits for a shard). A request its shard has not answered within `request_timeout` is
/// answered with caf.request_timeout. Bounded: at most max_connections at once (more are closed
/// at once), 4 requests of a connection at its shards and 4 answers at its writer, a hello
/// within hello_timeout.
class server {
 public:
  server(caf::actor_system& sys, std::string token, std::chrono::milliseconds request_timeout);
  ~server();
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  /// Listens on bind:port ("" = every interface); returns the bound port.
  caf::expected<std::uint16_t> listen(const std::string& bind, std::uint16_t port);
  /// Serves frames for shard `index` (a slice of `floats` values) from now on. Thread-safe.
  void serve(std::int32_t index, shard_actor shard, std::int64_t floats);
  /// Closes the port and every connection and waits for their threads.
  void stop();

  static constexpr std::size_t max_connections = 1024;
  std::chrono::milliseconds hello_timeout{10000};

 private:
  struct impl;
  std::shared_ptr<impl> impl_;
};

/// A finished connection's socket is closed only by close_retired(), not at once: its byte counts
/// stay readable for the node's last traffic sample (net::traffic_meter reads the kernel's counts
/// of the process's open, connected sockets), as a BASP connection's do until its node ends.
/// Bounded: past 4096 retired sockets the oldest are closed. Thread-safe.
void retire(int fd);
void close_retired();

/// Where a worker node's proxy finds a shard's ps node on the bulk channel.
struct endpoint {
  std::string host;
  std::uint16_t port = 0;
  std::string token;
  std::string name;  ///< this node's name, for the ps node's messages
  /// The ps node's CAF node: only a shard handle of that node is worth a bulk proxy (a barrier
  /// on the coordinator node stands between a sync job's workers and its shards).
  caf::node_id node;
  std::chrono::milliseconds timeout{60000};  ///< connecting, and each write
};

/// Connects to `at` and presents the token: an error naming the address and what failed, else
/// the connected proxy. The proxy is shard_actor to its users: pull, push and push_pull travel
/// on the bulk channel, in the order users send them, written from the sender's own thread (the
/// handle users get is a custom actor that writes requests at once and passes everything else
/// to the proxy actor behind it); a reader thread hands each answer to its requester. Anything
/// else goes to `remote` over BASP.
/// It monitors `remote` and `owner`. When the shard goes down, what is outstanding and what comes
/// later is answered as the shard's own handle across nodes would: never when its node is gone
/// (BASP drops such requests; the coordinator, which monitors the shard, acts), with
/// caf.request_receiver_down when the shard ended on a live node; the proxy stays until `owner`
/// goes (then it fails what is outstanding with actrain.stopped and quits). When
/// the connection closes, it waits up to 2 s for the shard's handle to go down (a dead ps node
/// resets the channel just before), then fails what is outstanding with actrain.node_down naming
/// the channel and quits with that error.
caf::expected<shard_actor> spawn_proxy(caf::actor_system& sys, const endpoint& at,
                                       std::int32_t shard, std::int64_t floats, shard_actor remote,
                                       caf::actor owner);

}  // namespace actrain::bulk
