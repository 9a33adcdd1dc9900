// Checkpoint and model files on disk: bit-exact round trips of every optimizer's state, and every
// kind of damaged file refused with its cause while the previous good checkpoint is used.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include <actrain/checkpoint.hpp>
#include <actrain/optim.hpp>
#include "test/support/temp_dir.hpp"

namespace actrain {
namespace {

namespace fs = std::filesystem;
using checkpoint_files = test::temp_dir_test;

std::vector<float> noise(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

/// A shard of `kind` after a few steps, saved as a checkpoint would save it.
shard_checkpoint trained_shard(const std::string& kind, std::int32_t index) {
  optim_spec spec;
  spec.kind = kind;
  spec.lr = 0.05f;
  auto opt = make_optimizer(spec, 37);
  auto w = noise(37, 1);
  for (std::uint64_t s = 0; s < 5; ++s) {
    auto g = noise(37, 100 + s);
    opt->step(span<float>(w), g, spec.lr);
  }
  auto os = opt->state();
  return {index, 5, 5, w, os.steps, os.slots};
}

checkpoint sample_checkpoint(const std::string& kind) {
  checkpoint c;
  c.job = "ckpt-test; linear 10-1";
  c.sequence = 1;
  c.step = 5;
  c.samples = 320;
  c.seconds = 1.25;
  c.last_eval_step = 4;
  c.history = {progress_point{0, 4, 256, 1.0, 0.5, 0.25, 0.75}};
  c.shards = {trained_shard(kind, 0), trained_shard(kind, 1)};
  c.workers = {saved_worker{0, 0, 5, true, {saved_work{0, 160, 2}}},
               saved_worker{1, 0, 5, false, {saved_work{160, 320, 2}, saved_work{0, 10, 1}}}};
  return c;
}

std::string read_bytes(const fs::path& p) {
  return test::read_file(p);
}
void write_bytes(const fs::path& p, const std::string& b) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(b.data(), static_cast<std::streamsize>(b.size()));
}

std::string refusal_of(const fs::path& p, const std::string& job = "") {
  try {
    load_checkpoint(p.string(), job);
  } catch (const checkpoint_error& e) {
    return e.what();
  }
  return "";
}

TEST_F(checkpoint_files, every_optimizers_state_round_trips_bit_exact) {
  for (std::string kind : {"sgd", "momentum", "nesterov", "adagrad", "adam"}) {
    SCOPED_TRACE(kind);
    auto c = sample_checkpoint(kind);
    auto path = (dir_ / "c.bin").string();
    EXPECT_GT(save_checkpoint(path, c), 0);
    auto back = load_checkpoint(path, c.job);
    EXPECT_EQ(back.job, c.job);
    EXPECT_EQ(back.step, 5);
    EXPECT_EQ(back.samples, 320);
    EXPECT_DOUBLE_EQ(back.seconds, 1.25);
    ASSERT_EQ(back.history.size(), 1u);
    EXPECT_EQ(back.history[0].step, 4);
    EXPECT_DOUBLE_EQ(back.history[0].test_accuracy, 0.75);
    ASSERT_EQ(back.shards.size(), 2u);
    for (std::size_t s = 0; s < 2; ++s) {
      EXPECT_TRUE(same_bits(back.shards[s].values, c.shards[s].values));
      EXPECT_EQ(back.shards[s].opt_steps, c.shards[s].opt_steps);
      ASSERT_EQ(back.shards[s].opt_slots.size(), c.shards[s].opt_slots.size());
      for (std::size_t k = 0; k < c.shards[s].opt_slots.size(); ++k)
        EXPECT_TRUE(same_bits(back.shards[s].opt_slots[k], c.shards[s].opt_slots[k]));
    }
    ASSERT_EQ(back.workers.size(), 2u);
    EXPECT_FALSE(back.workers[1].alive);
    ASSERT_EQ(back.workers[1].work.size(), 2u);
    EXPECT_EQ(back.workers[1].work[1].end, 10);

    // The restored state steps exactly like the original.
    optim_spec spec;
    spec.kind = kind;
    spec.lr = 0.05f;
    auto a = make_optimizer(spec, 37), b = make_optimizer(spec, 37);
    a->restore({c.shards[0].opt_steps, c.shards[0].opt_slots});
    b->restore({back.shards[0].opt_steps, back.shards[0].opt_slots});
    auto wa = c.shards[0].values, wb = back.shards[0].values;
    auto g = noise(37, 999);
    a->step(span<float>(wa), g, spec.lr);
    b->step(span<float>(wb), g, spec.lr);
    EXPECT_TRUE(same_bits(wa, wb));
  }
}

TEST_F(checkpoint_files, the_write_is_atomic_and_leaves_no_temporary_file) {
  auto path = dir_ / "c.bin";
  save_checkpoint(path.string(), sample_checkpoint("adam"));
  auto c = sample_checkpoint("sgd");
  c.samples = 999;
  save_checkpoint(path.string(), c);
  EXPECT_EQ(load_checkpoint(path.string()).samples, 999);
  std::size_t entries = 0;
  for (auto& e : fs::directory_iterator(dir_)) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 1u);
  // A folder that cannot hold the file: the error names the path and the cause.
  write_bytes(dir_ / "plain", "x");
  try {
    save_checkpoint((dir_ / "plain" / "c.bin").string(), c);
    FAIL() << "wrote below a regular file";
  } catch (const checkpoint_error& e) {
    EXPECT_NE(std::string(e.what()).find("plain/c.bin"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Not a directory"), std::string::npos) << e.what();
  }
}

TEST_F(checkpoint_files, damaged_files_are_refused_naming_the_damage) {
  auto good = dir_ / "good.bin";
  save_checkpoint(good.string(), sample_checkpoint("adam"));
  auto bytes = read_bytes(good);
  auto bad = dir_ / "bad.bin";

  write_bytes(bad, bytes.substr(0, bytes.size() - 7));
  EXPECT_NE(refusal_of(bad).find("truncated"), std::string::npos) << refusal_of(bad);
  write_bytes(bad, bytes.substr(0, 20));
  EXPECT_NE(refusal_of(bad).find("truncated"), std::string::npos) << refusal_of(bad);
  write_bytes(bad, bytes + "extra");
  EXPECT_NE(refusal_of(bad).find("torn"), std::string::npos) << refusal_of(bad);
  write_bytes(bad, "");
  EXPECT_NE(refusal_of(bad).find("truncated"), std::string::npos) << refusal_of(bad);
  write_bytes(bad, "[job]\nname = \"not a checkpoint at all, just some text\"\n");
  EXPECT_NE(refusal_of(bad).find("not an actrain file"), std::string::npos) << refusal_of(bad);
  EXPECT_NE(refusal_of(dir_ / "missing.bin").find("cannot open"), std::string::npos);
  EXPECT_NE(refusal_of(good, "another job").find("belongs to another job"), std::string::npos);

  // One flipped bit anywhere is caught: the header by its crc32 (or a length it cannot hold),
  // the payload by its own crc32.
  for (std::size_t at :
       {std::size_t{9}, std::size_t{13}, std::size_t{30}, bytes.size() / 2, bytes.size() - 1}) {
    SCOPED_TRACE(at);
    auto flipped = bytes;
    flipped[at] = static_cast<char>(flipped[at] ^ 0x10);
    write_bytes(bad, flipped);
    auto why = refusal_of(bad);
    EXPECT_NE(why.find("damaged"), std::string::npos) << why;
    EXPECT_NE(why.find("bad.bin"), std::string::npos) << why;
  }
}

// A file whose checksums are right but whose payload claims a huge length (written by a buggy or
// hostile program): refused before anything of that size is allocated.
TEST_F(checkpoint_files, a_length_past_the_payload_is_refused_without_allocating_it) {
  auto path = dir_ / "c.bin";
  save_checkpoint(path.string(), sample_checkpoint("sgd"));
  auto b = read_bytes(path);
  auto le = [&](std::size_t at, int n) {
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i)
      v |= static_cast<std::uint64_t>(static_cast<unsigned char>(b[at + i])) << (8 * i);
    return v;
  };
  auto put = [&](std::size_t at, std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) b[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
  };
  auto job_len = le(28, 4);
  auto payload_at = 32 + job_len + 4;
  // Payload: cereal's endianness byte, the class version (u32), then the job text's length.
  put(payload_at + 5, std::uint64_t{1} << 60, 8);
  auto crc_of = [](const char* p, std::size_t n) {
    return crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(p), static_cast<uInt>(n));
  };
  put(24, crc_of(b.data() + payload_at, b.size() - payload_at), 4);
  put(32 + job_len, crc_of(b.data(), 32 + job_len), 4);
  write_bytes(path, b);
  auto why = refusal_of(path);
  EXPECT_NE(why.find("runs past the end of the payload"), std::string::npos) << why;
}

TEST_F(checkpoint_files, the_store_keeps_the_newest_and_falls_back_past_bad_ones) {
  checkpoint_store store(dir_.string(), 3);
  EXPECT_EQ(store.next_sequence(), 1);
  for (std::int64_t seq = 1; seq <= 5; ++seq) {
    auto c = sample_checkpoint("momentum");
    c.sequence = seq;
    c.samples = seq * 100;
    std::int64_t bytes = 0;
    auto path = store.write(c, &bytes);
    EXPECT_EQ(fs::file_size(path), static_cast<std::uintmax_t>(bytes));
  }
  auto files = store.files();
  ASSERT_EQ(files.size(), 3u);
  EXPECT_NE(files[0].find("checkpoint-00000005.bin"), std::string::npos);
  EXPECT_NE(files[2].find("checkpoint-00000003.bin"), std::string::npos);
  EXPECT_EQ(store.next_sequence(), 6);
  auto job = sample_checkpoint("sgd").job;
  EXPECT_EQ(store.latest(job)->samples, 500);

  // The newest is torn, the next flipped: the third is used, and both refusals are named.
  auto b5 = read_bytes(files[0]);
  write_bytes(files[0], b5.substr(0, b5.size() / 2));
  auto b4 = read_bytes(files[1]);
  b4[b4.size() - 3] = static_cast<char>(b4[b4.size() - 3] ^ 1);
  write_bytes(files[1], b4);
  std::vector<std::string> refused;
  auto c = store.latest(job, &refused);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->samples, 300);
  ASSERT_EQ(refused.size(), 2u);
  EXPECT_NE(refused[0].find("checkpoint-00000005.bin: truncated"), std::string::npos) << refused[0];
  EXPECT_NE(refused[1].find("crc32"), std::string::npos) << refused[1];
  // Another job's folder has nothing to resume from.
  refused.clear();
  EXPECT_FALSE(store.latest("another job", &refused).has_value());
  ASSERT_EQ(refused.size(), 3u);
  EXPECT_NE(refused[2].find("belongs to another job"), std::string::npos) << refused[2];
}

