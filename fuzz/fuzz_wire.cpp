// Every message type that crosses nodes, deserialized from the input's bytes with CAF's
// binary_deserializer, as BASP does on arrival (the first byte picks the type). An accepted value
// must hold together: each tensor's length matches its shape (the tensor deserializer checks it
// with try_shape_numel before allocating), and serializing it again and reading that back gives
// the same bytes. Refused bytes must end as a CAF error, never as a crash or an allocation of a
// size the input only claims.
#include <string>
#include <tuple>
#include <vector>

#include <actrain/protocol.hpp>

#include "fuzz/fuzz_support.hpp"

namespace {

using namespace actrain;

void check(const tensor& t) {
  if (t.shape().empty() && t.empty()) return;  // a default-constructed tensor
  std::int64_t n = 0;
  FUZZ_CHECK(try_shape_numel(t.shape(), n));
  FUZZ_CHECK(n == static_cast<std::int64_t>(t.size()));
  FUZZ_CHECK(t.size() <= max_wire_floats);
  FUZZ_CHECK(t.empty() || t.data() != nullptr);
  t.all_finite();  // what shards, barriers and workers check next: reads every value
}
void check(const weights& w) {
  check(w.values);
}
void check(const gradient& g) {
  check(g.values);
}
void check(const tensor_chunk& c) {
  check(c.part);
}
template <class T>
void check(const T&) {}

/// Actor handles and an error's context need an actor system to be read, as on a node: one that
/// never runs anything (created once, never destroyed, as a fuzz process ends by exit or signal).
caf::actor_system& system() {
  static caf::actor_system* sys = [] {
    auto* cfg = new caf::actor_system_config;
    cfg->set("scheduler.policy", caf::atom("testing"));
    return new caf::actor_system(*cfg);
  }();
  return *sys;
}

template <class T>
std::vector<char> to_bytes(T& x) {
  std::vector<char> buf;
  caf::binary_serializer sink{system(), buf};
  auto err = sink(x);
  FUZZ_CHECK(!err);
  return buf;
}

/// Reads a T from the bytes; when accepted, checks it and its round trip.
template <class T>
void one(const char* p, std::size_t n) {
  T x;
  caf::binary_deserializer source{system(), p, n};
  if (source(x)) return;  // refused
  check(x);
  auto bytes = to_bytes(x);
  T y;
  caf::binary_deserializer again{system(), bytes};
  FUZZ_CHECK(!again(y));
  FUZZ_CHECK(again.remaining() == 0);
  FUZZ_CHECK(to_bytes(y) == bytes);
}

/// The registrar's hello: (role, token, protocol version, byte-order probe, node name), read
/// element by element as CAF reads a message's values.
struct hello_args {
  std::string role, token;
  std::uint32_t version = 0;
  tensor probe;
  std::string name;
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, hello_args& x) {
  return f(x.role, x.token, x.version, x.probe, x.name);
}
void check(const hello_args& h) {
  check(h.probe);
}

using reader = void (*)(const char*, std::size_t);
constexpr reader readers[] = {
    one<tensor>,
    one<pull_request>,
    one<weights>,
    one<gradient>,
    one<push_ack>,
    one<shard_stats>,
    one<progress_report>,
    one<shard_checkpoint>,
    one<shard_range_t>,
    one<worker_assignment>,
    one<tensor_chunk>,
    one<ps_endpoint>,
    one<std::vector<ps_endpoint>>,
    one<engine_result>,
    one<checkpoint>,
    one<hello_args>,
    one<std::int64_t>,  // checkpoint_atom's step, and the int replies
    one<caf::error>,
    one<shard_actor>,
    one<chunked_shard_actor>,
    one<worker_actor>,
    one<coordinator_actor>,
    one<registrar_actor>,
    one<row_request>,
    one<row_block>,
    one<row_gradient>,
    one<table_stats>,
    one<sparse_assignment>,
    one<sparse_shard_actor>,
};
constexpr std::size_t num_readers = sizeof(readers) / sizeof(readers[0]);

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  readers[data[0] % num_readers](reinterpret_cast<const char*>(data) + 1, size - 1);
  return 0;
}
