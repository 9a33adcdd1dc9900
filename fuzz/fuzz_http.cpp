// One HTTP request's bytes, parsed and answered as a connection of the metrics endpoint does
// (observe::answer_raw_request: Beast's parser under the server's limits, then the routing).
// Every answer is a well-formed reply: a status the server sends, a content type, a body within
// bounds; a request never makes it allocate past the limits.
#include <string_view>

#include "fuzz/fuzz_support.hpp"
#include "observe/http_server.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static actrain::observe::metrics_hub hub;  // an idle job: nothing measured yet
  actrain::observe::http_limits limits;
  limits.header_bytes = 8 * 1024;  // small limits, so the fuzzer reaches them
  limits.body_bytes = 4 * 1024;
  auto reply = actrain::observe::answer_raw_request(
      hub, std::string_view(reinterpret_cast<const char*>(data), size), limits);
  if (!reply) return 0;  // incomplete: the server waits for more or closes
  const unsigned s = reply->status;
  FUZZ_CHECK(s == 200 || s == 400 || s == 404 || s == 405 || s == 413 || s == 431 || s == 500);
  FUZZ_CHECK(!reply->content_type.empty());
  FUZZ_CHECK(s != 200 || !reply->body.empty());
  FUZZ_CHECK(reply->body.size() < (1u << 20));
  return 0;
}
