// The bulk channel (cluster/bulk.hpp) over a real loopback socket, when something goes wrong: a
// request its shard never answers times out on the ps node, stopping the server ends every
// connection, a wrong token, a slice of the wrong length and a hostile peer's frames are refused
// with errors that say what is wrong (before anything is allocated for them), a silent peer is
// dropped, and a shard or a server that goes away fails what is outstanding and takes the proxy
// down.
#include <future>

#include <boost/asio.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include "bulk_fixture.hpp"

namespace actrain {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

// Without a thread waiting for each answer, the server's deadline answers for the shard: a
// request it has not answered within the request timeout is failed with caf.request_timeout.
TEST_F(bulk_channel_test, a_request_its_shard_never_answers_times_out_on_the_ps_node) {
  auto holder = sys->spawn(holding_shard, slice, std::make_shared<held_pulls>());
  bulk::server quick(*sys, "secret", 300ms);
  auto port2 = quick.listen("127.0.0.1", 0);
  ASSERT_TRUE(port2) << describe_error(port2.error());
  quick.serve(4, holder, slice);
  auto e = at();
  e.port = *port2;
  auto made = bulk::spawn_proxy(*sys, e, 4, slice, holder, caf::actor{});
  ASSERT_TRUE(made) << describe_error(made.error());
  auto w = ask<weights>(*made, pull_atom::value, pull_request{1, 0});
  ASSERT_FALSE(w);
  EXPECT_NE(describe_error(w.error()).find("shard 4 did not answer within 300 ms"),
            std::string::npos)
      << describe_error(w.error());
  caf::anon_send_exit(*made, caf::exit_reason::user_shutdown);
  quick.stop();
  caf::anon_send_exit(holder, caf::exit_reason::kill);
}

// A connection whose requests fill its slots at a shard that holds them waits for a slot, not
// on its socket: stopping the server must still end it.
TEST_F(bulk_channel_test, stopping_the_server_ends_a_connection_waiting_for_a_slot) {
  auto seen_held = std::make_shared<held_pulls>();
  auto holder = sys->spawn(holding_shard, slice, seen_held);
  server->serve(4, holder, slice);
  auto made = bulk::spawn_proxy(*sys, at(), 4, slice, holder, caf::actor{});
  ASSERT_TRUE(made) << describe_error(made.error());
  for (int i = 0; i < 6; ++i) (*self)->send(*made, pull_atom::value, pull_request{1, 0});
  {  // the shard holds the 4 the connection lets through
    std::unique_lock<std::mutex> lk(seen_held->mtx);
    ASSERT_TRUE(seen_held->cv.wait_for(lk, 10s, [&] { return seen_held->held >= 4; }))
        << "the shard holds " << seen_held->held << " pulls";
    EXPECT_EQ(seen_held->held, 4u);
  }
  auto stopped = std::async(std::launch::async, [this] { server->stop(); });
  EXPECT_EQ(stopped.wait_for(10s), std::future_status::ready) << "stop() waited for the shard";
  caf::anon_send_exit(*made, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(holder, caf::exit_reason::kill);
}

TEST_F(bulk_channel_test, a_wrong_token_is_refused_by_name) {
  auto p = bulk::spawn_proxy(*sys, at("guess"), 3, slice, shard, caf::actor{});
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code(), static_cast<std::uint8_t>(errc::bad_token));
  EXPECT_NE(describe_error(p.error()).find("wrong cluster token"), std::string::npos)
      << describe_error(p.error());
}

TEST_F(bulk_channel_test, a_slice_of_the_wrong_length_is_refused_and_the_proxy_goes_down) {
  auto p = proxy();
  ASSERT_TRUE(p);
  (*self)->monitor(p);
  auto r = ask<push_ack>(p, push_atom::value, grad(0, ramp(slice - 1, 0.f)));
  ASSERT_FALSE(r);
  EXPECT_NE(describe_error(r.error()).find("expects 100000 gradient values, the frame holds 99999"),
            std::string::npos)
      << describe_error(r.error());
  caf::error why;
  (*self)->receive([&](caf::down_msg& dm) { why = dm.reason; },
                   caf::after(5s) >> [] { ADD_FAILURE() << "the proxy did not go down"; });
  EXPECT_NE(describe_error(why).find("closed"), std::string::npos) << describe_error(why);
  std::lock_guard<std::mutex> lk(seen->mtx);
  EXPECT_TRUE(seen->steps.empty()) << "the refused gradient reached the shard";
}

TEST_F(bulk_channel_test, a_shard_that_goes_down_is_answered_for_as_its_own_handle_would_be) {
  // A request to a shard that ended on a live node is bounced over BASP with
  // caf.request_receiver_down (one to a node that is gone is never answered): the proxy answers
  // the same, and stays until its owner goes.
  auto owner = sys->spawn([] { return caf::behavior{[](std::int8_t) {}}; });
  auto made = bulk::spawn_proxy(*sys, at(), 3, slice, shard, owner);
  ASSERT_TRUE(made) << describe_error(made.error());
  auto p = *made;
  (*self)->monitor(p);
  caf::anon_send_exit(shard, caf::exit_reason::kill);
  (*self)->wait_for(shard);
  caf::error err;
  for (int i = 0; i < 50 && err != caf::sec::request_receiver_down; ++i)
    (*self)
        ->request(p, 5s, pull_atom::value, pull_request{1, 0})
        .receive([](weights&) {}, [&](caf::error& e) { err = e; });
  EXPECT_EQ(err, caf::sec::request_receiver_down) << describe_error(err);
  caf::error why;
  EXPECT_FALSE(testing::went_down(*self, &why)) << "the proxy went with the shard";
  caf::anon_send_exit(owner, caf::exit_reason::user_shutdown);
  (*self)->receive(
      [&](caf::down_msg& dm) { why = dm.reason; },
      caf::after(5s) >> [] { ADD_FAILURE() << "the proxy did not go with its owner"; });
  EXPECT_EQ(why, caf::exit_reason::normal);
}

// The same seen from the ps node alone: the proxy's remote handle stays up, so only the ps node's
// bounce of the request (given at once, outside any turn of the shard) answers it.
TEST_F(bulk_channel_test, a_request_to_an_ended_shard_is_answered_by_the_ps_node_at_once) {
  auto stand_in = sys->spawn(echo_shard, slice, std::make_shared<seen_by_shard>());
  auto made = bulk::spawn_proxy(*sys, at(), 3, slice, stand_in, caf::actor{});
  ASSERT_TRUE(made) << describe_error(made.error());
  auto p = *made;
  ASSERT_TRUE(ask<weights>(p, pull_atom::value, pull_request{1, 0}));
  caf::anon_send_exit(shard, caf::exit_reason::kill);
  (*self)->wait_for(shard);
  auto r = ask<weights>(p, push_pull_atom::value, grad(0, ramp(slice, 1.f)));
  ASSERT_FALSE(r);
  EXPECT_NE(describe_error(r.error()).find("caf.request_receiver_down"), std::string::npos)
      << describe_error(r.error());
  caf::anon_send_exit(p, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(stand_in, caf::exit_reason::kill);
}

TEST_F(bulk_channel_test, a_stopped_server_closes_the_channel_and_the_proxy_says_so) {
  auto p = proxy();
  ASSERT_TRUE(p);
  ASSERT_TRUE(ask<weights>(p, pull_atom::value, pull_request{1, 0}));
  (*self)->monitor(p);
  server->stop();
  caf::error why;
  (*self)->receive([&](caf::down_msg& dm) { why = dm.reason; },
                   caf::after(5s) >> [] { ADD_FAILURE() << "the proxy did not go down"; });
  EXPECT_EQ(why.code(), static_cast<std::uint8_t>(errc::node_down));
  EXPECT_NE(describe_error(why).find("bulk channel to the ps node at 127.0.0.1"), std::string::npos)
      << describe_error(why);
}

// -- a hostile peer -------------------------------------------------------------------------------

struct raw_peer {
  asio::io_context io;
  tcp::socket sock{io};
  caf::actor_system& sys;
  raw_peer(caf::actor_system& s, std::uint16_t port) : sys(s) {
    sock.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  }
  void send(bulk::header h, const std::vector<char>& meta = {}) {
    h.meta_bytes = h.meta_bytes == 0 ? static_cast<std::uint32_t>(meta.size()) : h.meta_bytes;
    asio::write(sock, asio::buffer(&h, sizeof h));
    if (!meta.empty()) asio::write(sock, asio::buffer(meta));
  }
  void hello(std::string token) {
    std::vector<char> meta;
    caf::binary_serializer sink{sys, meta};
    std::uint32_t version = protocol_version;
    std::string name = "raw";
    EXPECT_FALSE(sink(token, version, name));
    bulk::header h;
    h.kind = static_cast<std::uint8_t>(bulk::kind::hello);
    send(h, meta);
  }
  /// The next frame's kind and, for an error, its text.
  std::pair<std::uint8_t, std::string> answer() {
    bulk::header h;
    asio::read(sock, asio::buffer(&h, sizeof h));
    std::vector<char> meta(h.meta_bytes);
    if (!meta.empty()) asio::read(sock, asio::buffer(meta));
    std::string text;
    if (h.kind == static_cast<std::uint8_t>(bulk::kind::error)) {
      std::uint8_t code = 0;
      caf::binary_deserializer source{sys, meta};
      EXPECT_FALSE(source(code, text));
    }
    return {h.kind, text};
  }
  /// Whether the server closed the connection (a read ends with end of file).
  bool closed() {
    char c;
    boost::system::error_code ec;
    asio::read(sock, asio::buffer(&c, 1), ec);
    return ec == asio::error::eof || ec == asio::error::connection_reset;
  }
};

TEST_F(bulk_channel_test, a_hostile_peer_is_answered_and_dropped_before_anything_is_allocated) {
  struct hostile {
    bool greeted;  ///< sends a good hello first
    bulk::header h;
    std::vector<char> meta;
    std::string expected;  ///< in the error's text
  };
  auto frame = [](bulk::kind k, std::uint32_t target, std::uint64_t floats,
                  std::uint32_t meta_bytes = 0) {
    bulk::header h;
    h.kind = static_cast<std::uint8_t>(k);
    h.target = target;
    h.floats = floats;
    h.meta_bytes = meta_bytes;
    return h;
  };
  bulk::header http;
  http.magic = 0x50545448;  // "HTTP"
  const std::vector<hostile> cases{
      {false, http, {}, "wrong magic"},
      // 4 TiB, if the server believed it.
      {true, frame(bulk::kind::push, 3, std::uint64_t{1} << 40), {}, "at most 100000 fit"},
      {true, frame(bulk::kind::pull, 9, 0), {}, "no shard 9 on this ps node"},
      // A hello that claims 1 GiB of metadata.
      {false, frame(bulk::kind::hello, 0, 0, 1u << 30), {}, "at most 4096"},
      // Metadata that is no pull_request.
      {true, frame(bulk::kind::pull, 3, 0), {'x', 'y'}, "malformed pull"},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.expected);
    raw_peer peer(*sys, port);
    if (c.greeted) {
      peer.hello("secret");
      EXPECT_EQ(peer.answer().first, static_cast<std::uint8_t>(bulk::kind::welcome));
    }
    peer.send(c.h, c.meta);
    auto [k, text] = peer.answer();
    EXPECT_EQ(k, static_cast<std::uint8_t>(bulk::kind::error));
    EXPECT_NE(text.find(c.expected), std::string::npos) << text;
    EXPECT_TRUE(peer.closed());
  }
  std::lock_guard<std::mutex> lk(seen->mtx);
  EXPECT_TRUE(seen->steps.empty());
}

TEST_F(bulk_channel_test, a_silent_peer_is_dropped_after_the_hello_timeout) {
  raw_peer peer(*sys, port);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(peer.closed());  // server->hello_timeout is 2 s
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 1900ms);
}

}  // namespace
}  // namespace actrain
