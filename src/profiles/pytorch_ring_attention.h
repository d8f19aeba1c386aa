#pragma once
// PyTorch's ring attention (torch.distributed.tensor.experimental.context_parallel), which
// torchtitan's context parallelism runs: the element-wise work around its cp sub-attentions,
// counted from _templated_ring_attention and its backward (load-balanced, fp32 accumulation,
// the default all-gather rotation). Megatron-LM's ring (Transformer Engine) merges inside its
// kernels and is not counted here.

namespace fasop {

/// A ring attention pass's element-wise traffic and launches on one rank.
struct RingMergeWork {
  double bytes = 0;
  int kernels = 0;
};

/// What the ring adds to the sub-attentions on one rank with `cp` ranks: `out_elements` is its
/// attention output (its tokens x the queries' width / tp), `kv_elements` each of its key and
/// value chunks as the kernel takes them, `activation_bytes` their element size.
/// Forward: each step after the first upcasts the block's output to fp32 and merges it into the
/// running output (out - sigmoid(lse_b - lse) x (out - out_b): 36 bytes an element in fp32),
/// and the chunk to send is concatenated; the result is cast back at the end.
RingMergeWork ring_merge_forward(int cp, double out_elements, double kv_elements, double activation_bytes);
/// Backward: fp32 gradient buffers zeroed, each step's query, key and value gradients added in
/// (fp32 += 16-bit), the key and value gradients concatenated in fp32 to pass on, the key and
/// value chunk concatenated again; the gradients cast back at the end.
RingMergeWork ring_merge_backward(int cp, double out_elements, double kv_elements, double activation_bytes);

}  // namespace fasop
