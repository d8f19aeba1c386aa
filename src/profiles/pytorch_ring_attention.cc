#include "profiles/pytorch_ring_attention.h"

namespace fasop {
namespace {

constexpr double kFp32Bytes = 4;

}  // namespace

// A rank merges every row of its output at the steps whose chunk precedes its own and half of
// them (plus a copy of the whole buffer) at the others: the full merge, the costlier, is
// counted for every step, as the slowest rank runs it.
RingMergeWork ring_merge_forward(int cp, double out_elements, double kv_elements, double activation_bytes) {
  const double a = activation_bytes, steps = cp - 1;
  const double upcast = a + kFp32Bytes, downcast = kFp32Bytes + a;
  const double merge = 3 * kFp32Bytes + 2 * kFp32Bytes + 3 * kFp32Bytes;  // out - b, x s, out - x: r r w, r w, r r w
  const double send_concat = 2 * 2 * a;                                   // keys and values: read and write
  RingMergeWork w;
  w.bytes = out_elements * (upcast + steps * (upcast + merge) + downcast) + kv_elements * steps * send_concat;
  // Per step: the upcasts of output and log-sum-exp, the merge's 8 ops, the concatenation;
  // the first step's two upcasts and the two casts back.
  w.kernels = 11 * (cp - 1) + 4;
  return w;
}

RingMergeWork ring_merge_backward(int cp, double out_elements, double kv_elements, double activation_bytes) {
  const double a = activation_bytes;
  const double accumulate = 2 * kFp32Bytes + a;  // fp32 += 16-bit: read both, write fp32
  const double downcast = kFp32Bytes + a;
  RingMergeWork w;
  w.bytes = out_elements * (kFp32Bytes + cp * accumulate + downcast) +
            kv_elements * (2 * kFp32Bytes + (cp - 1) * 2 * 2 * a + cp * 2 * (accumulate + 2 * kFp32Bytes) + 2 * downcast);
  // Three zeroed buffers; per step three additions and the gradients' concatenation, the
  // chunk's concatenation on all but the last; three casts back.
  w.kernels = 3 + 4 * cp + (cp - 1) + 3;
  return w;
}

}  // namespace fasop
