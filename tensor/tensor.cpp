#include <actrain/tensor.hpp>

#include <atomic>
#include <cstring>

#include <cmath>
#include <stdexcept>

#include "tensor/vector_clones.hpp"

namespace actrain {

bool try_shape_numel(const shape_t& s, std::int64_t& n) noexcept {
  for (auto d : s)
    if (d < 0) return false;
  n = 1;
  for (auto d : s) {
    if (d == 0) {  // a zero dimension makes any product 0, overflowing or not
      n = 0;
      return true;
    }
  }
  for (auto d : s)
    if (__builtin_mul_overflow(n, d, &n)) return false;
  return true;
}

std::int64_t shape_numel(const shape_t& s) {
  std::int64_t n = 0;
  if (try_shape_numel(s, n)) return n;
  for (auto d : s)
    if (d < 0) throw std::invalid_argument("shape " + shape_string(s) + ": negative dimension");
  throw std::invalid_argument("shape " + shape_string(s) + ": element count overflows 64 bits");
}

std::string shape_string(const shape_t& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(s[i]);
  }
  return out + "]";
}

tensor::tensor(std::vector<float> values) {
  shape_ = {static_cast<std::int64_t>(values.size())};
  size_ = values.size();
  buf_ = std::make_shared<std::vector<float>>(std::move(values));
}

tensor::tensor(std::vector<float> values, shape_t s) {
  auto n = shape_numel(s);
  if (static_cast<std::size_t>(n) != values.size())
    throw std::invalid_argument("tensor: shape " + shape_string(s) + " needs " + std::to_string(n) +
                                " values, got " + std::to_string(values.size()));
  shape_ = std::move(s);
  size_ = values.size();
  buf_ = std::make_shared<std::vector<float>>(std::move(values));
}

tensor tensor::zeros(shape_t s) {
  return filled(std::move(s), 0.0f);
}

tensor tensor::filled(shape_t s, float value) {
  auto n = shape_numel(s);
  return tensor(std::vector<float>(static_cast<std::size_t>(n), value), std::move(s));
}

tensor tensor::slice(std::size_t offset, std::size_t count) const {
  if (offset > size_ || count > size_ - offset)
    throw std::out_of_range("tensor::slice: [" + std::to_string(offset) + ", " +
                            std::to_string(offset) + "+" + std::to_string(count) +
                            ") does not fit in " + std::to_string(size_) + " elements");
  tensor t;
  t.buf_ = buf_;
  t.known_finite_ = known_finite_;
  t.offset_ = offset_ + offset;
  t.size_ = count;
  t.shape_ = {static_cast<std::int64_t>(count)};
  return t;
}

tensor tensor::reshape(shape_t s) const {
  auto n = shape_numel(s);
  if (static_cast<std::size_t>(n) != size_)
    throw std::invalid_argument("tensor::reshape: " + shape_string(shape_) + " (" +
                                std::to_string(size_) + " values) cannot become " +
                                shape_string(s) + " (" + std::to_string(n) + " values)");
  tensor t = *this;
  t.shape_ = std::move(s);
  return t;
}

ACTRAIN_AVX2_CLONES
bool all_finite(span<const float> values) {
  // A float is NaN or infinite exactly when its exponent bits are all ones. OR-ing that test over
  // the bit patterns is a pure integer loop the compiler vectorizes (std::isfinite per element
  // did not, and every push and pull runs this check).
  const float* p = values.data();
  std::uint32_t bad = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, p + i, sizeof bits);
    bad |= static_cast<std::uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
  }
  return bad == 0;
}

bool tensor::all_finite() const { return known_finite_ || actrain::all_finite(values()); }

bool tensor::reclaim(std::vector<float>& out) {
  // Sole owner of the whole buffer: nobody else can read it any more, so handing its storage
  // back for writing breaks no one's immutability.
  if (!buf_ || buf_.use_count() != 1 || offset_ != 0 || size_ != buf_->size()) return false;
  // use_count() is a relaxed read. Every other owner dropped its reference with an acq_rel
  // decrement of the shared count after its last read of the values; an acquire on that same
  // count orders those reads before our writes. A copy made and dropped here is that acquire:
  // its decrement is an acq_rel read-modify-write that reads the last of theirs (through the
  // release sequence), which ThreadSanitizer sees too (it does not model a standalone fence,
  // and reported the fence this replaces: docs/testing.md, "ThreadSanitizer").
  { auto acquire = buf_; }
  out = std::move(*buf_);
  *this = tensor();
  return true;
}

void tensor_pool::keep(tensor t) {
  if (t.empty() || capacity_ == 0) return;
  if (kept_.size() == capacity_) kept_.erase(kept_.begin());
  kept_.push_back(std::move(t));
}

std::vector<float> tensor_pool::take(std::size_t n) {
  std::vector<float> out;
  for (auto it = kept_.begin(); it != kept_.end(); ++it) {
    if (it->size() == n && it->reclaim(out)) {
      kept_.erase(it);
      return out;
    }
  }
  out.assign(n, 0.f);
  return out;
}

}  // namespace actrain
