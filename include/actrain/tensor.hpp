#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <actrain/span.hpp>

namespace actrain {

using shape_t = std::vector<std::int64_t>;

/// Number of elements a shape describes (1 for the empty shape, a scalar). Throws
/// std::invalid_argument for a negative dimension or a count that overflows 64 bits (a shape
/// from another node is never trusted to multiply safely).
std::int64_t shape_numel(const shape_t& s);
/// shape_numel without exceptions: false (n unspecified) where shape_numel would throw.
bool try_shape_numel(const shape_t& s, std::int64_t& n) noexcept;
std::string shape_string(const shape_t& s);

/// A dense float32 tensor over an immutable, shared, contiguous host buffer.
///
/// Copying a tensor copies a pointer: every copy and every slice reads the same buffer, which
/// nobody may write once it is inside a tensor. This is what makes a local message send of a
/// tensor free. To change values, take a private copy with `to_vector()`, edit it, and build a
/// new tensor from it (`tensor(std::move(v))` adopts the vector without copying).
/// Thread-safety: any number of threads may read the same tensor.
class tensor {
 public:
  tensor() = default;
  /// Adopts `values` (no copy) as a 1-D tensor.
  explicit tensor(std::vector<float> values);
  /// Adopts `values` with shape `s`. Throws std::invalid_argument if the sizes disagree.
  tensor(std::vector<float> values, shape_t s);

  static tensor zeros(shape_t s);
  static tensor filled(shape_t s, float value);

  const shape_t& shape() const { return shape_; }
  std::int64_t dim(std::size_t i) const { return shape_.at(i); }
  std::size_t rank() const { return shape_.size(); }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  /// Read-only element pointer (nullptr when empty). Points into the shared buffer.
  const float* data() const { return buf_ ? buf_->data() + offset_ : nullptr; }
  span<const float> values() const { return {data(), size_}; }
  float operator[](std::size_t i) const { return data()[i]; }

  /// A 1-D view of `count` elements starting at flat index `offset`; shares the buffer.
  /// Throws std::out_of_range if the range does not fit.
  tensor slice(std::size_t offset, std::size_t count) const;
  /// Same buffer, new shape of equal element count; throws std::invalid_argument otherwise.
  tensor reshape(shape_t s) const;

  /// A private, mutable copy of the values.
  std::vector<float> to_vector() const { return {data(), data() + size_}; }

  /// How many tensors share this buffer (for tests and diagnostics).
  long use_count() const { return buf_.use_count(); }
  /// True when every value is finite (no NaN, no infinity). Reads every value, unless this
  /// tensor (or the tensor it was copied, sliced or reshaped from) was marked by mark_finite().
  bool all_finite() const;
  /// Records that every value is finite, for a writer that checked them while writing them (the
  /// bulk channel checks each piece a socket delivers while the next piece is still on its way).
  /// Copies, slices and reshapes keep the mark, and all_finite() then answers without reading the
  /// values again. Mark a tensor before sharing it, and only after checking it: a wrong mark
  /// defeats the checks that shards and workers make on what they receive.
  void mark_finite() { known_finite_ = true; }

  /// When this is the only tensor left on its buffer (every copy and slice is gone) and it spans
  /// the whole buffer, moves the storage into `out` for reuse, empties this tensor and returns
  /// true; otherwise changes nothing and returns false. Lets a sender recycle a buffer once every
  /// receiver is done with it, instead of allocating (and page-faulting) a fresh one.
  bool reclaim(std::vector<float>& out);

 private:
  /// Never written through while shared: only reclaim(), as the sole owner, takes it back.
  std::shared_ptr<std::vector<float>> buf_;
  std::size_t offset_ = 0;
  std::size_t size_ = 0;
  shape_t shape_;
  bool known_finite_ = false;
};

/// True when every value is finite (no NaN, no infinity): tensor::all_finite for any run of
/// floats (a piece of a tensor still being filled, for instance).
bool all_finite(span<const float> values);

/// Recycles the buffers of tensors a sender has let go of: `keep` a tensor after sending it, and
/// `take` returns the storage of the oldest kept tensor that every receiver has released (or a
/// new vector). Bounded: at most `capacity` tensors are kept. Not thread-safe (one owner).
class tensor_pool {
 public:
  explicit tensor_pool(std::size_t capacity = 4) : capacity_(capacity) {}
  void keep(tensor t);
  /// A vector of n floats: recycled when possible (old values, not zeroed), else zero-filled.
  std::vector<float> take(std::size_t n);

 private:
  std::size_t capacity_;
  std::vector<tensor> kept_;
};

}  // namespace actrain
