#pragma once
// The bulk channel's frames and descriptor I/O, shared by its server (bulk_server.cpp) and its
// proxy (bulk_proxy.cpp); cluster/bulk.hpp describes the channel. Reads and writes go through the
// socket's descriptor (recv, sendmsg with an iovec, poll for deadlines): a proxy writes a frame
// without blocking straight from its actor when the socket takes it, and Asio's synchronous
// operations have no deadline. Internal to actrain::cluster.
#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include <actrain/errors.hpp>
#include "cluster/bulk.hpp"

namespace actrain::bulk {

using clk = std::chrono::steady_clock;

/// Waits until `fd` is readable (or writable); false when `deadline` passed first. A deadline of
/// time_point::max() waits for ever (a shutdown of the socket ends the wait).
bool wait_for(int fd, short events, clk::time_point deadline);

/// Reads exactly n bytes; "" or why not ("closed", a timeout, errno's text).
std::string read_exact(int fd, void* out, std::size_t n,
                       clk::time_point deadline = clk::time_point::max());

/// One frame on its way out: header and metadata in one buffer, values in their tensor.
struct out_frame {
  std::vector<char> head;  ///< header + metadata
  tensor values;
  std::size_t sent = 0;  ///< bytes of head + values already written
  std::size_t size() const { return head.size() + values.size() * sizeof(float); }
};

/// Writes what is left of `f` with one sendmsg; returns bytes written, 0 when the socket takes
/// nothing now (dontwait), or -1 with errno set.
ssize_t send_some(int fd, out_frame& f, bool dontwait);

/// Names the calling thread (at most 15 characters), as `top -H` and profilers show it.
void name_this_thread(const char* name);

/// Writes all of `f`, blocking; "" or why not.
std::string write_all(int fd, out_frame& f);

/// One socket's outgoing frames, in order, from any thread, without blocking the caller: a frame
/// is written at once when nothing waits before it and the socket takes it all; the rest goes to
/// a writer thread. A failed write shuts the socket down (its reader sees the end).
class frame_writer {
 public:
  explicit frame_writer(int fd) : fd_(fd) {}
  ~frame_writer() { stop(); }
  frame_writer(const frame_writer&) = delete;
  frame_writer& operator=(const frame_writer&) = delete;

  void start();
  /// Queues `f`; dropped once stopped.
  void send(out_frame f);
  /// Waits until every queued frame is written, or a write failed, or the writer stopped.
  void flush();
  /// Waits until fewer than `n` frames wait for the writer thread (or it stopped): a peer that
  /// does not read holds its writer here rather than in memory.
  void wait_below(std::size_t n);
  /// No more frames: ends the writer thread (a write stuck on a full socket is unblocked by
  /// shutting the socket down) and returns whether frames were left unwritten. Once only; later
  /// calls return false. Does not close the socket.
  bool stop();

 private:
  void write_loop();

  int fd_;
  std::mutex mtx_;
  std::condition_variable cv_;
  std::deque<out_frame> queue_;
  bool stopped_ = false;
  std::thread thread_;
};

template <class... Ts>
std::vector<char> serialize_meta(caf::actor_system& sys, Ts&... xs) {
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  if (auto err = sink(xs...))
    throw std::runtime_error("bulk channel: cannot serialize a frame's metadata: " +
                             sys.render(err));
  return buf;
}

template <class... Ts>
out_frame make_frame(caf::actor_system& sys, kind k, std::uint32_t target, std::uint64_t id,
                     tensor values, Ts&... meta) {
  auto m = serialize_meta(sys, meta...);
  if (m.size() > max_meta_bytes)
    throw std::runtime_error("bulk channel: a frame's metadata exceeds " +
                             std::to_string(max_meta_bytes) + " bytes");
  header h;
  h.kind = static_cast<std::uint8_t>(k);
  h.target = target;
  h.meta_bytes = static_cast<std::uint32_t>(m.size());
  h.id = id;
  h.floats = values.size();
  out_frame f;
  f.head.resize(sizeof h + m.size());
  std::memcpy(f.head.data(), &h, sizeof h);
  std::copy(m.begin(), m.end(), f.head.begin() + sizeof h);
  f.values = std::move(values);
  return f;
}

template <class... Ts>
caf::error parse_meta(caf::actor_system& sys, const std::vector<char>& buf, Ts&... xs) {
  caf::binary_deserializer source{sys, buf};
  if (auto err = source(xs...)) return err;
  if (source.remaining() != 0)
    return make_error(errc::bad_message, "bulk channel: " + std::to_string(source.remaining()) +
                                             " bytes left over after a frame's metadata");
  return caf::none;
}

/// Reads a frame's metadata and values (its header read and checked); values land in a buffer
/// from `pool` (recycled, not zero-filled, when one is free). Values that are all finite come
/// marked so (tensor::mark_finite): each piece is checked as it arrives, and the shard or worker
/// that gets them does not read them all again.
std::string read_body(int fd, const header& h, std::vector<char>& meta, tensor& values,
                      tensor_pool& pool, clk::time_point deadline = clk::time_point::max());

/// A socket's incoming frames through one buffer: a small frame (a request, an answer of a few
/// values) arrives with one recv where reading its header, metadata and values apart took one
/// each (two or three system calls per frame, each a few microseconds on a loopback round trip);
/// the values of a large frame beyond what the buffer holds go straight from the socket into
/// their tensor. The buffer's size is fixed: a peer cannot grow it. One reader per socket, and
/// nothing else reads from it while the reader is in use (bytes it read ahead would be lost).
class frame_reader {
 public:
  static constexpr std::size_t capacity = 16 << 10;

  explicit frame_reader(int fd) : fd_(fd), buf_(capacity) {}

  /// Whether bytes are buffered, so that a read can return without the socket being readable.
  bool buffered() const { return begin_ < end_; }
  /// Reads exactly n bytes; "" or why not ("closed", a timeout, errno's text).
  std::string read(void* out, std::size_t n, clk::time_point deadline = clk::time_point::max());
  /// As the free read_body below.
  std::string read_body(const header& h, std::vector<char>& meta, tensor& values,
                        tensor_pool& pool, clk::time_point deadline = clk::time_point::max());

 private:
  /// Moves up to n buffered bytes to `out`; returns how many.
  std::size_t take(char* out, std::size_t n);
  /// One recv into the buffer's free space; "" or why not.
  std::string fill(clk::time_point deadline);

  int fd_;
  std::vector<char> buf_;
  std::size_t begin_ = 0, end_ = 0;
};

/// After refusing a peer: no more writes, and what it still sends is read and dropped (for at
/// most a second and 64 MiB) before the socket closes, so the refusal reaches it ahead of the end
/// of the stream instead of being discarded by a reset.
void linger(int fd);

/// An error as an error frame carries it: actrain's code (node_down for another category) and
/// its text.
std::pair<std::uint8_t, std::string> error_meta(const caf::error& err);

}  // namespace actrain::bulk
