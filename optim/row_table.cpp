#include "optim/row_table.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "tensor/mix.hpp"

namespace actrain {

void validate(const table_spec& t) {
  auto bad = [](const std::string& what) { throw std::invalid_argument("table." + what); };
  if (t.rows == 0) bad("rows: must be > 0");
  if (t.dim < 1 || t.dim > 4096) bad("dim: must be in 1..4096, got " + std::to_string(t.dim));
  if (!std::isfinite(t.init_scale) || t.init_scale < 0) bad("init-scale: must be finite and >= 0");
  if (t.max_rows < 0) bad("max-rows: must be >= 0 (0: unbounded)");
  if (t.max_rows >= std::int64_t{0xffffffff}) bad("max-rows: must be < 2^32");
  if (t.partition != "hash" && t.partition != "range")
    bad("partition: must be \"hash\" or \"range\", got \"" + t.partition + "\"");
}

int table_shard_of(const table_spec& t, int shards, std::uint64_t id) {
  if (shards <= 1) return 0;
  if (t.partition == "range") {
    // The inverse of shard_range: the first rows % shards parts hold one more id.
    auto n = static_cast<std::uint64_t>(shards);
    auto base = t.rows / n, extra = t.rows % n;
    auto big = (base + 1) * extra;  // ids held by the larger parts
    if (id < big) return static_cast<int>(id / (base + 1));
    return static_cast<int>(extra + (id - big) / base);
  }
  return static_cast<int>(mix64(id) % static_cast<std::uint64_t>(shards));
}

float table_init_value(const table_spec& t, std::uint64_t id, int col) {
  if (t.init_scale == 0.f) return 0.f;
  auto z = mix64(mix64(t.seed ^ 0x5eed) ^ (id * 4099 + static_cast<std::uint64_t>(col)));
  return static_cast<float>((2 * unit_double(z) - 1) * t.init_scale);
}

void validate(const row_optim_spec& o) {
  auto bad = [](const std::string& what) { throw std::invalid_argument("sparse.optim " + what); };
  if (o.kind != "sgd" && o.kind != "adagrad" && o.kind != "ftrl")
    bad("kind: must be sgd, adagrad or ftrl, got \"" + o.kind + "\"");
  auto finite_nonneg = [&](float v, const char* name) {
    if (!std::isfinite(v) || v < 0) bad(std::string(name) + ": must be finite and >= 0");
  };
  if (!std::isfinite(o.lr) || o.lr <= 0) bad("lr: must be finite and > 0");
  finite_nonneg(o.weight_decay, "weight-decay");
  finite_nonneg(o.initial_accumulator, "initial-accumulator");
  finite_nonneg(o.eps, "eps");
  finite_nonneg(o.beta, "beta");
  finite_nonneg(o.l1, "l1");
  finite_nonneg(o.l2, "l2");
  if (o.kind == "adagrad" && o.initial_accumulator == 0 && o.eps == 0)
    bad("eps: adagrad needs eps > 0 or initial-accumulator > 0 (division by zero)");
  if (o.kind == "ftrl" && o.beta == 0 && o.l2 == 0)
    bad("beta: ftrl needs beta > 0 or l2 > 0 (division by zero on a new row)");
}

int row_state_slots(const row_optim_spec& o) {
  if (o.kind == "adagrad") return 1;
  if (o.kind == "ftrl") return 2;
  return 0;
}

row_table::row_table(table_spec t, row_optim_spec o)
    : t_(std::move(t)), o_(std::move(o)), dim_(t_.dim), state_slots_(row_state_slots(o_)) {}

void row_table::unlink(std::uint32_t s) {
  auto p = prev_[s], n = next_[s];
  if (p != none_)
    next_[p] = n;
  else
    head_ = n;
  if (n != none_)
    prev_[n] = p;
  else
    tail_ = p;
  prev_[s] = next_[s] = none_;
}

void row_table::touch(std::uint32_t s) {
  if (t_.max_rows == 0 || head_ == s) return;
  unlink(s);
  push_front(s);
}

void row_table::push_front(std::uint32_t s) {
  next_[s] = head_;
  prev_[s] = none_;
  if (head_ != none_) prev_[head_] = s;
  head_ = s;
  if (tail_ == none_) tail_ = s;
}

void row_table::init_row(std::uint32_t s, std::uint64_t id) {
  ids_[s] = id;
  versions_[s] = 0;
  traffic_[s] = 0;
  auto* w = &values_[static_cast<std::size_t>(s) * dim_];
  for (int c = 0; c < dim_; ++c) w[c] = table_init_value(t_, id, c);
  auto* st = &state_[static_cast<std::size_t>(s) * dim_ * state_slots_];
  if (o_.kind == "adagrad") {
    std::fill(st, st + dim_, o_.initial_accumulator);
  } else if (o_.kind == "ftrl") {
    // z such that the closed form gives w back with n = 0: w = -(z - sign(z) l1) / (beta/alpha +
    // l2).
    float* z = st;
    float* n = st + dim_;
    float denom = o_.beta / o_.lr + o_.l2;
    for (int c = 0; c < dim_; ++c) {
      n[c] = 0;
      z[c] = w[c] == 0 ? 0.f : -(w[c] * denom + std::copysign(o_.l1, w[c]));
    }
  }
}

std::uint32_t row_table::slot_of(std::uint64_t id) {
  auto it = map_.find(id);
  if (it != map_.end()) {
    touch(it->second);
    return it->second;
  }
  std::uint32_t s;
  if (t_.max_rows > 0 && static_cast<std::int64_t>(map_.size()) >= t_.max_rows) {
    s = tail_;  // the least recently used row makes room
    unlink(s);
    map_.erase(ids_[s]);
    evicted_ += 1;
  } else {
    s = static_cast<std::uint32_t>(ids_.size());
    ids_.push_back(0);
    versions_.push_back(0);
    traffic_.push_back(0);
    values_.resize(values_.size() + dim_);
    state_.resize(state_.size() + static_cast<std::size_t>(dim_) * state_slots_);
    if (t_.max_rows > 0) {
      prev_.push_back(none_);
      next_.push_back(none_);
    }
  }
  init_row(s, id);
  map_.emplace(id, s);
  if (t_.max_rows > 0) push_front(s);
  return s;
}

void row_table::pull(const std::uint64_t* ids, std::size_t n, float* out, std::int64_t* versions) {
  for (std::size_t i = 0; i < n; ++i) {
    auto s = slot_of(ids[i]);
    traffic_[s] += 1;
    std::copy_n(&values_[static_cast<std::size_t>(s) * dim_], dim_, out + i * dim_);
    if (versions) versions[i] = versions_[s];
  }
}

void row_table::peek(const std::uint64_t* ids, std::size_t n, float* out) const {
  for (std::size_t i = 0; i < n; ++i) {
    auto it = map_.find(ids[i]);
    if (it != map_.end()) {
      std::copy_n(&values_[static_cast<std::size_t>(it->second) * dim_], dim_, out + i * dim_);
    } else {
      for (int c = 0; c < dim_; ++c) out[i * dim_ + c] = table_init_value(t_, ids[i], c);
    }
  }
}

void row_table::apply(std::uint32_t s, const float* g, float lr) {
  float* w = &values_[static_cast<std::size_t>(s) * dim_];
  float* st = &state_[static_cast<std::size_t>(s) * dim_ * state_slots_];
  if (o_.kind == "sgd") {
    for (int c = 0; c < dim_; ++c) w[c] -= lr * (g[c] + o_.weight_decay * w[c]);
  } else if (o_.kind == "adagrad") {
    for (int c = 0; c < dim_; ++c) {
      float gc = g[c] + o_.weight_decay * w[c];
      st[c] += gc * gc;
      w[c] -= lr * gc / (std::sqrt(st[c]) + o_.eps);
    }
  } else {  // ftrl; alpha is the scaled rate
    float* z = st;
    float* n = st + dim_;
    for (int c = 0; c < dim_; ++c) {
      float gc = g[c];
      float n_new = n[c] + gc * gc;
      float sigma = (std::sqrt(n_new) - std::sqrt(n[c])) / lr;
      z[c] += gc - sigma * w[c];
      n[c] = n_new;
      if (std::fabs(z[c]) <= o_.l1)
        w[c] = 0;
      else
        w[c] = -(z[c] - std::copysign(o_.l1, z[c])) / ((o_.beta + std::sqrt(n_new)) / lr + o_.l2);
    }
  }
}

std::int64_t row_table::push(const std::uint64_t* ids, std::size_t n, const float* grads,
                             const std::int64_t* base_versions, float lr_scale) {
  std::int64_t stale = 0;
  float lr = o_.lr * lr_scale;
  for (std::size_t i = 0; i < n; ++i) {
    auto s = slot_of(ids[i]);
    if (base_versions) stale += std::max<std::int64_t>(0, versions_[s] - base_versions[i]);
    apply(s, grads + i * dim_, lr);
    versions_[s] += 1;
    traffic_[s] += 1;
  }
  return stale;
}

std::size_t row_table::memory_bytes() const {
  // Map nodes: the key, the value, a next pointer and the cached hash, rounded to 32 bytes;
  // plus one bucket pointer per bucket.
  return values_.capacity() * sizeof(float) + state_.capacity() * sizeof(float) +
         (ids_.capacity() + versions_.capacity() + traffic_.capacity()) * 8 +
         (prev_.capacity() + next_.capacity()) * 4 + map_.size() * 32 +
         map_.bucket_count() * sizeof(void*);
}

std::vector<std::pair<std::uint64_t, std::int64_t>> row_table::hottest(std::size_t k) const {
  std::vector<std::pair<std::uint64_t, std::int64_t>> all;
  all.reserve(map_.size());
  for (auto& [id, s] : map_) all.emplace_back(id, traffic_[s]);
  k = std::min(k, all.size());
  auto hotter = [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  };
  std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(k), all.end(), hotter);
  all.resize(k);
  return all;
}

const float* row_table::find(std::uint64_t id) const {
  auto it = map_.find(id);
  return it == map_.end() ? nullptr : &values_[static_cast<std::size_t>(it->second) * dim_];
}

std::int64_t row_table::version(std::uint64_t id) const {
  auto it = map_.find(id);
  return it == map_.end() ? 0 : versions_[it->second];
}

}  // namespace actrain
