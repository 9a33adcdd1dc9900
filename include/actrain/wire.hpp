#pragma once
// How a tensor crosses nodes: its shape, then its values as ONE raw block of host-byte-order
// float32 (not element by element: ~100x faster in CAF 0.17: 23-28 GB/s against 0.26). Nodes check
// that they share byte order when they register (include/actrain/cluster.hpp). In-process sends
// never serialize: the tensor's immutable buffer is shared.
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include <caf/all.hpp>

#include <actrain/tensor.hpp>

namespace actrain {

/// Largest tensor one message may carry. CAF 0.17 sequence and BASP payload lengths are 32-bit;
/// bigger tensors must be sent in chunks (cluster/chunking.hpp).
constexpr std::size_t max_wire_floats = (std::size_t{1} << 28) - 1;  // < 1 GiB of float32

/// Buffers for tensors the calling thread (a middleman's multiplexer) deserializes, reused once
/// every receiver has let go: chunks arrive at the same few sizes, and a fresh multi-MiB vector
/// each time costs page faults and a zero fill that showed at the top of `perf` in bench wire.
/// Only tensors of 1-16 MiB are pooled, at most 8 per thread (<= 128 MiB kept).
inline tensor_pool& wire_buffers() {
  thread_local tensor_pool pool(8);
  return pool;
}
inline bool wire_pooled(std::size_t floats) {
  return floats >= (std::size_t{1} << 18) && floats <= (std::size_t{1} << 22);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, tensor& x) {
  using result = typename Inspector::result_type;
  if constexpr (std::is_same<result, void>::value) {
    // to_string: a summary, never the values.
    std::string s = "tensor" + shape_string(x.shape());
    f(caf::meta::type_name("tensor"), s);
  } else if constexpr (Inspector::reads_state) {
    // serializer: reads x
    shape_t shape = x.shape();
    std::size_t n = x.size();
    if (n > max_wire_floats)
      return caf::make_error(caf::sec::invalid_argument, "tensor too large for one message");
    if (auto err = f(shape)) return err;
    if (auto err = f.begin_sequence(n)) return err;
    if (n > 0) {
      if (auto err = f.apply_raw(n * sizeof(float), const_cast<float*>(x.data()))) return err;
    }
    return f.end_sequence();
  } else {
    // deserializer: validate before allocating, then read the block in one go.
    shape_t shape;
    if (auto err = f(shape)) return err;
    std::size_t n = 0;
    if (auto err = f.begin_sequence(n)) return err;
    std::int64_t numel = 0;
    if (!try_shape_numel(shape, numel))
      return caf::make_error(caf::sec::invalid_argument,
                             "tensor: negative dimension or an element count overflowing 64 bits");
    if (shape.empty() && n == 0) {  // a default-constructed (empty) tensor
      x = tensor();
      return f.end_sequence();
    }
    if (n > max_wire_floats || static_cast<std::int64_t>(n) != numel)
      return caf::make_error(caf::sec::invalid_argument, "tensor: length does not match shape");
    bool pooled = wire_pooled(n);
    std::vector<float> v = pooled ? wire_buffers().take(n) : std::vector<float>(n);
    if (n > 0) {
      if (auto err = f.apply_raw(n * sizeof(float), v.data())) return err;
    }
    if (auto err = f.end_sequence()) return err;
    x = tensor(std::move(v), std::move(shape));
    if (pooled) wire_buffers().keep(x);
    return caf::none;
  }
}

}  // namespace actrain
