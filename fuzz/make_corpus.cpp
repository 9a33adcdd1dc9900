// Writes the seed corpora of fuzz/corpus/ from real, valid inputs: the job files of config/,
// small CSV and LIBSVM files, IDX files (plain and gzipped), a checkpoint and a model file written
// by save_checkpoint / save_model, a serialized value of every wire type, and reassembly scripts.
// Usage: fuzz_make_corpus SOURCE_DIR (the repository; replaces the files it writes, keeps others).
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <actrain/checkpoint.hpp>
#include <actrain/protocol.hpp>

namespace fs = std::filesystem;
using namespace actrain;

namespace {

fs::path corpus;

void put(const std::string& target, const std::string& name, const std::string& bytes) {
  auto dir = corpus / target;
  fs::create_directories(dir);
  std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
  out << bytes;
  if (!out) throw std::runtime_error("cannot write " + (dir / name).string());
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string gzipped(const std::string& raw) {
  z_stream z{};
  if (deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("deflateInit2");
  std::string out(deflateBound(&z, raw.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  z.avail_in = static_cast<uInt>(raw.size());
  z.next_out = reinterpret_cast<Bytef*>(&out[0]);
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

/// Actor handles and errors are written with an actor system's context, as on a node (main's).
caf::actor_system* sys = nullptr;
caf::actor_system& system() {
  return *sys;
}

template <class... Ts>
std::string serialized(Ts... xs) {
  std::vector<char> buf;
  caf::binary_serializer sink{system(), buf};
  if (auto err = sink(xs...)) throw std::runtime_error("serialize: " + caf::to_string(err));
  return {buf.begin(), buf.end()};
}

std::string be32(std::uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

void job_files(const fs::path& source) {
  for (auto& e : fs::directory_iterator(source / "config"))
    if (e.path().extension() == ".ini")
      put("job_ini", e.path().filename().string(), read(e.path()));
}

void csv_files() {
  // The first byte is the target's options (fuzz_csv.cpp): bit 0 header, bits 1-2 delimiter,
  // bits 3-4 label column, bits 5-7 class count.
  put("csv", "header_last_label", std::string("\x01", 1) + "x1,x2,y\n1.5,2,0.25\n-3,4e2,1\n");
  put("csv", "classes_by_name",
      std::string("\x99", 1) + "label,a,b\r\n0,1,2\r\n2,3,4\r\n1,-1,0.5\r\n");
  put("csv", "no_header_semicolon", std::string("\x02", 1) + "1;2;3\n4;5;6\n\n7;8;9\n");
  put("csv", "bom_first_column", std::string("\x49", 1) + "\xEF\xBB\xBFy,a\n1,2\n0,3\n");
}

void libsvm_files() {
  // The first byte is the target's options (fuzz_libsvm.cpp): bits 0-1 hash buckets (none, 1, 7,
  // 2^20), bits 2-3 entry limit (0, 1, 16, 1000).
  put("libsvm", "one_hot_unhashed",
      std::string("\x0c", 1) + "1 3:1 7:1 12:1\n0 1:1 7:1\n-1 2:1\n+1 5:1 9:1 12:1\n");
  put("libsvm", "values_comments_crlf",
      std::string("\x0c", 1) + "# label id:value ...\r\n" +
          "1 1:0.5 4:-2.25e-3\t9:1e6 # trailing\r\n\r\n0 2:+3 4:1\r\n1\r\n");
  put("libsvm", "hashed_collisions",
      std::string("\x0e", 1) + "1 3:1 10:2 17:0.5 4:1\n0 7:1 14:1 21:1\n1 6:-1 13:1\n");
  put("libsvm", "hashed_wide_ids",
      std::string("\x0f", 1) + "1 18446744073709551615:1 1048576:2 3:1\n0 4294967296:0.25\n");
}

void idx_files() {
  // images: magic 0x803, 2 images of 2x3; labels: magic 0x801, 2 labels.
  std::string images = be32(0x803) + be32(2) + be32(2) + be32(3);
  for (int i = 0; i < 12; ++i) images.push_back(static_cast<char>(i * 21));
  std::string labels = be32(0x801) + be32(2) + std::string("\x03\x09", 2);
  auto file = [](const std::string& im, const std::string& lb) {
    std::string len{static_cast<char>(im.size() & 0xff), static_cast<char>(im.size() >> 8)};
    return len + im + lb;
  };
  put("idx", "plain", file(images, labels));
  put("idx", "gzipped", file(gzipped(images), gzipped(labels)));
  put("idx", "gzipped_images", file(gzipped(images), labels));
}

void checkpoint_files() {
  auto dir = fs::temp_directory_path() / "actrain-make-corpus";
  fs::create_directories(dir);
  checkpoint c;
  c.job = "fuzz job";
  c.sequence = 2;
  c.step = 8;
  c.samples = 64;
  c.seconds = 0.5;
  c.history.push_back(progress_point{1, 8, 64, 0.5, 0.7, 0.6, 0.75});
  shard_checkpoint s;
  s.shard = 0;
  s.version = 8;
  s.step = 8;
  s.values = {0.5f, -1.f, 2.f};
  s.opt_steps = 8;
  s.opt_slots = {{0.1f, 0.2f, 0.3f}};
  c.shards = {s};
  saved_worker w;
  w.worker = 0;
  w.step = 8;
  w.work = {saved_work{0, 64, 1}};
  c.workers = {w};
  save_checkpoint((dir / "c.bin").string(), c);
  model_file m;
  m.spec = model_spec("mlp", 2, 2, {2});
  m.params.assign(num_params(m.spec), 0.25f);
  m.job = "fuzz job";
  save_model((dir / "m.bin").string(), m);
  auto cfile = read(dir / "c.bin"), mfile = read(dir / "m.bin");
  fs::remove_all(dir);
  // The payload starts after the 32-byte fixed header, the job text and the header crc32.
  auto payload = [](const std::string& f) { return f.substr(32 + 8 + 4); };
  // The first byte (fuzz_checkpoint.cpp): bit 0 model, bit 1 wrap the payload, bit 2 expect the
  // job.
  put("checkpoint", "checkpoint_file", std::string("\x00", 1) + cfile);
  put("checkpoint", "checkpoint_file_of_job", std::string("\x04", 1) + cfile);
  put("checkpoint", "checkpoint_payload", std::string("\x02", 1) + payload(cfile));
  put("checkpoint", "model_file", std::string("\x01", 1) + mfile);
  put("checkpoint", "model_payload", std::string("\x03", 1) + payload(mfile));
}

void wire_files() {
  // The first byte is the type's index in fuzz_wire.cpp's readers[].
  int index = 0;
  auto one = [&index](const std::string& name, auto value) {
    put("wire", (index < 10 ? "0" : "") + std::to_string(index) + "_" + name,
        std::string(1, static_cast<char>(index)) + serialized(value));
    ++index;
  };
  tensor t({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}, {2, 3});
  one("tensor", t);
  one("pull_request", pull_request{1, 7});
  one("weights", weights{0, 3, t, 0});
  one("gradient", gradient{1, 7, 3, 32, tensor({0.5f, -0.5f}), 0});
  one("push_ack", push_ack{4, 1, true});
  shard_stats st;
  st.shard = 1;
  st.version = 9;
  st.staleness_histogram = {3, 1};
  st.waiting_for = {0, 2};
  one("shard_stats", st);
  one("progress_report", progress_report{1, 10, 64, 12.5, 0.25, 2, false, 0});
  shard_checkpoint sc;
  sc.values = {1.f, 2.f};
  sc.opt_slots = {{0.f, 1.f}};
  one("shard_checkpoint", sc);
  one("shard_range", shard_range_t{0, 128});
  worker_assignment wa;
  wa.ranges = {{0, 10}, {10, 20}};
  wa.rows = {{0, 100}};
  wa.epochs = 2;
  one("worker_assignment", wa);
  one("tensor_chunk", tensor_chunk{5, 1, 3, 4, {10}, tensor({4.f, 5.f, 6.f, 7.f})});
  one("ps_endpoint", ps_endpoint{"127.0.0.1", 4242});
  one("ps_endpoints", std::vector<ps_endpoint>{{"10.0.0.1", 1}, {"", 0}});
  engine_result er;
  er.ok = true;
  er.params = {1.f, 2.f};
  er.history = {progress_point{1, 2, 3, 4, 5, 6, 7}};
  er.shards = {st};
  er.last_checkpoint = "run/checkpoint-1.bin";
  one("engine_result", er);
  checkpoint c;
  c.job = "job";
  c.shards = {sc};
  c.workers = {saved_worker{0, 0, 4, true, {saved_work{0, 10, 1}}}};
  one("checkpoint", c);
  // hello: role, token, protocol version, byte-order probe, node name.
  {
    std::string role = "worker", token = "secret", name = "node-1";
    std::uint32_t version = protocol_version;
    tensor probe({1.f, -2.f, 3.5f});
    put("wire", "15_hello",
        std::string(1, static_cast<char>(index)) + serialized(role, token, version, probe, name));
    ++index;
  }
  one("int64", std::int64_t{-1});
  one("error", make_error(errc::bad_length, "shard 1 expects 512 values, got 511"));
  one("shard_actor", shard_actor{});
  // A live handle: from the fuzz target's point of view, an actor of another node.
  auto live = caf::actor_cast<caf::actor>(system().spawn([] { return caf::behavior{[](int) {}}; }));
  put("wire", "18_shard_actor_of_a_node",
      std::string(1, static_cast<char>(18)) + serialized(caf::actor_cast<shard_actor>(live)));
  caf::anon_send_exit(live, caf::exit_reason::user_shutdown);
  // The sparse messages, after the four handles without seeds (indices 19-22).
  index = 23;
  one("row_request", row_request{2, 5, {7, 42, 1000000}});
  one("row_block", row_block{1, 9, {0.5f, -0.25f, 1.f}, {3, 0, 1}});
  row_gradient rg;
  rg.worker = 3;
  rg.step = 8;
  rg.rows = 256;
  rg.ids = {7, 42};
  rg.base_versions = {3, 0};
  rg.values = {0.125f, -1.f};
  one("row_gradient", rg);
  table_stats ts;
  ts.shard = 1;
  ts.rows_held = 2;
  ts.mean_staleness = 0.5;
  ts.hot_ids = {42, 7};
  ts.hot_counts = {10, 3};
  one("table_stats", ts);
  sparse_assignment sa;
  sa.worker = 1;
  sa.rows = {{0, 100}};
  sa.epochs = 2;
  one("sparse_assignment", sa);
  one("sparse_shard_actor", sparse_shard_actor{});
}

void reassembly_files() {
  // fuzz_reassembly.cpp: the first byte sets the receiver (bits 0-1 expected length: 0, 1, 10,
  // 1000; bit 2 eviction); then operations: 0 add + chunk, 2 take + transfer, 3 drop (the
  // sender is (op >> 2) % 3).
  auto chunk = [](std::uint8_t op, std::uint64_t transfer, std::int32_t index, std::int32_t count,
                  std::int64_t offset, std::vector<float> part) {
    tensor_chunk c{transfer, index, count, offset, {10}, tensor(std::move(part))};
    return serialized(op, c);
  };
  auto take = [](std::uint8_t op, std::uint64_t transfer) { return serialized(op, transfer); };
  std::string whole = chunk(0, 1, 0, 3, 0, {0, 1, 2, 3}) + chunk(0, 1, 2, 3, 8, {8, 9}) +
                      chunk(0, 1, 1, 3, 4, {4, 5, 6, 7}) + take(2, 1);
  put("reassembly", "three_chunks_of_10", std::string("\x02", 1) + whole);
  put("reassembly", "any_length", std::string("\x00", 1) + whole);
  put("reassembly", "two_senders_and_a_drop",
      std::string("\x02", 1) + chunk(4, 7, 0, 2, 0, {1, 2, 3, 4, 5}) +
          chunk(0, 7, 1, 2, 5, {6, 7, 8, 9, 10}) + serialized(std::uint8_t{7}) + take(2, 7) +
          take(6, 7));
  put("reassembly", "evicting",
      std::string("\x06", 1) + chunk(0, 1, 0, 2, 0, {1, 2, 3, 4, 5}) +
          chunk(0, 2, 0, 2, 0, {1, 2, 3, 4, 5}) + chunk(0, 1, 1, 2, 5, {6, 7, 8, 9, 10}) +
          take(2, 1) + take(2, 2));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s SOURCE_DIR\n", argv[0]);
    return 2;
  }
  caf::actor_system_config cfg;
  caf::actor_system system{cfg};
  sys = &system;
  corpus = fs::path(argv[1]) / "fuzz" / "corpus";
  job_files(argv[1]);
  csv_files();
  libsvm_files();
  idx_files();
  checkpoint_files();
  wire_files();
  reassembly_files();
  std::printf("wrote the seed corpora under %s\n", corpus.c_str());
  return 0;
}
