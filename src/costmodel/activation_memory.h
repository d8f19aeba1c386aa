#pragma once
// Activation memory: what a pipeline unit keeps for its backward pass, per micro-batch, and the
// transient bytes its passes hold beyond that, as each training stack allocates them. Terms and
// their measurements: docs/memory.md; tests/activation_harness.py counts them on CPU.
#include "specs/model_spec.h"
#include "specs/plan.h"
#include "specs/recompute_modules.h"
#include "specs/training_stack.h"

namespace fasop {

/// How a plan keeps activations: the recomputation modes, sequence and context parallelism, and
/// the stack whose kernels decide what each op saves.
struct ActivationMode {
  bool full_recompute = false;     ///< a transformer layer keeps only its input
  RecomputeModules selective = 0;  ///< Megatron's selective recomputation modules; 0: none
  bool sequence_parallel = false;  ///< what tp replicates is split over the sequence
  int cp = 1;                      ///< context parallelism: a GPU holds 1/cp of each sequence
  int etp = 1;                     ///< expert tensor parallelism: each expert's width over etp GPUs
  TrainingStack stack = TrainingStack::kMegatron;
  /// torchtitan's per-op selective checkpointing (what selective recomputation means on that
  /// stack): a block keeps its input, every other matmul's output and attention's.
  bool op_selective = false;
  /// torchtitan: blocks compiled with torch.compile (norms and activations fused; eager when false).
  bool compiled = false;
  /// torchtitan: the loss compiled (a fused cross entropy on the 16-bit logits).
  bool compiled_loss = false;
  /// torchtitan: asynchronous tensor parallelism (no whole all-gathered GEMM input in a backward).
  bool async_tp = false;
  /// Megatron: the fused cross entropy keeps the 16-bit logits, overwritten by their gradient.
  bool cross_entropy_fusion = false;
  /// Megatron: Transformer Engine's layers, whose unfused attention makes its scores afresh in
  /// each layer (the local layers reuse one buffer, stage_memory_rates.h).
  bool transformer_engine = true;
};

/// The mode of a plan run as `settings` say (selective only without full recomputation,
/// sequence parallelism only with tp > 1; torchtitan's tensor parallelism always shards the
/// sequence).
ActivationMode activation_mode(const PlanKey& key, const MemorySettings& settings = {});
/// The mode on a stage of tensor-parallel degree `tp` (per-stage tp: sequence parallelism only where tp > 1).
ActivationMode activation_mode(const PlanKey& key, int tp, const MemorySettings& settings = {});

/// Activation bytes one micro-batch of `mbs` samples leaves in one GPU's memory for unit `unit`
/// until its backward pass (Korthikanti et al. 2022, Table 2, generalised per stack and mode).
double unit_activation_bytes(const ModelSpec& model, const LayerUnit& unit, int tp, int mbs, const ActivationMode& mode);

/// What a unit's passes hold beyond the activations they keep, for one micro-batch (bytes).
struct UnitTransient {
  double forward_bytes = 0;   ///< the forward pass's peak over what it leaves kept
  double backward_bytes = 0;  ///< the backward pass's peak over the activations it starts from
};

/// The transients of unit `unit` on one GPU (tp, mbs, mode as unit_activation_bytes): a layer's
/// intermediate tensors and gradients, its recomputed activations with recomputation, the loss's
/// logits and their gradient on the post-process unit.
UnitTransient unit_transient_bytes(const ModelSpec& model, const LayerUnit& unit, int tp, int mbs,
                                   const ActivationMode& mode);

/// A unit's kept activations and its transients at once (what a memory model needs of each unit).
struct UnitActivationMemory {
  double kept_bytes = 0;
  UnitTransient transient;
};
UnitActivationMemory unit_activation_memory(const ModelSpec& model, const LayerUnit& unit, int tp, int mbs,
                                            const ActivationMode& mode);

}  // namespace fasop
