// AnalyticPolicy's memory: each stage's moments as its training stack allocates them
// (stage_memory_rates.h) over prefix sums of its units' parameters and activations.
#include <algorithm>
#include <limits>

#include "costmodel/analytic_policy.h"
#include "specs/precision.h"

namespace fasop {
namespace {

/// What a stage's memory depends on beyond its units' sums, of the model at one tp: the largest
/// transient of a transformer unit and the loss's, the largest layer and weight matrix, and the
/// embedding's and head's parameters.
struct ModelSizes {
  double element_bytes = 2, gradient_bytes = 4;  ///< of the model's precision (stage_memory_rates.h)
  UnitTransient layer, head;
  double head_activation_bytes = 0;  ///< one sample's
  double largest_layer_params = 0, largest_layer_matrix = 0, embedding_params = 0, head_params = 0;
};

/// One pass over the model's units at tp `tp` (a run of like units computed once): the prefix
/// sums of their parameters and one sample's activations on a GPU (`params`, `activations`;
/// either may be null) and the sizes a stage's memory needs. A tied head that shares its stage
/// with the embedding (one stage) is the embedding's own weight.
ModelSizes measure_units(const ModelSpec& m, const PlanKey& k, int tp, const ActivationMode& mode,
                         std::vector<double>* params, std::vector<double>* activations) {
  ModelSizes sizes;
  sizes.element_bytes = activation_bytes(m.dtype);
  sizes.gradient_bytes = megatron_gradient_bytes(m.dtype, m.grad_reduce_in_bf16);
  const double vocab_rows = double(padded_vocab_shard(m.vocab, tp, kMegatronVocabMultiple));
  const double shared_head = shared_head_params(m, k.pp, tp);
  if (params) params->assign(m.units.size() + 1, 0);
  if (activations) activations->assign(m.units.size() + 1, 0);
  double unit_param = 0, unit_kept = 0;
  for (size_t u = 0; u < m.units.size(); ++u) {
    // Layers repeat: a unit like the one before has its sizes (every search layout asks).
    const LayerUnit& unit = m.units[u];
    if (u == 0 || unit.role != m.units[u - 1].role || unit.cross_attention != m.units[u - 1].cross_attention ||
        unit.moe != m.units[u - 1].moe) {
      const UnitActivationMemory memory = unit_activation_memory(m, unit, tp, 1, mode);
      unit_param = unit_params(m, unit, tp);
      unit_kept = memory.kept_bytes;
      switch (unit.role) {
        case LayerRole::kEmbedding:
          sizes.embedding_params = unit_param;
          break;
        case LayerRole::kPostProcess:
          sizes.head = memory.transient;
          sizes.head_params = unit_param;
          sizes.head_activation_bytes = unit_kept;
          unit_param -= shared_head;
          break;
        case LayerRole::kTransformer:
          sizes.layer.forward_bytes = std::max(sizes.layer.forward_bytes, memory.transient.forward_bytes);
          sizes.layer.backward_bytes = std::max(sizes.layer.backward_bytes, memory.transient.backward_bytes);
          sizes.largest_layer_params =
              std::max(sizes.largest_layer_params, unit_param + unit_expert_params(m, unit, k.ep, k.etp));
          break;
      }
    }
    if (params) (*params)[u + 1] = (*params)[u] + unit_param;
    if (activations) (*activations)[u + 1] = (*activations)[u] + unit_kept;
  }
  // The widest weight: the first MLP GEMM's (SwiGLU's two halves fused), or the vocabulary's.
  const double mlp_columns = (is_gated(m.activation) ? 2.0 : 1.0) * m.ffn_hidden / tp;
  sizes.largest_layer_matrix = std::max(mlp_columns * m.hidden, vocab_rows * m.hidden);
  return sizes;
}

/// The model's sizes at each tp a plan's stages use, measured once each.
using SizesByTp = std::vector<std::pair<int, ModelSizes>>;
/// Those at tp `tp`, measured now where `cache` lacks them (valid until the next call).
const ModelSizes& sizes_at(SizesByTp& cache, const ModelSpec& m, const PlanKey& k, int tp, const MemorySettings& settings) {
  auto sizes = std::find_if(cache.begin(), cache.end(), [tp](const auto& entry) { return entry.first == tp; });
  if (sizes == cache.end())
    sizes = cache.insert(cache.end(), {tp, measure_units(m, k, tp, activation_mode(k, tp, settings), nullptr, nullptr)});
  return sizes->second;
}

/// The NCCL communicators a rank of stage `stage` joins: tensor, context and data parallelism
/// (and the gradients' data x context group), the pipeline's point-to-point one, the tied
/// embedding's, the model-parallel one (the gradient norm), expert and expert-data parallelism.
int nccl_groups(const PlanKey& k, int stage, bool tied, TrainingStack stack) {
  auto count = [](bool used) { return used ? 1 : 0; };
  if (stack == TrainingStack::kTorchtitan)
    return count(k.dp * k.cp > 1) + count(k.tp > 1) + count(k.pp > 1) + count(k.cp > 1) + count(k.ep > 1);
  const bool edge = stage == 0 || stage == k.pp - 1;
  return count(k.tp > 1) + count(k.cp > 1) + count(k.dp * k.cp > 1) + count(k.cp > 1 && k.dp > 1) + count(k.pp > 1) +
         count(tied && k.pp > 1 && edge) + count(k.tp * k.pp > 1) + count(k.ep > 1) +
         count(k.ep > 1 && expert_data_parallel(k) > 1);
}

/// Stage `stage`'s inputs to stage_memory_rates under ZeRO stage `zero_stage`; `sizes` holds
/// the model's at the stage's tp, `runtime` its smallest GPU's constants.
StageMemoryInputs stage_inputs(const PlanContext& ctx, const AnalyticOptions& options, int stage, int zero_stage,
                               const ModelSizes& sizes, const RuntimeMemory& runtime) {
  const PlanKey& k = ctx.key;
  const ModelSpec& m = *ctx.model;
  const int tp = ctx.stage_tp(stage);
  // A speed-split stage holds the activations of its busiest replica's share.
  const double samples = ctx.splits_stage(stage) ? ctx.split_memory_samples[stage] : ctx.stage_mbs(stage);
  const bool first = stage == 0, last = stage == k.pp - 1;
  StageMemoryInputs in;
  in.model = &m;
  in.element_bytes = sizes.element_bytes;
  in.gradient_bytes = sizes.gradient_bytes;
  in.settings = options.memory;
  in.runtime = runtime;
  in.zero_stage = zero_stage;
  in.pp = k.pp;
  in.stage = stage;
  in.tp = tp;
  in.grad_ranks = ctx.stage_grad_ranks(stage);
  in.expert_grad_ranks = expert_data_parallel(k);
  in.samples = samples;
  in.held_samples = held_microbatches(k.pp, stage, ctx.num_microbatches, k.virtual_stages) * samples;
  in.microbatches = ctx.num_microbatches;
  in.virtual_stages = k.virtual_stages;
  const double tokens = double(m.sequence) / k.cp;
  in.boundary_bytes_per_sample = tokens * m.hidden * sizes.element_bytes / tp;
  in.output_bytes_per_sample = tokens * double(padded_vocab_shard(m.vocab, tp, 1)) * sizes.element_bytes;
  // Offloaded layers' activations wait in host memory; one layer's is in transit at a time.
  if (options.memory.activation_offload_layers > 0) {
    const int layers = m.num_transformer_layers(), offloaded = std::min(options.memory.activation_offload_layers, layers);
    in.kept_activation_share = double(layers - offloaded + 1) / layers;
  }
  in.mode = activation_mode(k, tp, options.memory);
  in.layer_transient = sizes.layer;
  in.head_transient = last ? sizes.head : UnitTransient{};
  in.head_activation_bytes = last ? sizes.head_activation_bytes : 0;
  in.largest_layer_params = sizes.largest_layer_params;
  in.largest_matrix_params = sizes.largest_layer_matrix;
  in.embedding_params = first ? sizes.embedding_params : 0;
  in.head_params = last ? sizes.head_params : 0;
  in.nccl_groups = nccl_groups(k, stage, m.tied_embeddings, options.memory.stack);
  return in;
}

/// Whether two middle stages' inputs give the same rates (the rates of a middle stage read
/// neither its index nor the samples it holds, but torchtitan's pipeline buffers keep the
/// outputs of the micro-batches held).
bool same_rates(const StageMemoryInputs& a, const StageMemoryInputs& b) {
  const bool keeps_outputs = a.settings.stack == TrainingStack::kTorchtitan;
  return (!keeps_outputs || a.held_samples == b.held_samples) && a.tp == b.tp && a.grad_ranks == b.grad_ranks && a.expert_grad_ranks == b.expert_grad_ranks &&
         a.samples == b.samples && a.kept_activation_share == b.kept_activation_share && a.nccl_groups == b.nccl_groups &&
         a.runtime.workspace_gib == b.runtime.workspace_gib && a.runtime.te_workspace_gib == b.runtime.te_workspace_gib &&
         a.runtime.reserve_share == b.runtime.reserve_share && a.runtime.context_gib == b.runtime.context_gib &&
         a.runtime.nccl_gib_per_group == b.runtime.nccl_gib_per_group && a.largest_layer_params == b.largest_layer_params;
}

}  // namespace

std::optional<MemoryModel> AnalyticPolicy::memory_model(const PlanContext& ctx) const {
  const ModelSpec& m = *ctx.model;
  const PlanKey& k = ctx.key;
  const MemorySettings& settings = options_.memory;
  MemoryModel model;
  // Activations grow in proportion to the micro-batch: the prefix holds one sample's, and each
  // stage scales them by the samples it holds (stages may differ with per-stage dp).
  SizesByTp sizes_by_tp;
  sizes_by_tp.emplace_back(k.tp, measure_units(m, k, k.tp, activation_mode(k, k.tp, settings), &model.params_prefix,
                                               &model.activation_prefix));
  std::vector<int> stage_tps;  // the distinct stage tps, in order of first use
  for (int s = 0; s < k.pp && !k.stage_tp.empty(); ++s) {
    const auto seen = std::find(stage_tps.begin(), stage_tps.end(), k.stage_tp[s]);
    model.stage_table.push_back(static_cast<int>(seen - stage_tps.begin()));
    if (seen != stage_tps.end()) continue;
    stage_tps.push_back(k.stage_tp[s]);
    model.table_params_prefix.emplace_back();
    model.table_activation_prefix.emplace_back();
    const ModelSizes sizes = measure_units(m, k, k.stage_tp[s], activation_mode(k, k.stage_tp[s], settings),
                                           &model.table_params_prefix.back(), &model.table_activation_prefix.back());
    if (k.stage_tp[s] != k.tp) sizes_by_tp.emplace_back(k.stage_tp[s], sizes);
  }
  if (m.moe.enabled()) {
    model.expert_params_prefix.assign(m.units.size() + 1, 0);
    double unit_experts = 0;
    for (size_t u = 0; u < m.units.size(); ++u) {
      if (u == 0 || m.units[u].role != m.units[u - 1].role || m.units[u].moe != m.units[u - 1].moe)
        unit_experts = unit_expert_params(m, m.units[u], k.ep, k.etp);
      model.expert_params_prefix[u + 1] = model.expert_params_prefix[u] + unit_experts;
    }
  }
  std::vector<std::pair<const NodeType*, RuntimeMemory>> runtimes;  // each node type's, looked up once
  StageMemoryInputs middle;  // the last middle stage's inputs: the next one's rates are the same where they agree
  for (int s = 0; s < k.pp; ++s) {
    const ModelSizes& sizes = sizes_at(sizes_by_tp, m, k, ctx.stage_tp(s), settings);
    const NodeType& type = ctx.stage_smallest_memory_type(s);
    auto runtime = std::find_if(runtimes.begin(), runtimes.end(), [&](const auto& entry) { return entry.first == &type; });
    if (runtime == runtimes.end())
      runtime = runtimes.insert(runtimes.end(), {&type, type.gpu_data.runtime_memory(settings.stack)});
    const StageMemoryInputs inputs = stage_inputs(ctx, options_, s, k.zero_stage, sizes, runtime->second);
    model.held_samples.push_back(inputs.held_samples);
    // A middle stage's rates depend neither on its index nor on the samples it holds.
    const bool edge = s == 0 || s == k.pp - 1;
    if (!edge && s > 1 && same_rates(inputs, middle)) {
      model.add_stage_like_previous();
    } else {
      model.add_stage(stage_memory_rates(inputs));
      if (!edge) middle = inputs;
    }
    const double capacity = type.gpu_memory_gib * kGib;
    model.capacity_bytes.push_back(capacity);
    model.limit_bytes.push_back(capacity - options_.headroom.bytes(capacity));
  }
  return model;
}

std::vector<StageMemory> AnalyticPolicy::stage_memory(const PlanContext& ctx, const std::vector<int>& partition) const {
  const MemoryModel& model = *ctx.partition_memory;
  const PlanKey& k = ctx.key;
  std::vector<StageMemory> stages;
  SizesByTp sizes_by_tp;
  for (int s = 0, first = 0; s < ctx.pp(); first += partition[s], ++s) {
    const int end = first + partition[s];
    StageMemory mem;
    mem.breakdown = model.breakdown(s, first, end);
    mem.gib = mem.breakdown->terms.device_bytes() / kGib;
    mem.limit_gib = model.limit_bytes[s] / kGib;
    // FASOP's second figure: the same stage with everything sharded over its data-parallel GPUs.
    const ModelSizes& sizes = sizes_at(sizes_by_tp, *ctx.model, k, ctx.stage_tp(s), options_.memory);
    const RuntimeMemory runtime = ctx.stage_smallest_memory_type(s).gpu_data.runtime_memory(options_.memory.stack);
    const std::vector<MomentRates> sharded = stage_memory_rates(stage_inputs(ctx, options_, s, 3, sizes, runtime));
    mem.zero_gib = MemoryModel::worst_bytes(MemoryModel::totals_of(sharded), model.stage_param_sum(s, first, end),
                                            model.stage_expert_sum(first, end), model.stage_activation_sum(s, first, end)) /
                   kGib;
    stages.push_back(mem);
  }
  return stages;
}

MemoryVerdict AnalyticPolicy::memory_verdict(const std::vector<StageMemory>& stages) const {
  MemoryVerdict verdict;
  verdict.free_gib = std::numeric_limits<double>::infinity();
  for (size_t s = 0; s < stages.size(); ++s) {
    const StageMemory& mem = stages[s];
    verdict.oom_gpumem_gib = std::max(verdict.oom_gpumem_gib, mem.gib);
    verdict.zero_oom_gpumem_gib = std::max(verdict.zero_oom_gpumem_gib, mem.zero_gib);
    verdict.is_oom = verdict.is_oom || mem.gib > mem.limit_gib;
    verdict.is_zero_oom = verdict.is_zero_oom || mem.zero_gib > mem.limit_gib;
    const double capacity = mem.breakdown ? mem.breakdown->capacity_bytes / kGib : mem.limit_gib;
    if (capacity - mem.gib < verdict.free_gib) {
      verdict.free_gib = capacity - mem.gib;
      verdict.worst_stage = static_cast<int>(s);
      verdict.worst_gib = mem.gib;
      verdict.capacity_gib = capacity;
      verdict.headroom_gib = capacity - mem.limit_gib;
    }
  }
  if (stages.empty()) verdict.free_gib = 0;
  return verdict;
}

}  // namespace fasop
