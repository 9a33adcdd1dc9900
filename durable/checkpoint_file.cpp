// Checkpoint and model files: a fixed header checked before anything else, then a Cereal
// portable binary payload (little-endian, fixed-width integers, versioned save/load pairs)
// guarded by a zlib crc32.
//
// Layout (all integers little-endian):
//   0  8 bytes  magic "ACTRAIN\0"
//   8  u32      format version (1)
//  12  u32      kind (1 checkpoint, 2 model)
//  16  u64      payload length
//  24  u32      payload crc32
//  28  u32      job length (<= 4096)
//  32  ...      job text
//  ..  u32      crc32 of everything above
//  ..  ...      payload
#include <actrain/checkpoint.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <zlib.h>
#include <cereal/archives/portable_binary.hpp>

#include "durable/atomic_file.hpp"

namespace actrain {

namespace {

constexpr char magic[8] = {'A', 'C', 'T', 'R', 'A', 'I', 'N', '\0'};
constexpr std::uint32_t format_version = 1;
constexpr std::uint32_t kind_checkpoint = 1;
constexpr std::uint32_t kind_model = 2;
constexpr std::uint32_t max_job_text = 4096;
constexpr std::size_t fixed_header = 32;

std::uint32_t crc(const char* p, std::size_t n) {
  uLong c = crc32(0L, Z_NULL, 0);
  // crc32 takes a uInt length: feed large payloads in pieces.
  while (n > 0) {
    auto part = static_cast<uInt>(std::min<std::size_t>(n, 1u << 30));
    c = crc32(c, reinterpret_cast<const Bytef*>(p), part);
    p += part;
    n -= part;
  }
  return static_cast<std::uint32_t>(c);
}

void put_u32(std::string& s, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put_u64(std::string& s, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
std::uint64_t get_le(const std::string& s, std::size_t at, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= static_cast<std::uint64_t>(static_cast<unsigned char>(s[at + i])) << (8 * i);
  return v;
}

// Loads never trust a length from the file beyond the bytes the payload holds: a length that
// claims more is refused before anything is allocated for it.
thread_local std::uint64_t payload_budget = 0;

std::uint64_t checked_size(cereal::PortableBinaryInputArchive& ar, std::uint64_t elem_size) {
  cereal::size_type n = 0;
  ar(cereal::make_size_tag(n));
  if (elem_size > 0 && n > payload_budget / elem_size)
    throw checkpoint_error("a length of " + std::to_string(n) +
                           " items runs past the end of the payload");
  return n;
}

template <class A>
void save_floats(A& ar, const std::vector<float>& v) {
  ar(cereal::make_size_tag(static_cast<cereal::size_type>(v.size())));
  ar(cereal::binary_data(v.data(), v.size() * sizeof(float)));
}
void load_floats(cereal::PortableBinaryInputArchive& ar, std::vector<float>& v) {
  v.resize(checked_size(ar, sizeof(float)));
  ar(cereal::binary_data(v.data(), v.size() * sizeof(float)));
}
template <class A>
void save_text(A& ar, const std::string& s) {
  ar(cereal::make_size_tag(static_cast<cereal::size_type>(s.size())));
  ar(cereal::binary_data(s.data(), s.size()));
}
void load_text(cereal::PortableBinaryInputArchive& ar, std::string& s) {
  s.resize(checked_size(ar, 1));
  ar(cereal::binary_data(&s[0], s.size()));
}
/// A count of items each at least `min_bytes` long in the archive.
template <class V>
void load_count(cereal::PortableBinaryInputArchive& ar, V& v, std::uint64_t min_bytes) {
  v.resize(checked_size(ar, min_bytes));
}
template <class A>
void save_count(A& ar, std::size_t n) {
  ar(cereal::make_size_tag(static_cast<cereal::size_type>(n)));
}

}  // namespace

// Cereal save/load pairs. Saving takes const references (never mutates); every integer has a
// fixed width in the archive.
template <class A>
void save(A& ar, const progress_point& p, const std::uint32_t) {
  ar(static_cast<std::int32_t>(p.epoch), p.step, p.samples, p.seconds, p.train_loss, p.test_loss,
     p.test_accuracy);
}
template <class A>
void load(A& ar, progress_point& p, const std::uint32_t) {
  std::int32_t epoch = 0;
  ar(epoch, p.step, p.samples, p.seconds, p.train_loss, p.test_loss, p.test_accuracy);
  p.epoch = epoch;
}

template <class A>
void save(A& ar, const shard_checkpoint& s, const std::uint32_t) {
  ar(s.shard, s.version, s.step, s.opt_steps);
  save_floats(ar, s.values);
  save_count(ar, s.opt_slots.size());
  for (auto& slot : s.opt_slots) save_floats(ar, slot);
}
template <class A>
void load(A& ar, shard_checkpoint& s, const std::uint32_t) {
  ar(s.shard, s.version, s.step, s.opt_steps);
  load_floats(ar, s.values);
  load_count(ar, s.opt_slots, 8);
  for (auto& slot : s.opt_slots) load_floats(ar, slot);
}

template <class A>
void save(A& ar, const saved_worker& w, const std::uint32_t) {
  ar(w.worker, w.start_step, w.step, static_cast<std::uint8_t>(w.alive ? 1 : 0));
  save_count(ar, w.work.size());
  for (auto& r : w.work) ar(r.begin, r.end, r.epochs);
}
template <class A>
void load(A& ar, saved_worker& w, const std::uint32_t) {
  std::uint8_t alive = 0;
  ar(w.worker, w.start_step, w.step, alive);
  w.alive = alive != 0;
  load_count(ar, w.work, 24);
  for (auto& r : w.work) ar(r.begin, r.end, r.epochs);
}

template <class A>
void save(A& ar, const checkpoint& c, const std::uint32_t) {
  save_text(ar, c.job);
  ar(c.sequence, c.step, c.samples, c.seconds, c.next_eval_samples, c.last_eval_step);
  save_count(ar, c.history.size());
  for (auto& p : c.history) ar(p);
  save_count(ar, c.shards.size());
  for (auto& s : c.shards) ar(s);
  save_count(ar, c.workers.size());
  for (auto& w : c.workers) ar(w);
}
template <class A>
void load(A& ar, checkpoint& c, const std::uint32_t) {
  load_text(ar, c.job);
  ar(c.sequence, c.step, c.samples, c.seconds, c.next_eval_samples, c.last_eval_step);
  load_count(ar, c.history, 52);
  for (auto& p : c.history) ar(p);
  load_count(ar, c.shards, 36);
  for (auto& s : c.shards) ar(s);
  load_count(ar, c.workers, 29);
  for (auto& w : c.workers) ar(w);
}

template <class A>
void save(A& ar, const model_file& m, const std::uint32_t) {
  save_text(ar, m.job);
  save_text(ar, m.spec.kind);
  ar(static_cast<std::int32_t>(m.spec.input_dim), static_cast<std::int32_t>(m.spec.output_dim));
  save_count(ar, m.spec.hidden.size());
  for (int h : m.spec.hidden) ar(static_cast<std::int32_t>(h));
  save_count(ar, m.spec.options.size());
  for (auto& kv : m.spec.options) {
    save_text(ar, kv.first);
    save_text(ar, kv.second);
  }
  save_floats(ar, m.params);
  // Version 2: the data's standardization.
  save_floats(ar, m.scaling.mean);
  save_floats(ar, m.scaling.scale);
  ar(static_cast<std::uint8_t>(m.scaling.target), m.scaling.y_mean, m.scaling.y_scale);
}
template <class A>
void load(A& ar, model_file& m, const std::uint32_t version) {
  load_text(ar, m.job);
  load_text(ar, m.spec.kind);
  std::int32_t in = 0, out = 0;
  ar(in, out);
  m.spec.input_dim = in;
  m.spec.output_dim = out;
  load_count(ar, m.spec.hidden, 4);
  for (auto& h : m.spec.hidden) {
    std::int32_t v = 0;
    ar(v);
    h = v;
  }
  cereal::size_type n = checked_size(ar, 16);
  for (cereal::size_type i = 0; i < n; ++i) {
    std::string k, v;
    load_text(ar, k);
    load_text(ar, v);
    m.spec.options[k] = v;
  }
  load_floats(ar, m.params);
  if (version >= 2) {
    load_floats(ar, m.scaling.mean);
    load_floats(ar, m.scaling.scale);
    std::uint8_t target = 0;
    ar(target, m.scaling.y_mean, m.scaling.y_scale);
    m.scaling.target = target != 0;
    const bool features_match =
        m.scaling.mean.empty() ||
        (m.scaling.mean.size() == static_cast<std::size_t>(m.spec.input_dim) &&
         m.scaling.scale.size() == m.scaling.mean.size());
    if (!features_match || !(m.scaling.y_scale > 0))
      throw checkpoint_error("the standardization stored with the model does not fit it");
  }
}

}  // namespace actrain

CEREAL_CLASS_VERSION(actrain::progress_point, 1)
CEREAL_CLASS_VERSION(actrain::shard_checkpoint, 1)
CEREAL_CLASS_VERSION(actrain::saved_worker, 1)
CEREAL_CLASS_VERSION(actrain::checkpoint, 1)
CEREAL_CLASS_VERSION(actrain::model_file, 2)

namespace actrain {

namespace {

template <class T>
std::int64_t save_file(const std::string& path, std::uint32_t kind, const std::string& job,
                       const T& value) {
  std::ostringstream payload_stream(std::ios::binary);
  {
    cereal::PortableBinaryOutputArchive ar(payload_stream);
    ar(value);
  }
  auto payload = payload_stream.str();
  auto job_text = job.substr(0, max_job_text);
  std::string file(magic, sizeof magic);
  put_u32(file, format_version);
  put_u32(file, kind);
  put_u64(file, payload.size());
  put_u32(file, crc(payload.data(), payload.size()));
  put_u32(file, static_cast<std::uint32_t>(job_text.size()));
  file += job_text;
  put_u32(file, crc(file.data(), file.size()));
  file += payload;
  durable::write_atomically(path, file);
  return static_cast<std::int64_t>(file.size());
}

std::string read_whole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw checkpoint_error(path + ": cannot open: " + std::strerror(errno));
  in.seekg(0, std::ios::end);
  auto size = in.tellg();
  if (size < 0) throw checkpoint_error(path + ": cannot read its size");
  std::string bytes(static_cast<std::size_t>(size), '\0');
  in.seekg(0);
  in.read(&bytes[0], size);
  if (!in) throw checkpoint_error(path + ": read failed");
  return bytes;
}

const char* kind_name(std::uint32_t k) {
  return k == kind_checkpoint ? "checkpoint" : k == kind_model ? "model file" : "unknown kind";
}

/// Checks the header and payload checksum; returns the payload's offset and the file's job text.
std::pair<std::size_t, std::string> check_file(const std::string& path, const std::string& bytes,
                                               std::uint32_t want_kind) {
  auto fail = [&path](const std::string& why) { throw checkpoint_error(path + ": " + why); };
  if (bytes.size() < fixed_header + 4) {
    if (bytes.size() >= sizeof magic && std::memcmp(bytes.data(), magic, sizeof magic) != 0)
      fail("not an actrain file (no ACTRAIN header)");
    fail("truncated: " + std::to_string(bytes.size()) + " bytes, shorter than the header");
  }
  if (std::memcmp(bytes.data(), magic, sizeof magic) != 0)
    fail("not an actrain file (no ACTRAIN header)");
  auto version = static_cast<std::uint32_t>(get_le(bytes, 8, 4));
  auto kind = static_cast<std::uint32_t>(get_le(bytes, 12, 4));
  auto length = get_le(bytes, 16, 8);
  auto payload_crc = static_cast<std::uint32_t>(get_le(bytes, 24, 4));
  auto job_len = static_cast<std::uint32_t>(get_le(bytes, 28, 4));
  if (job_len > max_job_text || bytes.size() < fixed_header + job_len + 4)
    fail("the header is damaged (job text of " + std::to_string(job_len) + " bytes)");
  auto header_end = fixed_header + job_len;
  auto header_crc = static_cast<std::uint32_t>(get_le(bytes, header_end, 4));
  if (crc(bytes.data(), header_end) != header_crc)
    fail("the header fails its crc32 check (the file is damaged)");
  if (version != format_version)
    fail("format version " + std::to_string(version) + ", this build reads version " +
         std::to_string(format_version));
  if (kind != want_kind)
    fail(std::string("is a ") + kind_name(kind) + ", not a " + kind_name(want_kind));
  auto payload_at = header_end + 4;
  if (bytes.size() - payload_at != length)
    fail("truncated or torn: the header promises " + std::to_string(length) +
         " payload bytes, the file holds " + std::to_string(bytes.size() - payload_at));
  if (crc(bytes.data() + payload_at, length) != payload_crc)
    fail("the payload fails its crc32 check (the file is damaged)");
  return {payload_at, bytes.substr(fixed_header, job_len)};
}

template <class T>
T parse_payload(const std::string& path, const std::string& bytes, std::size_t at) {
  std::istringstream in(bytes.substr(at), std::ios::binary);
  payload_budget = bytes.size() - at;
  T value;
  try {
    cereal::PortableBinaryInputArchive ar(in);
    ar(value);
  } catch (const checkpoint_error& e) {
    throw checkpoint_error(path + ": " + e.what());
  } catch (const std::exception& e) {
    throw checkpoint_error(path + ": the payload does not parse: " + e.what());
  }
  if (in.peek() != std::char_traits<char>::eof())
    throw checkpoint_error(path + ": bytes left over after the payload");
  return value;
}

}  // namespace

std::int64_t save_checkpoint(const std::string& path, const checkpoint& c) {
  return save_file(path, kind_checkpoint, c.job, c);
}

checkpoint load_checkpoint(const std::string& path, const std::string& job) {
  auto bytes = read_whole(path);
  auto [at, file_job] = check_file(path, bytes, kind_checkpoint);
  if (!job.empty() && file_job != job)
    throw checkpoint_error(path + ": belongs to another job (" + file_job + "), not (" + job + ")");
  auto c = parse_payload<checkpoint>(path, bytes, at);
  if (c.job != file_job) throw checkpoint_error(path + ": the header and payload name other jobs");
  return c;
}

std::int64_t save_model(const std::string& path, const model_file& m) {
  return save_file(path, kind_model, m.job, m);
}

model_file load_model(const std::string& path) {
  auto bytes = read_whole(path);
  auto at = check_file(path, bytes, kind_model).first;
  auto m = parse_payload<model_file>(path, bytes, at);
  std::size_t want = 0;
  try {
    validate(m.spec);
    want = num_params(m.spec);
  } catch (const std::exception& e) {
    throw checkpoint_error(path + ": its model cannot be built here: " + e.what());
  }
  if (m.params.size() != want)
    throw checkpoint_error(path + ": " + describe(m.spec) + " has " + std::to_string(want) +
                           " parameters, the file holds " + std::to_string(m.params.size()));
  return m;
}

}  // namespace actrain
