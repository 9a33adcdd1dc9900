#pragma once
// How a tensor crosses nodes: its shape, then its values as ONE raw block of host-byte-order
// float32 (not element by element: ~100x faster in CAF 0.17: 23-28 GB/s against 0.26). Nodes check
// that they share byte order when they register (include/actrain/cluster.hpp). In-process sends
// never serialize: the tensor's immutable buffer is shared.
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <caf/all.hpp>

#include <actrain/tensor.hpp>

namespace actrain {

/// Largest tensor one message may carry. CAF 0.17 sequence and BASP payload lengths are 32-bit;
/// bigger tensors must be sent in chunks (cluster/chunking.hpp).
constexpr std::size_t max_wire_floats = (std::size_t{1} << 28) - 1;  // < 1 GiB of float32
static_assert(sizeof(double) == sizeof(std::uint64_t), "wire_double sends a double's 8 bytes");

/// Buffers for tensors the calling thread (a middleman's multiplexer) deserializes, reused once
/// every receiver has let go: chunks arrive at the same few sizes, and a fresh multi-MiB vector
/// each time costs page faults and a zero fill that showed at the top of `perf` in bench wire.
/// Tensors of 64 KiB-16 MiB are pooled (a dense MLP's 0.8 MB slices among them: pooling them
/// took `actrain node` async from 85k to 88-91k samples/s in bench cluster), at most 8 per
/// thread (<= 128 MiB kept).
inline tensor_pool& wire_buffers() {
  thread_local tensor_pool pool(8);
  return pool;
}
inline bool wire_pooled(std::size_t floats) {
  return floats >= (std::size_t{1} << 14) && floats <= (std::size_t{1} << 22);
}

/// Bytes left to read when `f` reads from a buffer (CAF's binary_deserializer: what BASP reads a
/// message's payload with), else SIZE_MAX. A length read from the wire is checked against it
/// before anything is allocated for it: a short message never sizes a large allocation.
template <class Inspector>
std::size_t wire_bytes_left(Inspector& f) {
  if constexpr (std::is_base_of<caf::deserializer, Inspector>::value) {
    if (auto* buffer = dynamic_cast<caf::binary_deserializer*>(&f)) return buffer->remaining();
  }
  return std::numeric_limits<std::size_t>::max();
}

/// A double of a message, as its IEEE 754 bit pattern: 8 bytes, exact, infinities and NaN
/// included. CAF 0.17 packs a double with detail::pack754, which never returns for an infinity
/// (it halves it until it is below 2) and converts a NaN to an integer (undefined behaviour): a
/// worker's infinite loss would hang its node's multiplexer thread. Every double of actrain's
/// messages is written as wire_bits(x).
struct wire_double {
  double& x;
};
inline wire_double wire_bits(double& x) {
  return {x};
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, wire_double& d) {
  using result = typename Inspector::result_type;
  if constexpr (std::is_same<result, void>::value) {
    f(d.x);  // to_string: the value
  } else if constexpr (Inspector::reads_state) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &d.x, sizeof bits);
    return f(bits);
  } else {
    std::uint64_t bits = 0;
    if (auto err = f(bits)) return err;
    std::memcpy(&d.x, &bits, sizeof bits);
    return caf::none;
  }
}

/// A std::vector of plain numbers of a message (checkpoint values and optimizer slots, final
/// parameters, a sparse shard's row ids and versions) as one raw block in host byte order, like a
/// tensor: CAF would pack each float with pack754, which never returns for an infinity (see
/// wire_double), and each integer element by element. Written as wire_block(v).
template <class T>
struct wire_vector {
  static_assert(std::is_arithmetic<T>::value, "raw blocks of plain numbers only");
  std::vector<T>& v;
};
using wire_floats = wire_vector<float>;
inline wire_vector<float> wire_block(std::vector<float>& v) {
  return {v};
}
inline wire_vector<std::uint64_t> wire_block(std::vector<std::uint64_t>& v) {
  return {v};
}
inline wire_vector<std::int64_t> wire_block(std::vector<std::int64_t>& v) {
  return {v};
}
inline wire_vector<std::uint16_t> wire_block(std::vector<std::uint16_t>& v) {
  return {v};
}
inline wire_vector<std::uint32_t> wire_block(std::vector<std::uint32_t>& v) {
  return {v};
}
inline wire_vector<double> wire_block(std::vector<double>& v) {
  return {v};
}

template <class Inspector, class T>
typename Inspector::result_type inspect(Inspector& f, wire_vector<T>& w) {
  using result = typename Inspector::result_type;
  // The same element bound for every type: < 1 GiB of float32, < 2 GiB of 64-bit numbers.
  if constexpr (std::is_same<result, void>::value) {
    std::string s = std::to_string(w.v.size()) + " values";  // to_string: a summary
    f(s);
  } else if constexpr (Inspector::reads_state) {
    std::size_t n = w.v.size();
    if (n > max_wire_floats)
      return caf::make_error(caf::sec::invalid_argument, "vector too large for one message");
    if (auto err = f.begin_sequence(n)) return err;
    if (n > 0) {
      if (auto err = f.apply_raw(n * sizeof(T), w.v.data())) return err;
    }
    return f.end_sequence();
  } else {
    std::size_t n = 0;
    if (auto err = f.begin_sequence(n)) return err;
    if (n > max_wire_floats || n > wire_bytes_left(f) / sizeof(T))
      return caf::make_error(caf::sec::invalid_argument,
                             "vector: " + std::to_string(n) + " values claimed, " +
                                 std::to_string(wire_bytes_left(f)) + " bytes left");
    w.v.resize(n);
    if (n > 0) {
      if (auto err = f.apply_raw(n * sizeof(T), w.v.data())) return err;
    }
    return f.end_sequence();
  }
}

/// A std::vector<std::vector<float>> (optimizer slots) as a count, then each one as wire_block.
struct wire_float_rows {
  std::vector<std::vector<float>>& rows;
};
inline wire_float_rows wire_block(std::vector<std::vector<float>>& rows) {
  return {rows};
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, wire_float_rows& w) {
  using result = typename Inspector::result_type;
  if constexpr (std::is_same<result, void>::value) {
    std::string s = std::to_string(w.rows.size()) + " float vectors";
    f(s);
  } else if constexpr (Inspector::reads_state) {
    std::size_t n = w.rows.size();
    if (auto err = f.begin_sequence(n)) return err;
    for (auto& row : w.rows) {
      auto block = wire_block(row);
      if (auto err = f(block)) return err;
    }
    return f.end_sequence();
  } else {
    std::size_t n = 0;
    if (auto err = f.begin_sequence(n)) return err;
    w.rows.clear();
    for (std::size_t i = 0; i < n; ++i) {  // grown row by row: a count alone allocates nothing
      std::vector<float> row;
      auto block = wire_block(row);
      if (auto err = f(block)) return err;
      w.rows.push_back(std::move(row));
    }
    return f.end_sequence();
  }
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
    if (n > wire_bytes_left(f) / sizeof(float))
      return caf::make_error(caf::sec::invalid_argument,
                             "tensor: " + std::to_string(n) + " values claimed, " +
                                 std::to_string(wire_bytes_left(f)) + " bytes left");
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
