// The bulk channel's buffered frame reader (cluster/bulk_frames.hpp) over a real socket pair:
// frames written back to back in odd pieces come out whole, bit for bit and in order, whether
// they fit the reader's buffer, straddle it or are far larger; a NaN or infinity anywhere leaves
// the values unmarked; a silent peer times out and a closed one is named.
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include "cluster/bulk_frames.hpp"

namespace actrain::bulk {
namespace {

struct socket_pair {
  int fds[2] = {-1, -1};
  socket_pair() {
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) throw std::runtime_error("socketpair");
  }
  ~socket_pair() {
    for (int fd : fds)
      if (fd >= 0) ::close(fd);
  }
};

/// A frame's bytes as they travel: header, metadata (a version and a name), values.
std::vector<char> frame_bytes(caf::actor_system& sys, std::uint64_t id, const tensor& values) {
  std::int64_t version = static_cast<std::int64_t>(id) * 3;
  std::string name = "frame " + std::to_string(id);
  auto f = make_frame(sys, kind::weights, 7, id, values, version, name);
  std::vector<char> out(f.head.begin(), f.head.end());
  auto* v = reinterpret_cast<const char*>(values.data());
  out.insert(out.end(), v, v + values.size() * sizeof(float));
  return out;
}

tensor values_for(std::size_t n, float base) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = base + static_cast<float>(i) * 0.5f;
  return tensor(std::move(v));
}

/// Writes `bytes` to `fd` in pieces whose sizes cycle through `pieces`.
void write_in_pieces(int fd, const std::vector<char>& bytes, const std::vector<std::size_t>& pieces) {
  std::size_t at = 0, k = 0;
  while (at < bytes.size()) {
    auto n = std::min(pieces[k++ % pieces.size()], bytes.size() - at);
    auto r = ::send(fd, bytes.data() + at, n, MSG_NOSIGNAL);
    if (r <= 0) return;
    at += static_cast<std::size_t>(r);
  }
}

class frame_reader_test : public ::testing::Test {
 protected:
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
};

// Sizes around the buffer's (16 KiB: 4096 floats) and the cut-over to direct reads (half of it),
// one far larger than the socket holds at once, and none at all; written in pieces of 1, 7, 13,
// 4099 and 65537 bytes so that headers, metadata and values split at every kind of boundary.
TEST_F(frame_reader_test, frames_written_in_odd_pieces_come_out_whole_and_in_order) {
  const std::vector<std::size_t> sizes = {0,    1,    3,    2000, 2040, 2048, 2049,
                                          4090, 4096, 4100, 0,    9000, 300000, 5};
  std::vector<tensor> sent;
  std::vector<char> stream;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    sent.push_back(values_for(sizes[i], static_cast<float>(i)));
    auto b = frame_bytes(sys, i, sent.back());
    stream.insert(stream.end(), b.begin(), b.end());
  }
  socket_pair sp;
  std::thread writer([&] { write_in_pieces(sp.fds[0], stream, {1, 7, 13, 4099, 65537}); });
  frame_reader in(sp.fds[1]);
  tensor_pool pool(2);
  std::vector<char> meta;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    header h;
    ASSERT_EQ(in.read(&h, sizeof h), "") << "frame " << i;
    ASSERT_EQ(check_header(h, 1u << 20), "") << "frame " << i;
    EXPECT_EQ(h.id, i);
    EXPECT_EQ(h.target, 7u);
    ASSERT_EQ(h.floats, sizes[i]);
    tensor values;
    ASSERT_EQ(in.read_body(h, meta, values, pool), "") << "frame " << i;
    std::int64_t version = -1;
    std::string name;
    ASSERT_FALSE(parse_meta(sys, meta, version, name)) << "frame " << i;
    EXPECT_EQ(version, static_cast<std::int64_t>(i) * 3);
    EXPECT_EQ(name, "frame " + std::to_string(i));
    ASSERT_EQ(values.size(), sent[i].size());
    EXPECT_EQ(std::memcmp(values.data(), sent[i].data(), values.size() * sizeof(float)), 0)
        << "frame " << i << " of " << sizes[i] << " values";
    EXPECT_TRUE(values.all_finite());
    pool.keep(values);  // recycled buffers hold old values: each frame must overwrite them all
  }
  writer.join();
  EXPECT_FALSE(in.buffered());
}

// A NaN or infinity at the first value (which comes with the header), at the last value of a
// small frame, on either side of the buffer's edge, and at the end of a large frame read straight
// from the socket: the values arrive as sent and unmarked, so their receiver refuses them.
TEST_F(frame_reader_test, a_non_finite_value_anywhere_leaves_the_values_unmarked) {
  const float nan = std::nanf(""), inf = std::numeric_limits<float>::infinity();
  struct bad {
    std::size_t n, at;
    float value;
  };
  const std::vector<bad> cases = {{10, 0, nan},       {10, 9, -inf},     {4096, 4070, nan},
                                  {4096, 4095, inf},  {9000, 4080, nan}, {9000, 8999, nan},
                                  {300000, 0, -inf},  {300000, 299999, nan}};
  socket_pair sp;
  std::vector<char> stream;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    auto v = values_for(cases[i].n, 1.f).to_vector();
    v[cases[i].at] = cases[i].value;
    auto b = frame_bytes(sys, i, tensor(std::move(v)));
    stream.insert(stream.end(), b.begin(), b.end());
  }
  std::thread writer([&] { write_in_pieces(sp.fds[0], stream, {4099, 1, 65537}); });
  frame_reader in(sp.fds[1]);
  tensor_pool pool(2);
  std::vector<char> meta;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    header h;
    ASSERT_EQ(in.read(&h, sizeof h), "");
    tensor values;
    ASSERT_EQ(in.read_body(h, meta, values, pool), "");
    ASSERT_EQ(values.size(), cases[i].n);
    EXPECT_FALSE(values.all_finite()) << "bad value at " << cases[i].at << " of " << cases[i].n;
    auto got = values.data()[cases[i].at];
    if (std::isnan(cases[i].value))
      EXPECT_TRUE(std::isnan(got));
    else
      EXPECT_EQ(got, cases[i].value);
  }
  writer.join();
}

TEST_F(frame_reader_test, a_silent_peer_times_out_and_a_closed_one_is_named) {
  socket_pair sp;
  frame_reader in(sp.fds[1]);
  header h;
  // Half a header, then silence.
  ASSERT_EQ(::send(sp.fds[0], "\x01\x02\x03", 3, MSG_NOSIGNAL), 3);
  auto t0 = clk::now();
  EXPECT_EQ(in.read(&h, sizeof h, t0 + std::chrono::milliseconds(50)),
            "timed out waiting for the peer");
  EXPECT_GE(clk::now() - t0, std::chrono::milliseconds(50));
  ::close(sp.fds[0]);
  sp.fds[0] = -1;
  EXPECT_EQ(in.read(&h, sizeof h), "connection closed by the peer");
}

}  // namespace
}  // namespace actrain::bulk
