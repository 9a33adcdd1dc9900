// The pure parts of chunked transfers: option checks and reassembly (cluster/chunking.hpp).
#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "cluster/chunking.hpp"

namespace actrain {

void validate(const chunk_options& o) {
  if (o.chunk_bytes > max_wire_floats * sizeof(float))
    throw std::invalid_argument("cluster.chunk-bytes must be at most " +
                                std::to_string(max_wire_floats * sizeof(float)) +
                                " (one message), got " + std::to_string(o.chunk_bytes));
  if (o.chunk_bytes != 0 && o.chunk_bytes < sizeof(float))
    throw std::invalid_argument("cluster.chunk-bytes must be 0 (off) or at least 4, got " +
                                std::to_string(o.chunk_bytes));
  if (o.window < 1 || o.window > 64)
    throw std::invalid_argument("cluster.chunk-window must be in [1, 64], got " +
                                std::to_string(o.window));
  if (o.timeout.count() <= 0)
    throw std::invalid_argument("the chunk request timeout must be positive");
}

bool needs_chunking(std::size_t max_slice_bytes, const chunk_options& o) {
  return o.chunk_bytes > 0 && max_slice_bytes > o.chunk_bytes;
}

// -- reassembly ---------------------------------------------------------------------------------

namespace {

/// Chunks tile their tensor: every chunk but the last holds `per` values at index * per, the last
/// holds the rest (0 < rest <= per), so no two chunks overlap and none leaves a gap. `per` is
/// learned from the first chunk that tells it (any but the last; the last when its index > 0).
/// Returns the chunk size to keep, or the error naming what does not fit.
caf::expected<std::int64_t> tile(std::int64_t per, const tensor_chunk& c, std::int64_t n,
                                 std::int64_t total, const std::string& what) {
  const bool last = c.index == c.count - 1;
  if (c.count == 1) {
    if (c.offset != 0 || n != total)
      return make_error(errc::bad_message, what + ": the only chunk must hold all " +
                                               std::to_string(total) + " values from offset 0");
    return total;
  }
  if (per == 0) {
    if (!last)
      per = n;
    else if (c.offset % c.index == 0)
      per = c.offset / c.index;
    // count * per is checked: a count of 2^31 times a large slice overflows 64 bits.
    std::int64_t covered = 0;
    if (per <= 0 || __builtin_mul_overflow(static_cast<std::int64_t>(c.count), per, &covered) ||
        covered - per >= total || covered < total)
      return make_error(errc::bad_message, what + ": " + std::to_string(c.count) +
                                               " chunks cannot tile " + std::to_string(total) +
                                               " values with this chunk's size and offset");
  }
  auto begin = static_cast<std::int64_t>(c.index) * per;
  auto size = last ? total - begin : per;
  if (c.offset != begin || n != size)
    return make_error(errc::bad_message, what + ": holds [" + std::to_string(c.offset) + ", " +
                                             std::to_string(c.offset + n) + "), its tile is [" +
                                             std::to_string(begin) + ", " +
                                             std::to_string(begin + size) +
                                             ") (chunks would overlap or leave a gap)");
  return per;
}

}  // namespace

caf::error reassembly::add(const caf::actor_addr& from, const tensor_chunk& c) {
  auto what = "chunk " + std::to_string(c.index) + " of transfer " + std::to_string(c.transfer);
  if (c.transfer == 0) return make_error(errc::bad_message, what + ": transfer id 0 is reserved");
  if (c.count < 1 || c.index < 0 || c.index >= c.count)
    return make_error(errc::bad_message,
                      what + ": index outside [0, count = " + std::to_string(c.count) + ")");
  // A transfer's buffer is allocated whole at its first chunk: only a receiver that knows the
  // size it holds may take chunks, or one chunk's claimed shape would size the allocation.
  if (expected_ <= 0)
    return make_error(errc::bad_length, what + ": this receiver does not know its slice size");
  std::int64_t total = 0;
  if (!try_shape_numel(c.shape, total))
    return make_error(errc::bad_message,
                      what + ": shape " + shape_string(c.shape) +
                          (std::any_of(c.shape.begin(), c.shape.end(), [](auto d) { return d < 0; })
                               ? ": negative dimension"
                               : ": its element count overflows"));
  if (total != expected_)
    return make_error(errc::bad_length, what + ": a tensor of " + std::to_string(total) +
                                            " values, the receiver holds " +
                                            std::to_string(expected_));
  if (total > static_cast<std::int64_t>(std::size_t{1} << 40) / 4)
    return make_error(errc::bad_length,
                      what + ": " + std::to_string(total) + " values is too many");
  auto n = static_cast<std::int64_t>(c.part.size());
  if (c.offset < 0 || c.offset > total - n)  // not offset + n > total: it may overflow
    return make_error(errc::bad_message, what + ": " + std::to_string(n) +
                                             " elements from offset " + std::to_string(c.offset) +
                                             " reach outside [0, " + std::to_string(total) + ")");
  key k{from, c.transfer};
  auto it = open_.find(k);
  if (it == open_.end()) {
    while (open_.size() >= max_open_ && !order_.empty()) {
      open_.erase(order_.front());
      order_.pop_front();
    }
    partial p;
    p.values = recycled_.take(static_cast<std::size_t>(total));
    p.shape = c.shape;
    p.count = c.count;
    p.seen.assign(static_cast<std::size_t>(c.count), false);
    it = open_.emplace(k, std::move(p)).first;
    order_.push_back(k);
  }
  auto& p = it->second;
  if (p.shape != c.shape || p.count != c.count)
    return make_error(errc::bad_message, what + ": shape or count differs from its first chunk");
  if (p.seen[static_cast<std::size_t>(c.index)])
    return make_error(errc::bad_message, what + ": received twice");
  auto per = tile(p.per, c, n, total, what);
  if (!per) return std::move(per.error());
  p.per = *per;
  if (n > 0)
    std::memcpy(p.values.data() + c.offset, c.part.data(), static_cast<std::size_t>(n) * 4);
  p.seen[static_cast<std::size_t>(c.index)] = true;
  p.received += 1;
  p.filled += n;
  chunks_ += 1;
  return caf::none;
}

caf::expected<tensor> reassembly::take(const caf::actor_addr& from, std::uint64_t transfer) {
  key k{from, transfer};
  auto it = open_.find(k);
  if (it == open_.end())
    return make_error(errc::bad_length, "transfer " + std::to_string(transfer) +
                                            ": no chunks received (or dropped as too old)");
  auto& p = it->second;
  if (p.received != p.count || p.filled != static_cast<std::int64_t>(p.values.size()))
    return make_error(errc::bad_length, "transfer " + std::to_string(transfer) + ": " +
                                            std::to_string(p.received) + " of " +
                                            std::to_string(p.count) + " chunks, " +
                                            std::to_string(p.filled) + " of " +
                                            std::to_string(p.values.size()) + " values");
  tensor out(std::move(p.values), std::move(p.shape));
  open_.erase(it);
  order_.erase(std::find(order_.begin(), order_.end(), k));
  recycled_.keep(out);
  return out;
}

void reassembly::drop(const caf::actor_addr& from) {
  for (auto it = open_.begin(); it != open_.end();) {
    if (it->first.first == from) {
      order_.erase(std::find(order_.begin(), order_.end(), it->first));
      it = open_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace actrain
