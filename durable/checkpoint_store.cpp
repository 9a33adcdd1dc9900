#include <actrain/checkpoint.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "durable/atomic_file.hpp"

namespace actrain {

namespace fs = std::filesystem;

std::string job_fingerprint(const job_spec& job) {
  std::ostringstream s;
  s.precision(9);
  s << job.name << "; " << describe(job.model);
  for (auto& kv : job.model.options) s << " " << kv.first << "=" << kv.second;
  auto& o = job.optim;
  s << "; " << o.kind << " lr " << o.lr << " mom " << o.momentum << " b1 " << o.beta1 << " b2 "
    << o.beta2 << " eps " << o.eps << " wd " << o.weight_decay << " " << o.schedule;
  for (auto& kv : o.options) s << " " << kv.first << "=" << kv.second;
  s << "; data " << job.data.kind << " " << job.data.path << " " << job.data.rows << " "
    << job.data.train_subset << "; " << job.mode << " workers " << job.workers << " shards "
    << job.shards << " batch " << job.batch << " epochs " << job.epochs << " seed " << job.seed;
  return s.str();
}

namespace {

constexpr const char* prefix = "checkpoint-";
constexpr const char* suffix = ".bin";

/// The sequence number in `checkpoint-<n>.bin`, or -1 for any other name.
std::int64_t sequence_of(const std::string& name) {
  std::string p = prefix, x = suffix;
  if (name.size() <= p.size() + x.size() || name.compare(0, p.size(), p) != 0 ||
      name.compare(name.size() - x.size(), x.size(), x) != 0)
    return -1;
  auto digits = name.substr(p.size(), name.size() - p.size() - x.size());
  if (digits.empty() || digits.size() > 18 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return -1;
  return std::stoll(digits);
}

}  // namespace

checkpoint_store::checkpoint_store(std::string dir, int keep) : dir_(std::move(dir)), keep_(keep) {
  if (keep_ < 1) throw checkpoint_error("[checkpoint] keep must be >= 1");
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec || !fs::is_directory(dir_))
    throw checkpoint_error(
        dir_ + ": cannot create the checkpoint folder: " + (ec ? ec.message() : "not a folder"));
}

namespace {

/// (sequence, path) of every checkpoint file in dir, highest sequence first.
std::vector<std::pair<std::int64_t, std::string>> listing(const std::string& dir) {
  std::vector<std::pair<std::int64_t, std::string>> found;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(dir, ec)) {
    auto n = sequence_of(e.path().filename().string());
    if (n >= 0 && e.is_regular_file()) found.emplace_back(n, e.path().string());
  }
  std::sort(found.begin(), found.end(), [](auto& a, auto& b) { return a.first > b.first; });
  return found;
}

}  // namespace

std::vector<std::string> checkpoint_store::files() const {
  std::vector<std::string> out;
  for (auto& f : listing(dir_)) out.push_back(f.second);
  return out;
}

std::int64_t checkpoint_store::next_sequence() const {
  auto all = listing(dir_);
  return all.empty() ? 1 : all.front().first + 1;
}

std::string checkpoint_store::write(const checkpoint& c, std::int64_t* bytes) {
  char name[64];
  std::snprintf(name, sizeof name, "%s%08lld%s", prefix, static_cast<long long>(c.sequence),
                suffix);
  auto path = (fs::path(dir_) / name).string();
  auto n = save_checkpoint(path, c);
  if (bytes) *bytes = n;
  auto all = files();
  bool removed = false;
  for (std::size_t i = static_cast<std::size_t>(keep_); i < all.size(); ++i) {
    std::error_code ec;
    removed |= fs::remove(all[i], ec);
  }
  if (removed) durable::sync_folder(dir_);
  return path;
}

std::optional<checkpoint> checkpoint_store::latest(const std::string& job,
                                                   std::vector<std::string>* refused) const {
  for (auto& f : files()) {
    try {
      return load_checkpoint(f, job);
    } catch (const checkpoint_error& e) {
      if (refused) refused->push_back(e.what());
    }
  }
  return std::nullopt;
}

}  // namespace actrain
