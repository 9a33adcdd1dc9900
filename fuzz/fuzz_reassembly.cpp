// Chunk reassembly (cluster/reassembly.cpp) driven by a script of operations read from the input
// with CAF's binary_deserializer: add(sender, tensor_chunk), take(sender, transfer),
// drop(sender), from three senders. The first byte sets the receiver: the slice length it expects
// (0: unknown, every chunk is refused) and whether open transfers may be evicted. Every tensor
// take() hands out must be exactly what the accepted chunks wrote, element for element (a gap would
// hand out the stale values of a recycled buffer): a shadow copy checks it while no transfer is
// evicted.
#include <cstring>
#include <map>
#include <utility>
#include <vector>

#include "cluster/chunking.hpp"
#include "fuzz/fuzz_support.hpp"

namespace {

using namespace actrain;

/// Three distinct senders: the null address and two actors of a system that never runs
/// (created once, never destroyed, as a fuzz process ends by exit or signal).
const std::vector<caf::actor_addr>& senders() {
  static const std::vector<caf::actor_addr> all = [] {
    auto* cfg = new caf::actor_system_config;
    cfg->set("scheduler.policy", caf::atom("testing"));
    auto* sys = new caf::actor_system(*cfg);
    auto idle = [] { return caf::behavior{[](std::int32_t) {}}; };
    return std::vector<caf::actor_addr>{caf::actor_addr{},
                                        caf::actor_cast<caf::actor_addr>(sys->spawn(idle)),
                                        caf::actor_cast<caf::actor_addr>(sys->spawn(idle))};
  }();
  return all;
}

struct shadow_transfer {
  std::vector<float> values;
  std::vector<bool> written;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const unsigned setup = data[0];
  static constexpr std::int64_t expected_sizes[] = {0, 1, 10, 1000};
  const std::int64_t expected = expected_sizes[setup & 3];
  // Eviction on: at most 1-4 open transfers, no shadow. Off: more room than the script has adds.
  const bool evicting = setup & 4;
  constexpr int max_adds = 64;
  const std::size_t max_open = evicting ? 1 + ((setup >> 3) & 3) : max_adds + 1;
  reassembly r(expected, max_open);
  std::map<std::pair<int, std::uint64_t>, shadow_transfer> shadow;
  auto& from = senders();
  caf::binary_deserializer script{nullptr, reinterpret_cast<const char*>(data) + 1, size - 1};
  int adds = 0;
  for (std::uint8_t op = 0; !script(op);) {
    const int who = (op >> 2) % 3;
    switch (op & 3) {
      case 0:
      case 1: {  // add
        tensor_chunk c;
        if (script(c) || ++adds > max_adds) return 0;
        if (r.add(from[who], c)) break;  // refused
        if (evicting) break;
        std::int64_t total = 0;
        FUZZ_CHECK(try_shape_numel(c.shape, total));
        FUZZ_CHECK(expected > 0 && total == expected);
        auto& s = shadow[{who, c.transfer}];
        s.values.resize(static_cast<std::size_t>(total));
        s.written.resize(static_cast<std::size_t>(total));
        for (std::size_t i = 0; i < c.part.size(); ++i) {
          auto at = static_cast<std::size_t>(c.offset) + i;
          FUZZ_CHECK(at < s.values.size());
          FUZZ_CHECK(!s.written[at]);  // chunks never overlap
          s.values[at] = c.part[i];
          s.written[at] = true;
        }
        break;
      }
      case 2: {  // take
        std::uint64_t transfer = 0;
        if (script(transfer)) return 0;
        auto t = r.take(from[who], transfer);
        if (!t) break;
        std::int64_t total = 0;
        FUZZ_CHECK(try_shape_numel(t->shape(), total));
        FUZZ_CHECK(total == static_cast<std::int64_t>(t->size()));
        FUZZ_CHECK(expected > 0 && total == expected);
        if (evicting) break;
        auto it = shadow.find({who, transfer});
        FUZZ_CHECK(it != shadow.end());  // a finished transfer had accepted chunks
        auto& s = it->second;
        FUZZ_CHECK(s.values.size() == t->size());
        for (std::size_t i = 0; i < s.values.size(); ++i) {
          FUZZ_CHECK(s.written[i]);  // no gap
          FUZZ_CHECK(std::memcmp(&s.values[i], t->data() + i, sizeof(float)) == 0);
        }
        shadow.erase(it);
        break;
      }
      case 3: {  // drop: the sender went down
        r.drop(from[who]);
        if (evicting) break;
        for (auto it = shadow.begin(); it != shadow.end();)
          it = it->first.first == who ? shadow.erase(it) : std::next(it);
        break;
      }
    }
  }
  return 0;
}