TEST_F(checkpoint_files, a_model_file_round_trips_and_must_match_its_model) {
  model_file m{model_spec("mlp", 4, 3, {5}), {}, "model-test", {}};
  m.params = noise(num_params(m.spec), 3);
  auto path = (dir_ / "model.bin").string();
  save_model(path, m);
  auto back = load_model(path);
  EXPECT_EQ(back.spec.kind, "mlp");
  EXPECT_EQ(back.spec.input_dim, 4);
  EXPECT_EQ(back.spec.output_dim, 3);
  EXPECT_EQ(back.spec.hidden, std::vector<int>{5});
  EXPECT_EQ(back.job, "model-test");
  EXPECT_TRUE(same_bits(back.params, m.params));
  EXPECT_TRUE(back.scaling.empty());

  // The data's standardization travels with the model, bit for bit; one that does not fit the
  // model's inputs is refused.
  m.scaling.mean = {1, 2, 3, 4};
  m.scaling.scale = {0.5f, 1, 2, 4};
  m.scaling.target = true;
  m.scaling.y_mean = -3;
  m.scaling.y_scale = 7;
  save_model(path, m);
  back = load_model(path);
  EXPECT_EQ(back.scaling.mean, m.scaling.mean);
  EXPECT_EQ(back.scaling.scale, m.scaling.scale);
  EXPECT_TRUE(back.scaling.target);
  EXPECT_EQ(back.scaling.y_mean, -3);
  EXPECT_EQ(back.scaling.y_scale, 7);
  m.scaling.mean.pop_back();
  save_model(path, m);
  try {
    load_model(path);
    FAIL() << "loaded a standardization for 3 of 4 inputs";
  } catch (const checkpoint_error& e) {
    EXPECT_NE(std::string(e.what()).find("standardization stored with the model does not fit"),
              std::string::npos)
        << e.what();
  }
  m.scaling = {};

  m.params.pop_back();
  save_model(path, m);
  try {
    load_model(path);
    FAIL() << "loaded a model with a parameter missing";
  } catch (const checkpoint_error& e) {
    EXPECT_NE(std::string(e.what()).find("has 43 parameters, the file holds 42"), std::string::npos)
        << e.what();
  }
  // A checkpoint is not a model file, and the other way round.
  save_checkpoint(path, sample_checkpoint("sgd"));
  EXPECT_THROW(load_model(path), checkpoint_error);
}

}  // namespace
}  // namespace actrain
