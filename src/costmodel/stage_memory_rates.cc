#include "costmodel/stage_memory_rates.h"

#include <algorithm>

#include "specs/precision.h"

namespace fasop {
namespace {

/// Bytes a parameter's persistent state takes on one GPU, by term (before any gathering).
struct ParamState {
  double weights = 0, gradients = 0, master = 0, optimizer = 0;
};

/// The optimizer state of mixed-precision Adam sharded as `zero` shards over `ranks` GPUs:
/// 16-bit weights (fp32 in fp32 training) with their gradient buffer of `gradient_bytes`, an fp32
/// master copy (none in fp32 training) and the two fp32 moments. ZeRO 1 (Megatron's distributed
/// optimizer) shards the master copy and moments, 2 the gradients too, 3 the weights as well.
ParamState megatron_param_state(bool fp32, double gradient_bytes, int zero, int ranks) {
  const double d = ranks;
  ParamState state{.weights = fp32 ? 4.0 : 2.0, .gradients = gradient_bytes, .master = fp32 ? 0.0 : 4.0, .optimizer = 8};
  if (zero >= 1) state.master /= d, state.optimizer /= d;
  if (zero >= 2) state.gradients /= d;
  if (zero >= 3) state.weights /= d;
  return state;
}

/// FSDP2's (torchtitan): the fp32 shard of each parameter, its fp32 gradient and the moments.
ParamState fsdp_param_state(int ranks) {
  const double d = ranks;
  return {.weights = 0, .gradients = 4 / d, .master = 4 / d, .optimizer = 8 / d};
}

/// DeepSpeed's ZeRO (its estimate_zero2/3_model_states_mem_needs): 16-bit weights and gradients,
/// the fp32 master copy, and the moments with the fp32 gradients (12) the optimizer keeps.
ParamState deepspeed_param_state(int zero, int ranks) {
  const double d = ranks;
  ParamState state{.weights = 2, .gradients = 2, .master = 4, .optimizer = 12};
  if (zero >= 1) state.master /= d, state.optimizer /= d;
  if (zero >= 2) state.gradients /= d;
  if (zero >= 3) state.weights /= d;
  return state;
}

ParamState param_state(TrainingStack stack, const std::string& dtype, bool bf16_gradients, int zero, int ranks) {
  switch (stack) {
    case TrainingStack::kTorchtitan: return fsdp_param_state(ranks);
    case TrainingStack::kDeepSpeed: return deepspeed_param_state(zero, ranks);
    default:
      return megatron_param_state(activation_bytes(dtype) == 4, megatron_gradient_bytes(dtype, bf16_gradients), zero, ranks);
  }
}

void set_param_state(MemoryTerms& terms, const ParamState& state) {
  terms.weights_bytes = state.weights;
  terms.gradients_bytes = state.gradients;
  terms.master_weights_bytes = state.master;
  terms.optimizer_states_bytes = state.optimizer;
}

/// The bigger of a moment's two candidate transients goes in: a unit's or the loss's (they are
/// of different ops, never live together).
void set_transient(MemoryTerms& terms, double layer_bytes, double loss_bytes) {
  if (loss_bytes > layer_bytes) terms.loss_bytes = loss_bytes;
  else terms.layer_transient_bytes = layer_bytes;
}

/// The terms PyTorch did not allocate: the reserve over the dynamic part of what it did (the
/// static state is allocated once, in large blocks), and the runtime's outside it.
void add_runtime(MomentRates& rates, const StageMemoryInputs& in) {
  const double share = in.runtime.reserve_share;
  for (MemoryTerms* terms : {&rates.per_param, &rates.per_expert_param, &rates.per_activation, &rates.fixed})
    terms->allocator_reserve_bytes = share * terms->dynamic_bytes();
  const double context = in.runtime.context_gib * kGib;
  rates.fixed.workspace_bytes += least_fixed_bytes(in.runtime, in.settings) - context;
  rates.fixed.runtime_bytes = context + in.runtime.nccl_gib_per_group * in.nccl_groups * kGib;
}

bool is_last_stage(const StageMemoryInputs& in) { return in.stage == in.pp - 1; }

/// The forward and backward moments hold the stage's activations of its micro-batches in flight
/// (per_activation: per sample held, the share kept on the GPU); the loss's of one micro-batch
/// only (its chunk's, on the last stage).
void hold_activations(MomentRates& forward, MomentRates& backward, const StageMemoryInputs& in) {
  const double kept = in.kept_activation_share;
  const double head_excess =
      is_last_stage(in) ? in.head_activation_bytes * std::max(0.0, in.held_samples * kept - in.samples) : 0;
  for (MomentRates* rates : {&forward, &backward}) {
    rates->per_activation.activations_bytes = kept;
    rates->fixed.activations_bytes = -head_excess;
  }
}

/// The step's three moments, each starting from what is held the whole step.
struct StepMoments {
  MomentRates forward, backward, step;
};
StepMoments step_moments(const MomentRates& held) {
  StepMoments moments{held, held, held};
  moments.forward.moment = MemoryMoment::kForward;
  moments.backward.moment = MemoryMoment::kBackward;
  moments.step.moment = MemoryMoment::kOptimizerStep;
  return moments;
}

/// The loss's transient in a pass of one micro-batch: on the last stage only.
double loss_transient_bytes(const StageMemoryInputs& in, MemoryMoment moment) {
  if (!is_last_stage(in)) return 0;
  const double per_sample =
      moment == MemoryMoment::kForward ? in.head_transient.forward_bytes : in.head_transient.backward_bytes;
  return per_sample * in.samples;
}

/// A unit's transient or the loss's in both passes, as the unit's own passes make them.
void set_pass_transients(StepMoments& m, const StageMemoryInputs& in) {
  set_transient(m.forward.fixed, in.layer_transient.forward_bytes * in.samples,
                loss_transient_bytes(in, MemoryMoment::kForward));
  set_transient(m.backward.fixed, in.layer_transient.backward_bytes * in.samples,
                loss_transient_bytes(in, MemoryMoment::kBackward));
}

/// The moments with the runtime's terms added, in MemoryMoment's order.
std::vector<MomentRates> with_runtime(const StepMoments& m, const StageMemoryInputs& in) {
  std::vector<MomentRates> moments{m.forward, m.backward, m.step};
  for (MomentRates& rates : moments) add_runtime(rates, in);
  return moments;
}

/// Megatron-Core: persistent state as its DistributedDataParallel and optimizer keep it (a
/// contiguous gradient buffer; the distributed optimizer's shards), the activations in flight, a
/// unit's transient or the loss's on top; the optimizer step after the activations are freed,
/// with fp16's fp32 copy of the gradients (Float16OptimizerWithFloat16Params, or the shard's with
/// the distributed optimizer) and --grad-reduce-in-bf16's fp32 copy of the shard's.
std::vector<MomentRates> megatron_rates(const StageMemoryInputs& in) {
  const ModelSpec& model = *in.model;
  const double e = in.element_bytes, gradient_bytes = in.gradient_bytes, weight_bytes = e == 4 ? 4 : 2;
  ParamState dense = megatron_param_state(e == 4, gradient_bytes, in.zero_stage, in.grad_ranks);
  ParamState experts = megatron_param_state(e == 4, gradient_bytes, in.zero_stage, in.expert_grad_ranks);
  if (in.settings.bf16_optimizer)
    for (ParamState* state : {&dense, &experts}) {
      // bf16 moments (2 + 2 bytes) and no fp32 master copy: the bf16 weights are the master.
      state->optimizer /= 2;
      state->master = 0;
    }
  MomentRates held;
  set_param_state(held.per_param, dense);
  set_param_state(held.per_expert_param, experts);
  // The local layers' all-gather buffer under sequence parallelism: the micro-batch's whole
  // sequence at full width, kept for reuse (Megatron's global memory buffer).
  const double tokens = in.samples * model.sequence / in.mode.cp;
  if (!in.settings.transformer_engine && in.mode.sequence_parallel) held.fixed.workspace_bytes += tokens * model.hidden * e;
  // Its unfused attention's scores buffer, reused by every layer (the global memory buffer too).
  if (!in.settings.transformer_engine && !model.flash_attention)
    held.fixed.workspace_bytes += tokens * double(model.heads) / in.tp * model.sequence / in.mode.cp * e;
  if (in.zero_stage >= 3) {
    // Megatron-FSDP gathers a layer ahead of the one computing, and reduce-scatters a
    // layer's gradients after its backward.
    held.fixed.gathered_params_bytes = 2 * in.largest_layer_params * weight_bytes;
  }

  StepMoments m = step_moments(held);
  hold_activations(m.forward, m.backward, in);
  set_transient(m.forward.fixed, in.layer_transient.forward_bytes * in.samples,
                loss_transient_bytes(in, MemoryMoment::kForward));
  // Without gradient-accumulation fusion each weight's gradient is a temporary before it is added
  // to the buffer; the embedding's backward always makes a dense one.
  const double gradient_temporary = (in.settings.gradient_accumulation_fusion ? 0 : in.largest_matrix_params) * weight_bytes;
  const double embedding_gradient = in.stage == 0 ? in.embedding_params * weight_bytes : 0;
  set_transient(m.backward.fixed,
                std::max({in.layer_transient.backward_bytes * in.samples, gradient_temporary, embedding_gradient}),
                loss_transient_bytes(in, MemoryMoment::kBackward));
  if (in.zero_stage >= 3) m.backward.fixed.unreduced_grads_bytes = in.largest_layer_params * gradient_bytes;
  // A 16-bit gradient (fp16's, or bf16's with --grad-reduce-in-bf16) gets an fp32 copy to step
  // with, unless the optimizer steps in bf16.
  if (gradient_bytes == 2 && e == 2 && !in.settings.bf16_optimizer) {
    m.step.per_param.optimizer_step_bytes = 4.0 / (in.zero_stage >= 1 ? in.grad_ranks : 1);
    m.step.per_expert_param.optimizer_step_bytes = 4.0 / (in.zero_stage >= 1 ? in.expert_grad_ranks : 1);
  }
  return with_runtime(m, in);
}

/// torch.distributed.pipelining's buffers on one rank (torchtitan's pipeline parallelism): every
/// stage but the first allocates a buffer for each micro-batch's input at the start, every stage
/// but the last one for each micro-batch's output gradient, and each keeps the outputs of the
/// micro-batches it holds until their backward; with `pipeline_keeps_outputs` the last stage
/// keeps every micro-batch's logits (the one in its backward pass too; before, the others).
double pipeline_buffer_bytes(const StageMemoryInputs& in, MemoryMoment moment) {
  const int v = std::max(1, in.virtual_stages), stages = in.pp * v;
  int receiving = 0, sending = 0;
  bool holds_last = false;
  for (int chunk = 0; chunk < v; ++chunk) {
    const int index = in.stage + chunk * in.pp;
    receiving += index > 0;
    sending += index < stages - 1;
    holds_last = holds_last || index == stages - 1;
  }
  const double boundary = in.boundary_bytes_per_sample;
  double bytes = in.microbatches * in.samples * boundary * (receiving + sending) + in.held_samples * boundary * sending;
  if (holds_last && in.settings.pipeline_keeps_outputs)
    bytes += (in.microbatches - (moment == MemoryMoment::kForward ? 1 : 0)) * in.samples * in.output_bytes_per_sample;
  return bytes;
}

/// PyTorch FSDP2 as torchtitan runs it (mixed precision: bf16 compute, fp32 sharded parameters
/// and gradients, reduce-scatter in fp32): the fp32 shard, its gradient and Adam's moments over
/// dp_shard x cp GPUs; the gathered 16-bit layers (the one computing and the one prefetched,
/// and the root module's embedding, final norm and output head, gathered for the whole forward
/// and again for the backward); under pipeline parallelism every layer of the stage stays
/// gathered between micro-batches and its gradients accumulate unsharded in fp32 until the last.
std::vector<MomentRates> torchtitan_rates(const StageMemoryInputs& in) {
  const double gathered_bytes = in.settings.float8_all_gather ? 1 : 2;
  const double root_params = in.embedding_params + in.head_params;
  MomentRates held;
  set_param_state(held.per_param, fsdp_param_state(in.grad_ranks));
  held.per_expert_param = held.per_param;
  StepMoments m = step_moments(held);
  if (in.pp > 1) {
    // The stage's parameters stay gathered (float8 for the linear layers where gathered so; the
    // embedding and head in bf16); their gradients accumulate in fp32 from the first backward.
    for (MomentRates* rates : {&m.forward, &m.backward}) {
      rates->per_param.gathered_params_bytes = rates->per_expert_param.gathered_params_bytes = gathered_bytes;
      rates->fixed.gathered_params_bytes = (2 - gathered_bytes) * root_params;
      rates->per_param.unreduced_grads_bytes = rates->per_expert_param.unreduced_grads_bytes = 4;
      rates->fixed.pipeline_buffers_bytes = pipeline_buffer_bytes(in, rates->moment);
    }
  } else {
    m.forward.fixed.gathered_params_bytes = 2 * root_params + 2 * in.largest_layer_params * gathered_bytes;
    m.backward.fixed.gathered_params_bytes = m.forward.fixed.gathered_params_bytes;
    // A layer's bf16 gradients and their fp32 copy for the reduce-scatter; the head's bf16
    // gradients wait for the root's reduce-scatter at the end of the backward pass.
    m.backward.fixed.unreduced_grads_bytes = 6 * in.largest_layer_params + 2 * in.head_params;
  }
  hold_activations(m.forward, m.backward, in);
  set_pass_transients(m, in);
  return with_runtime(m, in);
}

/// DeepSpeed's ZeRO (its estimate_zero2/3_model_states_mem_needs): 16-bit weights and gradients
/// and the fp32 master copy, gradient copy and moments, sharded by stage (1: the optimizer's, 2:
/// and the gradients, 3: everything, with the largest layer's weights and gradients gathered);
/// the gradient reduce bucket (reduce_bucket_size, 5e8 elements) in the training precision.
std::vector<MomentRates> deepspeed_rates(const StageMemoryInputs& in) {
  MomentRates held;
  set_param_state(held.per_param, deepspeed_param_state(in.zero_stage, in.grad_ranks));
  held.per_expert_param = held.per_param;
  if (in.zero_stage >= 1) held.fixed.workspace_bytes = 5e8 * 2;
  if (in.zero_stage >= 3) held.fixed.gathered_params_bytes = 4 * in.largest_layer_params;
  StepMoments m = step_moments(held);
  hold_activations(m.forward, m.backward, in);
  set_pass_transients(m, in);
  return with_runtime(m, in);
}

}  // namespace

double static_bytes_per_param(TrainingStack stack, const std::string& dtype, bool bf16_gradients, int zero_stage,
                              int ranks) {
  const ParamState state = param_state(stack, dtype, bf16_gradients, zero_stage, ranks);
  return state.weights + state.gradients + state.master + state.optimizer;
}

double megatron_gradient_bytes(const std::string& dtype, bool bf16_gradients) {
  if (activation_bytes(dtype) == 4) return 4;
  return dtype == "fp16" || (bf16_gradients && has_bf16_gradients(dtype)) ? 2 : 4;
}

double least_fixed_bytes(const RuntimeMemory& runtime, const MemorySettings& settings) {
  const bool transformer_engine = settings.stack == TrainingStack::kMegatron && settings.transformer_engine;
  return (runtime.context_gib + runtime.workspace_gib + (transformer_engine ? runtime.te_workspace_gib : 0)) * kGib;
}

double held_microbatches(int pp, int stage, int m, int virtual_stages) {
  if (virtual_stages <= 1) return std::min(pp - stage, m);
  const int warmup_chunks = (pp - stage - 1) * 2 + (virtual_stages - 1) * pp;
  return double(std::min(warmup_chunks + 1, m * virtual_stages)) / virtual_stages;
}

std::vector<MomentRates> stage_memory_rates(const StageMemoryInputs& inputs) {
  switch (inputs.settings.stack) {
    case TrainingStack::kTorchtitan: return torchtitan_rates(inputs);
    case TrainingStack::kDeepSpeed: return deepspeed_rates(inputs);
    default: return megatron_rates(inputs);
  }
}

}  // namespace fasop
