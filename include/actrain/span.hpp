#pragma once
#include <cassert>
#include <cstddef>
#include <vector>

namespace actrain {

/// A non-owning view of `n` contiguous elements (C++17 has no std::span).
/// REQUIRES: the viewed memory outlives the span.
template <class T>
class span {
 public:
  span() = default;
  span(T* p, std::size_t n) : p_(p), n_(n) {}
  template <class U>
  span(std::vector<U>& v) : p_(v.data()), n_(v.size()) {}
  template <class U>
  span(const std::vector<U>& v) : p_(v.data()), n_(v.size()) {}
  template <class U>
  span(span<U> o) : p_(o.data()), n_(o.size()) {}

  T* data() const { return p_; }
  std::size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  T& operator[](std::size_t i) const { return p_[i]; }
  T* begin() const { return p_; }
  T* end() const { return p_ + n_; }
  span subspan(std::size_t off, std::size_t count) const {
    assert(off + count <= n_);
    return span(p_ + off, count);
  }

 private:
  T* p_ = nullptr;
  std::size_t n_ = 0;
};

}  // namespace actrain
