// load_checkpoint and load_model (durable/) over a file made from the input. The first byte
// picks: bit 0 a model file (else a checkpoint); bit 1 the rest is a payload to wrap in a header
// with the right length and crc32s (else the rest is the whole file: header checks); bit 2
// load_checkpoint is given the job the header must name. Random bytes almost never pass a crc32,
// so the wrapped form is what reaches the Cereal payload parser. Bad input must end as
// checkpoint_error.
#include <zlib.h>

#include <string>

#include <actrain/checkpoint.hpp>

#include "fuzz/fuzz_support.hpp"

namespace {

/// The job text of wrapped files (the seeds' checkpoints are of this job).
constexpr const char* wrap_job = "fuzz job";

void put_le(std::string& s, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::uint32_t crc(const std::string& s, std::size_t at, std::size_t n) {
  return static_cast<std::uint32_t>(crc32(
      crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(s.data() + at), static_cast<uInt>(n)));
}

/// A file in the layout of durable/checkpoint_file.cpp (magic, version 1, kind, payload length,
/// payload crc32, job length, job, header crc32, payload) around `payload`.
std::string wrap(std::uint32_t kind, const std::string& payload) {
  std::string job = wrap_job;
  std::string file("ACTRAIN\0", 8);
  put_le(file, 1, 4);
  put_le(file, kind, 4);
  put_le(file, payload.size(), 8);
  put_le(file, crc(payload, 0, payload.size()), 4);
  put_le(file, job.size(), 4);
  file += job;
  put_le(file, crc(file, 0, file.size()), 4);
  return file + payload;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const unsigned bits = data[0];
  const bool model = bits & 1;
  std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string file = bits & 2 ? wrap(model ? 2 : 1, rest) : rest;
  static const std::string path = actrain::fuzz::scratch_path("file.bin");
  actrain::fuzz::write_file(path, file.data(), file.size());
  try {
    if (model) {
      auto m = actrain::load_model(path);
      FUZZ_CHECK(m.params.size() == actrain::num_params(m.spec));
    } else {
      auto c = actrain::load_checkpoint(path, bits & 4 ? wrap_job : "");
      FUZZ_CHECK(!(bits & 4) || c.job == wrap_job);
    }
  } catch (const actrain::checkpoint_error&) {
  }
  return 0;
}
