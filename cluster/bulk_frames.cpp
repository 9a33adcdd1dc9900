// The bulk channel's frames and descriptor I/O (cluster/bulk_frames.hpp), and its retired sockets.
#include "cluster/bulk_frames.hpp"

#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <deque>
#include <mutex>

namespace actrain::bulk {

std::string check_header(const header& h, std::uint64_t max_floats) {
  if (h.magic != frame_magic) return "not a bulk-channel frame (wrong magic)";
  if (h.kind < static_cast<std::uint8_t>(kind::hello) ||
      h.kind > static_cast<std::uint8_t>(kind::error))
    return "unknown frame kind " + std::to_string(h.kind);
  if (h.meta_bytes > max_meta_bytes)
    return "frame metadata of " + std::to_string(h.meta_bytes) + " bytes (at most " +
           std::to_string(max_meta_bytes) + ")";
  if (h.floats > max_floats)
    return "frame of " + std::to_string(h.floats) + " values where at most " +
           std::to_string(max_floats) + " fit";
  return {};
}

// -- descriptor I/O -------------------------------------------------------------------------------

/// Waits until `fd` is readable (or writable); false when `deadline` passed first. A deadline of
/// time_point::max() waits for ever (a shutdown of the socket ends the wait).
bool wait_for(int fd, short events, clk::time_point deadline) {
  for (;;) {
    int ms = -1;
    if (deadline != clk::time_point::max()) {
      // Rounded up: poll's milliseconds must not end the wait before the deadline.
      auto left = deadline - clk::now();
      if (left <= clk::duration::zero()) return false;
      auto up = std::chrono::ceil<std::chrono::milliseconds>(left);
      ms = static_cast<int>(std::min<std::int64_t>(up.count(), 1 << 30));
    }
    pollfd p{fd, events, 0};
    int r = ::poll(&p, 1, ms);
    if (r > 0) return true;
    if (r == 0) continue;  // the loop checks the deadline again
    if (errno != EINTR) return true;  // let the read or write report the error
  }
}

namespace {

/// One recv of at most n bytes into `out`, waiting no longer than `deadline`; the bytes read, or
/// -1 with `why` set ("closed", a timeout, errno's text).
ssize_t recv_some(int fd, char* out, std::size_t n, clk::time_point deadline, std::string& why) {
  for (;;) {
    if (deadline != clk::time_point::max() && !wait_for(fd, POLLIN, deadline)) {
      why = "timed out waiting for the peer";
      return -1;
    }
    auto r = ::recv(fd, out, n, 0);
    if (r > 0) return r;
    if (r < 0 && errno == EINTR) continue;
    why = r == 0 ? "connection closed by the peer" : std::strerror(errno);
    return -1;
  }
}

/// Reads exactly n bytes, calling on_piece(bytes read so far) after each recv; "" or why not.
template <class OnPiece>
std::string read_pieces(int fd, char* out, std::size_t n, clk::time_point deadline,
                        OnPiece on_piece) {
  std::string why;
  for (std::size_t got = 0; got < n;) {
    auto r = recv_some(fd, out + got, n - got, deadline, why);
    if (r < 0) return why;
    got += static_cast<std::size_t>(r);
    on_piece(got);
  }
  return {};
}

}  // namespace

std::string read_exact(int fd, void* out, std::size_t n, clk::time_point deadline) {
  return read_pieces(fd, static_cast<char*>(out), n, deadline, [](std::size_t) {});
}

/// Writes what is left of `f` with one sendmsg; returns bytes written, 0 when the socket takes
/// nothing now (dontwait), or -1 with errno set.
ssize_t send_some(int fd, out_frame& f, bool dontwait) {
  iovec iov[2];
  int n = 0;
  auto values_bytes = f.values.size() * sizeof(float);
  if (f.sent < f.head.size()) {
    iov[n++] = {f.head.data() + f.sent, f.head.size() - f.sent};
    if (values_bytes > 0) iov[n++] = {const_cast<float*>(f.values.data()), values_bytes};
  } else {
    auto off = f.sent - f.head.size();
    iov[n++] = {reinterpret_cast<char*>(const_cast<float*>(f.values.data())) + off,
                values_bytes - off};
  }
  msghdr m{};
  m.msg_iov = iov;
  m.msg_iovlen = static_cast<std::size_t>(n);
  for (;;) {
    auto r = ::sendmsg(fd, &m, MSG_NOSIGNAL | (dontwait ? MSG_DONTWAIT : 0));
    if (r >= 0) return r;
    if (errno == EINTR) continue;
    if (dontwait && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    return -1;
  }
}

/// Writes all of `f`, blocking; "" or why not.
std::string write_all(int fd, out_frame& f) {
  while (f.sent < f.size()) {
    auto r = send_some(fd, f, false);
    if (r < 0) return std::strerror(errno);
    f.sent += static_cast<std::size_t>(r);
  }
  return {};
}

void name_this_thread(const char* name) {
  ::pthread_setname_np(::pthread_self(), name);
}

void frame_writer::start() {
  thread_ = std::thread([this] {
    name_this_thread("actrain.bulk-wr");
    write_loop();
  });
}

void frame_writer::send(out_frame f) {
  std::unique_lock<std::mutex> lk(mtx_);
  if (stopped_) return;
  if (queue_.empty()) {
    auto r = send_some(fd_, f, true);
    if (r < 0) {
      // The reader reports it. Under the lock: once stopped, the descriptor may be retired.
      ::shutdown(fd_, SHUT_RDWR);
      return;
    }
    f.sent += static_cast<std::size_t>(r);
    if (f.sent == f.size()) return;
  }
  queue_.push_back(std::move(f));
  cv_.notify_all();
}

void frame_writer::wait_below(std::size_t n) {
  std::unique_lock<std::mutex> lk(mtx_);
  cv_.wait(lk, [this, n] { return stopped_ || queue_.size() < n; });
}

void frame_writer::flush() {
  std::unique_lock<std::mutex> lk(mtx_);
  cv_.wait(lk, [this] { return stopped_ || queue_.empty(); });
}

bool frame_writer::stop() {
  bool writing = false;
  {
    std::lock_guard<std::mutex> lk(mtx_);
    if (stopped_) return false;
    stopped_ = true;
    writing = !queue_.empty();
    cv_.notify_all();
  }
  if (writing) ::shutdown(fd_, SHUT_RDWR);
  if (thread_.joinable()) thread_.join();
  return writing;
}

void frame_writer::write_loop() {
  std::unique_lock<std::mutex> lk(mtx_);
  for (;;) {
    cv_.wait(lk, [this] { return stopped_ || !queue_.empty(); });
    if (stopped_) return;
    auto& f = queue_.front();
    lk.unlock();
    // Only this thread writes while the queue is not empty, so `f` stays put.
    auto err = write_all(fd_, f);
    lk.lock();
    queue_.pop_front();
    cv_.notify_all();  // flush() waits for an empty queue
    if (!err.empty()) {
      queue_.clear();
      ::shutdown(fd_, SHUT_RDWR);
      return;
    }
  }
}

namespace {

/// Reads the rest of n floats into `out`, whose first `got` bytes are already there, checking
/// each piece the socket delivers while the next one is still on its way (the check reads values
/// the copy just left in the cache); `finite` tells whether every value is finite.
std::string read_floats(int fd, float* out, std::size_t n, std::size_t got,
                        clk::time_point deadline, bool& finite) {
  std::size_t checked = got / sizeof(float);
  finite = all_finite(span<const float>(out, checked));
  return read_pieces(fd, reinterpret_cast<char*>(out) + got, n * sizeof(float) - got, deadline,
                     [&](std::size_t more) {
                       const std::size_t whole = (got + more) / sizeof(float);
                       if (finite)
                         finite = all_finite(span<const float>(out + checked, whole - checked));
                       checked = whole;
                     });
}

/// A frame's values, its metadata read: `ahead(out, n)` first moves the bytes of them already
/// read from the socket (at most n) to `out` and says how many; the rest come from the socket.
/// Values that are all finite come marked so.
template <class Ahead>
std::string read_values(int fd, const header& h, tensor& values, tensor_pool& pool,
                        clk::time_point deadline, Ahead ahead) {
  values = tensor();
  if (h.floats == 0) return {};
  auto v = pool.take(static_cast<std::size_t>(h.floats));
  const std::size_t got = ahead(reinterpret_cast<char*>(v.data()), v.size() * sizeof(float));
  bool finite = false;
  if (auto e = read_floats(fd, v.data(), v.size(), got, deadline, finite); !e.empty()) return e;
  values = tensor(std::move(v));
  if (finite) values.mark_finite();
  return {};
}

}  // namespace

std::size_t frame_reader::take(char* out, std::size_t n) {
  auto k = std::min(n, end_ - begin_);
  std::memcpy(out, buf_.data() + begin_, k);
  begin_ += k;
  if (begin_ == end_) begin_ = end_ = 0;
  return k;
}

std::string frame_reader::fill(clk::time_point deadline) {
  if (begin_ > 0) {  // what is left is a frame's first bytes: fewer than a header and its metadata
    std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  std::string why;
  auto r = recv_some(fd_, buf_.data() + end_, buf_.size() - end_, deadline, why);
  if (r < 0) return why;
  end_ += static_cast<std::size_t>(r);
  return {};
}

std::string frame_reader::read(void* out, std::size_t n, clk::time_point deadline) {
  auto* p = static_cast<char*>(out);
  std::size_t got = take(p, n);
  // Large reads go straight to their destination; small ones through the buffer, which may take
  // in the next frame's first bytes with them.
  if (n - got >= capacity / 2) return read_exact(fd_, p + got, n - got, deadline);
  while (got < n) {
    if (auto e = fill(deadline); !e.empty()) return e;
    got += take(p + got, n - got);
  }
  return {};
}

std::string frame_reader::read_body(const header& h, std::vector<char>& meta, tensor& values,
                                    tensor_pool& pool, clk::time_point deadline) {
  meta.resize(h.meta_bytes);
  if (auto e = read(meta.data(), meta.size(), deadline); !e.empty()) return e;
  // The values buffered with the header first (all of a small frame's), then the rest straight
  // from the socket.
  return read_values(fd_, h, values, pool, deadline,
                     [this](char* out, std::size_t n) { return take(out, n); });
}

std::string read_body(int fd, const header& h, std::vector<char>& meta, tensor& values,
                      tensor_pool& pool, clk::time_point deadline) {
  meta.resize(h.meta_bytes);
  if (auto e = read_exact(fd, meta.data(), meta.size(), deadline); !e.empty()) return e;
  return read_values(fd, h, values, pool, deadline, [](char*, std::size_t) { return 0; });
}

/// After refusing a peer: no more writes, and what it still sends is read and dropped (for at
/// most a second and 64 MiB) before the socket closes, so the refusal reaches it ahead of the end
/// of the stream instead of being discarded by a reset.
void linger(int fd) {
  ::shutdown(fd, SHUT_WR);
  auto deadline = clk::now() + std::chrono::seconds(1);
  std::vector<char> sink(1 << 16);
  for (std::size_t total = 0; total < (std::size_t{64} << 20);) {
    if (!wait_for(fd, POLLIN, deadline)) return;
    auto r = ::recv(fd, sink.data(), sink.size(), 0);
    if (r <= 0) return;
    total += static_cast<std::size_t>(r);
  }
}

std::pair<std::uint8_t, std::string> error_meta(const caf::error& err) {
  // An actrain error travels as its code and its own text (the far side names the code again);
  // any other one as node_down with the whole description.
  if (err.category() == errc_category() && err.context().match_elements<std::string>())
    return {err.code(), err.context().get_as<std::string>(0)};
  auto code =
      err.category() == errc_category() ? err.code() : static_cast<std::uint8_t>(errc::node_down);
  return {code, describe_error(err)};
}

namespace {

std::mutex retired_mtx;
std::deque<int> retired;

}  // namespace

void retire(int fd) {
  if (fd < 0) return;
  std::lock_guard<std::mutex> lk(retired_mtx);
  retired.push_back(fd);
  while (retired.size() > 4096) {
    ::close(retired.front());
    retired.pop_front();
  }
}

void close_retired() {
  std::lock_guard<std::mutex> lk(retired_mtx);
  for (int fd : retired) ::close(fd);
  retired.clear();
}

}  // namespace actrain::bulk
