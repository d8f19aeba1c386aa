#pragma once
// Layer times without measurements: each layer's GEMMs (by shape), fused attention,
// element-wise traffic and kernel launches, timed against its GPU's measured data
// (specs/gpu_spec.h, configs/gpus/), forward and backward.
#include <string>
#include <vector>

#include "specs/cluster_spec.h"
#include "specs/execution.h"
#include "specs/model_spec.h"
#include "specs/plan.h"
#include "specs/profile_spec.h"
#include "specs/training_stack.h"

namespace fasop {


/// One matrix multiplication, `count` times: (m x k) x (k x n).
struct Gemm {
  double m = 0, n = 0, k = 0;
  double count = 1;
  /// A weight gradient: k runs over the rows (tokens) both operands are stored with, so their
  /// leading dimensions are m and n, not k (a token count need not be aligned).
  bool k_is_rows = false;
  double flops() const { return 2 * m * n * k * count; }
  /// Its operands' leading dimensions (n and k, or m and n for a weight gradient) are whole
  /// multiples of 16 bytes of `element_bytes` elements.
  bool aligned(double element_bytes) const;
};

/// The part of a forward pass its host issues only after waiting for the GPU. Megatron-Core's
/// dropless token dispatchers copy the tokens' split sizes to the host and synchronise before the
/// all-to-all (MoEAlltoAllTokenDispatcher's cuda_sync_point; DeepEP's dispatch waits likewise):
/// the host cannot launch what follows, the experts with their per-expert GEMMs, while the GPU
/// still runs the attention ahead of it. Token dropping with padding to capacity has static
/// shapes and no wait.
struct HostWaitTail {
  std::vector<Gemm> gemms;  ///< in the model's GEMM precision
  double memory_bytes = 0;  ///< element-wise traffic
  int kernels = 0;
  int host_ops = 0;
  int waits = 0;  ///< the host's waits in the pass (one per dropless MoE layer); 0: none
};

/// A pass's MoE token dispatches: `count` of them (forward: dispatch and combine; backward: their
/// gradients, the same way back), each moving copies of one GPU's `token_bytes` of tokens as
/// `dispatcher` sends them under `moe`'s routing (profiles/moe_dispatch.h).
struct EpDispatchWork {
  int count = 0;
  double token_bytes = 0;
  MoeSpec moe;
  MoeDispatcher dispatcher = MoeDispatcher::kAlltoall;
};

/// Host ops of a graphed pass: its input copied into the graph's static buffer, the replay, the
/// output taken from it (Megatron-Core's CudaGraphManager); an assumption, counted by reading.
constexpr int kGraphReplayHostOps = 3;

/// One pass (forward or backward) of one pipeline unit on one GPU (its 1/tp share).
struct PassWork {
  std::vector<Gemm> gemms;       ///< in the model's GEMM precision (fp8 GEMMs for fp8 training)
  double weight_bytes = 0;       ///< the GEMMs' weights, read while they compute
  /// Its GEMMs run in the precision of the rest (bf16 under fp8 training): a layer the stack's
  /// float8 conversion leaves out (torchtitan's output layer).
  bool high_precision_gemms = false;
  double attention_flops = 0;    ///< fused attention's FLOPs (causal attention counts half the scores)
  double memory_bytes = 0;       ///< element-wise traffic (norms, activations, dropouts, casts, unfused scores)
  int kernels = 0;               ///< kernels launched, communication excluded
  int host_ops = 0;              ///< ops the host dispatches to launch them (fused stacks: one a kernel)
  int tp_collectives = 0;        ///< tensor-parallel all-reduces (or all-gather + reduce-scatter pairs)
  double tp_collective_bytes = 0;  ///< bytes each of them reduces (the full activation)
  /// The share of their time overlapping cannot hide (--tp-comm-overlap, async tp): torchtitan's
  /// backward reduce-scatters of the summed input gradients, which PyTorch's micro-pipelining
  /// does not fuse (it fuses an all-gather into the matmuls that read it and one matmul into the
  /// reduce-scatter of its output).
  double tp_unhidden_share = 0;
  /// Context parallelism's ring attention: steps (cp - 1) each sending these bytes to the next
  /// rank of the ring (forward: a key and value chunk; backward: those and their gradients).
  int cp_ring_steps = 0;
  double cp_ring_step_bytes = 0;
  /// PyTorch's ring attention as torchtitan runs it (all-gather rotation): the other cp - 1
  /// key and value chunks, these bytes each, gathered at once beside the first sub-attention.
  double cp_gather_chunk_bytes = 0;
  /// Its element-wise work around the sub-attentions (pytorch_ring_attention.h): part of the
  /// attention op, saved or recomputed with it, not with the layer's other element-wise ops.
  double cp_merge_bytes = 0;
  int cp_merge_kernels = 0;
  /// Expert parallelism's token dispatch and combine (EpDispatchWork).
  EpDispatchWork ep_dispatch;
  /// Expert tensor parallelism: the routed tokens' all-gather and reduce-scatter over etp GPUs,
  /// as one all-reduce of these bytes.
  double etp_collective_bytes = 0;
  bool backward = false;         ///< a backward pass (its fused attention runs at the backward share)
  /// Replayed as a CUDA graph (Execution::cuda_graphs): the host launches the graph
  /// (kGraphReplayHostOps), not each kernel, and waits for nothing inside it.
  bool graphed = false;
  HostWaitTail after_host_wait;  ///< of the above, what the host issues after a wait (forward only)
  double gemm_flops() const;
};

/// Both passes of one unit.
struct LayerWork {
  int tp = 1;
  PassWork forward, backward;
  /// A MoE layer's experts alone (their share of forward and backward, without communication):
  /// the mlp nodes of the combined 1F1B schedule (ep_overlap.h). Empty for other units.
  PassWork moe_forward, moe_backward;
};

/// How the layers run.
struct LayerOptions {
  Stack stack = Stack::kMegatron;
  /// Megatron-LM's sequence parallelism: the replicated element-wise work splits over tp.
  bool sequence_parallel = false;
  /// The communication switches the layer times see: tp_comm_overlap and
  /// overlap_moe_expert_parallel_comm (specs/execution.h).
  Execution execution;
  int cp = 1;   ///< context-parallel degree: each GPU holds 1/cp of every sequence (PlanKey::cp)
  int ep = 1;   ///< expert-parallel degree: a MoE layer's experts over ep GPUs (PlanKey::ep)
  int etp = 1;  ///< expert tensor-parallel degree (PlanKey::etp)
  MoeDispatcher moe_dispatcher = MoeDispatcher::kAlltoall;  ///< PlanKey::moe_dispatcher
  /// torchtitan: the loss compiled too (a fused cross entropy reading the 16-bit logits).
  bool compiled_loss = false;
};

/// `options` with the layers `memory`'s training stack runs: torchtitan's blocks (compiled or
/// eager, its loss compiled or not, asynchronous tensor parallelism as overlapped tp), else
/// Megatron's fused layers (DeepSpeed's Megatron-DeepSpeed runs them too).
LayerOptions with_training_stack(LayerOptions options, const MemorySettings& memory);

/// `options` splitting each layer as `key` does: its context, expert and expert tensor degrees
/// and its token dispatcher.
inline LayerOptions split_as(LayerOptions options, const PlanKey& key) {
  options.cp = key.cp;
  options.ep = key.ep;
  options.etp = key.etp;
  options.moe_dispatcher = key.moe_dispatcher;
  return options;
}

/// The backward pass of a forward pass: each GEMM's data and weight gradients (the same FLOPs
/// in transposed shapes), 2.5 x the fused attention's FLOPs (its backward recomputes the
/// scores), twice the element-wise traffic and kernels; the weights are read again and their
/// fp32 gradients accumulated.
PassWork backward_of(const PassWork& forward, const std::string& dtype);

/// The work of unit `unit` of `model` at micro-batch `mbs` and tensor-parallel degree `tp`
/// (Megatron-style sharding: attention heads and MLP columns split over tp).
LayerWork layer_work(const ModelSpec& model, const LayerUnit& unit, int tp, int mbs, const LayerOptions& options = {});

/// A pass's time and its parts.
struct PassTime {
  double seconds = 0;      ///< the whole pass
  double gpu_s = 0;        ///< kernels on the GPU (GEMMs, attention, element-wise, gaps)
  double host_s = 0;       ///< launching them from the host
  double tp_comm_s = 0;    ///< tensor-parallel communication exposed (with overlap: its cost)
  double cp_comm_s = 0;    ///< ring attention's sends that the attention does not hide
  double ep_comm_s = 0;    ///< the experts' all-to-alls (and expert tensor parallelism's collectives)
};

/// The GPU's dense peak FLOP/s in the precision `dtype` computes in (fp16's where it lists no
/// bf16); a missing one throws SpecError naming `node_name`'s field.
double peak_flops(const GpuSpec& gpu, const std::string& dtype, const std::string& node_name);

/// Share of a precision's dense peak a GEMM of this shape reaches, its elements `element_bytes`
/// wide (0: alignment not judged, as for a sweep of aligned shapes).
double gemm_efficiency(const Gemm& gemm, const PrecisionEfficiency& efficiency, double element_bytes);
/// Seconds of a GEMM: the slower of its FLOPs at peak x gemm_efficiency and `weight_bytes` read.
double gemm_time_s(const Gemm& gemm, const GpuSpec& gpu, const std::string& precision, double weight_bytes = 0);

/// Seconds of one pass of `work` on a GPU of `node` training in `dtype`.
PassTime pass_time(const PassWork& work, int tp, const NodeType& node, const std::string& dtype,
                   const LayerOptions& options = {});

/// Forward and backward times of one unit.
struct LayerTime {
  PassTime forward, backward;
  /// The unit's model-parallel communication, both passes: tp, cp and ep (ProfileSpec::layer_comm_s).
  double layer_comm_s() const {
    return forward.tp_comm_s + backward.tp_comm_s + forward.cp_comm_s + backward.cp_comm_s + forward.ep_comm_s +
           backward.ep_comm_s;
  }
};
LayerTime layer_time(const ModelSpec& model, const LayerUnit& unit, int tp, int mbs, const NodeType& node,
                     const LayerOptions& options = {});

/// Seconds of `work`'s expert all-to-alls and expert tensor-parallel collectives on `node`
/// (alone: not overlapped), with expert parallelism `ep` and expert tensor parallelism `etp`.
double ep_comm_s(const PassWork& work, int ep, int etp, const NodeType& node);
/// Seconds of `work`'s ring-attention sends, with tp x cp GPUs per ring lane group on `node`.
double cp_ring_s(const PassWork& work, int tp, int cp, const NodeType& node);
/// Seconds of `work`'s key/value all-gather (PyTorch's ring attention), on the same links.
double cp_gather_s(const PassWork& work, int tp, int cp, const NodeType& node);

/// A profile of `model` on `node`'s GPU: forward and backward seconds per layer type, for every
/// tp in `tps` and micro-batch in `micro_batches`, and the model-parallel communication in
/// them (tp_comm_s: tensor-parallel, ring attention's and the experts' all-to-alls, as far
/// as exposed). Needs node.has_gpu_data().
ProfileSpec analytic_profile(const ModelSpec& model, const NodeType& node, const std::vector<int>& tps,
                             const std::vector<int>& micro_batches, const LayerOptions& options = {});

/// The GEMM peak share (every precision of `node`'s GPU alike) at which analytic forward
/// times best match a measured profile of the same model and GPU (least squared log error).
double calibrated_efficiency(const ModelSpec& model, const NodeType& node, const ProfileSpec& measured,
                             const LayerOptions& options = {});

}  // namespace fasop
