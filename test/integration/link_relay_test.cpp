// link_relay on its own: bytes forwarded both ways and counted, order kept under a delay, a cut
// closes the connection and refuses new ones, a silenced link swallows bytes.
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <boost/asio.hpp>

#include <actrain/testing/link_relay.hpp>

namespace actrain {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

/// A target listening on 127.0.0.1, a relay in front of it, and one client joined through it.
/// Blocking sockets: every read below waits for bytes the test has just written.
struct relay_fixture : ::testing::Test {
  asio::io_context io;
  tcp::acceptor target{io, tcp::endpoint{asio::ip::make_address("127.0.0.1"), 0}};
  link_relay relay{"127.0.0.1", target.local_endpoint().port()};
  tcp::socket client{io};
  tcp::socket server{io};

  void join() {
    client.connect({asio::ip::make_address("127.0.0.1"), relay.port()});
    target.accept(server);
  }
  /// The relay's thread counts a chunk once its write completed, which may be just after the
  /// reader got it: wait for the count itself (bounded).
  template <class Pred>
  link_counts counts_when(Pred done) {
    return relay.wait_for_counts(done, 1s);
  }
  static std::string read_n(tcp::socket& s, std::size_t n) {
    std::string out(n, '\0');
    asio::read(s, asio::buffer(out));
    return out;
  }
};

TEST_F(relay_fixture, forwards_both_ways_in_order_and_counts_the_bytes) {
  join();
  relay.set_delay(2ms);  // every chunk late, none reordered
  for (int i = 0; i < 20; ++i) asio::write(client, asio::buffer(std::to_string(i % 10)));
  EXPECT_EQ(read_n(server, 20), "01234567890123456789");
  relay.set_delay(0ms);
  asio::write(server, asio::buffer(std::string("pong")));
  EXPECT_EQ(read_n(client, 4), "pong");
  auto c =
      counts_when([](const link_counts& c) { return c.from_target >= 4 && c.to_target >= 20; });
  EXPECT_EQ(c.to_target, 20u);
  EXPECT_EQ(c.from_target, 4u);
  EXPECT_EQ(c.connections, 1);
  EXPECT_EQ(relay.state(), link_state::open);
}

TEST_F(relay_fixture, a_cut_closes_both_sides_and_refuses_new_connections) {
  join();
  relay.cut();
  EXPECT_EQ(relay.state(), link_state::cut);
  char byte;
  boost::system::error_code ec;
  asio::read(client, asio::buffer(&byte, 1), ec);
  EXPECT_TRUE(ec);  // eof or reset: the client sees the link go
  asio::read(server, asio::buffer(&byte, 1), ec);
  EXPECT_TRUE(ec);
  tcp::socket again{io};
  again.connect({asio::ip::make_address("127.0.0.1"), relay.port()}, ec);
  EXPECT_EQ(ec, asio::error::connection_refused);
}

TEST_F(relay_fixture, a_silenced_link_swallows_bytes_and_keeps_the_sockets_open) {
  join();
  relay.silence();
  asio::write(client, asio::buffer(std::string("lost")));
  EXPECT_EQ(counts_when([](const link_counts& c) { return c.dropped >= 4; }).dropped, 4u);
  EXPECT_EQ(relay.counts().to_target, 0u);
  EXPECT_EQ(server.available(), 0u);  // nothing arrived, and the socket is still open
  EXPECT_TRUE(server.is_open());
}

}  // namespace
}  // namespace actrain
