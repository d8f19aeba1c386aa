#pragma once
// How a plan's communication runs beside its compute: the switches that change a step's time
// but not its layout, named as Megatron-LM's flags. CLI options, plan files and validation cases
// hold one; the analytic profiles and policy read it (docs/cost-model.md).

namespace fasop {

/// A plan's communication switches, one spelling each (Megatron-LM's flag names).
struct Execution {
  /// --overlap-grad-reduce: gradients are reduced in buckets as the last micro-batch's backward
  /// pass produces them, overlapped with it. Off: one bucket of every gradient, after it.
  bool overlap_grad_reduce = true;
  /// --overlap-param-gather (distributed optimizer, ZeRO 1-2): the updated parameters'
  /// all-gather runs bucket by bucket under the next step's first forward pass (and the
  /// pipeline's fill before it on later stages). Off: exposed after the optimizer step.
  bool overlap_param_gather = false;
  /// --tp-comm-overlap: tensor-parallel communication overlapped with the GEMMs; only what they
  /// cannot hide is exposed, and the hidden part slows them by the GPU's overlap_slowdown.
  bool tp_comm_overlap = false;
  /// --overlap-moe-expert-parallel-comm (with --delay-wgrad-compute): 1F1B's steady phase runs
  /// one micro-batch's forward beside another's backward, each one's all-to-alls hidden behind
  /// the other's compute (profiles/ep_overlap.h). Needs ep > 1.
  bool overlap_moe_expert_parallel_comm = false;
  /// --overlap-p2p-communication, with the interleaved schedule (virtual stages > 1): sends
  /// overlap the compute and show only in the pipeline's fill and drain. Plain 1F1B always
  /// sends blocking (Megatron's batched p2p), as simulated.
  bool overlap_p2p_communication = true;
  /// ZeRO-3 / FSDP prefetch (Megatron-FSDP, torch FSDP, DeepSpeed ZeRO-3): each layer's
  /// parameters are gathered, and its gradients reduce-scattered, while a neighbouring layer
  /// computes. Off: every gather and reduce-scatter is exposed.
  bool zero3_prefetch = true;
  /// --grad-reduce-in-bf16: gradients kept and reduced in bf16 rather than fp32 (a bf16 or fp8
  /// model). The cost model prices it as the trained model's gradient precision
  /// (ModelSpec::grad_reduce_in_bf16, set from here where a plan is loaded).
  bool grad_reduce_in_bf16 = false;
  /// --cuda-graph-impl local (Megatron-Bridge's cuda_graphs): each transformer layer's forward and
  /// backward captured once and replayed whole, so the host launches a graph, not its kernels.
  /// Needs static shapes: dense layers, or experts with token dropping padded to capacity.
  bool cuda_graphs = false;
  /// --ddp-bucket-size, parameters per gradient bucket; 0: Megatron-Core's default
  /// max(40e6, 1e6 x dp).
  double ddp_bucket_size = 0;
};

}  // namespace fasop
