#pragma once
// Dense gradient compression on the wire (job_spec::compression): a worker encodes each slice it
// pushes (fp16, or top-k with error feedback) and every receiver of pushes (shard, barrier,
// aggregator) expands it back to a plain slice before anything else reads it.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <actrain/protocol.hpp>

namespace actrain {

/// True when g travels as fp16 or top-k (its `values` are not the slice itself).
bool is_compressed(const gradient& g);

/// Makes a compressed g plain: afterwards g.values holds the slice's n values (top-k: zero where
/// nothing was sent). A plain g is left as it is (its length is the receiver's own check).
/// Refuses, naming `who` and the worker, what a misbehaving peer may send: both encodings at
/// once, a half-precision or top-k length other than n, indices out of range or not increasing,
/// more values than indices, and any compressed g when n is 0 (a receiver that does not know its
/// slice length). Nothing is allocated before the lengths are checked.
caf::error expand_gradient(gradient& g, std::size_t n, const std::string& who);

/// The gradient bytes g carries on the wire (values, half values and indices).
std::int64_t payload_bytes(const gradient& g);

/// A worker's side of compression: "none", "fp16" or "topk". For top-k it keeps the residual
/// (what was computed but not sent yet) of the whole parameter vector: each step a slice sends
/// the `fraction` of its entries with the largest |gradient + residual| and keeps the rest.
class gradient_encoder {
 public:
  gradient_encoder() = default;
  gradient_encoder(std::string kind, double fraction, std::size_t num_params);

  const std::string& kind() const { return kind_; }

  /// Fills g's payload from grad[begin, begin + n): fp16 bit patterns, or top-k's positions and
  /// values (at least one entry). REQUIRES: kind() is "fp16" or "topk".
  void encode(gradient& g, const float* grad, std::size_t begin, std::size_t n);

  /// top-k: the residual still held back (tests, and the worker's final flush).
  const std::vector<float>& residual() const { return residual_; }

 private:
  std::string kind_ = "none";
  double fraction_ = 0.01;
  std::vector<float> residual_;
  std::vector<float> scores_;
};

}  // namespace actrain
