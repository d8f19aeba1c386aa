#pragma once
// One GPU's memory at one moment of a training step, term by term, and the linear rates a
// stage's terms follow in the parameters and activations of its units (docs/memory.md).
#include <string>
#include <vector>

namespace fasop {

/// Bytes in a GiB (2^30): memory is reported in GiB, as PyTorch and GPUs state it.
inline constexpr double kGib = 1024.0 * 1024.0 * 1024.0;

/// The moments of a step at which a GPU's memory can peak: the forward pass with every
/// micro-batch in flight held, the backward pass that starts from them, and the optimizer step
/// after the activations are freed.
enum class MemoryMoment { kForward, kBackward, kOptimizerStep };
/// Its name: forward, backward or optimizer step.
const char* memory_moment_name(MemoryMoment moment);

/// What one GPU holds at one moment, by term, in bytes. Terms that never coexist (a unit's
/// intermediates and the loss's logits are of different ops) are given only as the moment has them.
struct MemoryTerms {
  // Held the whole step.
  double weights_bytes = 0;           ///< parameters as the GEMMs read them (16-bit, or fp32)
  double gradients_bytes = 0;         ///< gradient buffers (Megatron's main_grad, FSDP's sharded gradients)
  double master_weights_bytes = 0;    ///< the optimizer's fp32 copy of the parameters
  double optimizer_states_bytes = 0;  ///< Adam's two moments
  double workspace_bytes = 0;         ///< cuBLAS and Transformer Engine workspaces, buffers kept for reuse
  // The moment's.
  double activations_bytes = 0;       ///< kept for the backward pass by the micro-batches in flight
  double layer_transient_bytes = 0;   ///< a unit's intermediates and gradients, its recomputed activations
  double loss_bytes = 0;              ///< the logits and their gradient beyond the kept softmax
  double gathered_params_bytes = 0;   ///< ZeRO-3/FSDP: unsharded parameters held
  double unreduced_grads_bytes = 0;   ///< ZeRO-3/FSDP: unsharded gradients before their reduce-scatter
  double optimizer_step_bytes = 0;    ///< the optimizer step's temporaries (fp16's fp32 gradient copy)
  double pipeline_buffers_bytes = 0;  ///< pipeline receive buffers and stage outputs kept (torch's pipelining)
  // Beyond what PyTorch has allocated.
  double allocator_reserve_bytes = 0;  ///< the caching allocator's reserve over the allocated peak
  double runtime_bytes = 0;            ///< outside PyTorch: the CUDA context, NCCL's buffers

  /// What PyTorch's allocator has handed out (torch.cuda.max_memory_allocated at the peak).
  double allocated_bytes() const;
  /// The moment's terms, which come and go within a step (the caching allocator's reserve is a
  /// share of them: the static state is allocated once, in large blocks).
  double dynamic_bytes() const;
  /// What it has reserved from the driver (torch.cuda.max_memory_reserved).
  double reserved_bytes() const;
  /// What the process takes of the GPU: what must fit.
  double device_bytes() const;

  MemoryTerms& operator+=(const MemoryTerms& other);
  MemoryTerms scaled(double factor) const;
  bool operator==(const MemoryTerms& other) const;
};

/// One moment of a stage's memory as a linear function of its units: every term is per_param x
/// the dense parameters on a GPU + per_expert_param x its routed experts' + per_activation x the
/// bytes the samples it holds keep through its units (one sample's activations x the samples
/// in flight) + fixed.
struct MomentRates {
  MemoryMoment moment = MemoryMoment::kForward;
  MemoryTerms per_param, per_expert_param, per_activation, fixed;
  bool operator==(const MomentRates& o) const {
    return moment == o.moment && per_param == o.per_param && per_expert_param == o.per_expert_param &&
           per_activation == o.per_activation && fixed == o.fixed;
  }
  /// The terms of a stage holding `params`, `expert_params` and `activation_bytes` (of every sample held).
  MemoryTerms at(double params, double expert_params, double activation_bytes) const;
};

/// One stage's memory at its worst moment: the terms, and the GPU memory they must fit in.
struct MemoryBreakdown {
  MemoryMoment moment = MemoryMoment::kForward;
  MemoryTerms terms;
  /// What stays allocated after the optimizer step: the persistent state, kept buffers and the
  /// step's own copies until the next step frees them (torch.cuda.memory_allocated then).
  double after_step_bytes = 0;
  double limit_bytes = 0;     ///< the GPU's memory, less the plan's headroom
  double capacity_bytes = 0;  ///< the GPU's memory
};

/// A term's name, as reports and CSV columns spell it, and its member.
struct MemoryTermField {
  const char* name;
  double MemoryTerms::*bytes;
};
/// Every term in MemoryTerms's order.
const std::vector<MemoryTermField>& memory_term_fields();

/// The terms as "name bytes" lines, for tests and messages.
std::string memory_terms_text(const MemoryTerms& terms);

}  // namespace fasop
