#include "search/shape_floor.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <utility>

#include "costmodel/analytic_policy.h"

namespace fasop {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
/// Present-type sets are bit masks; above this many node types they are not tabulated.
constexpr size_t kTabulatedTypes = 12;
/// Above this many node types no mask holds them: the floors give up (0), which is still a floor.
constexpr size_t kMaskTypes = 30;

/// The tensor-parallel degrees the space can try on the inventory.
std::vector<int> tp_options(const ModelSpec& model, const ClusterSpec& inventory, const SearchSpaceOptions& space) {
  std::vector<int> tps;
  for (int tp : divisors(largest_tp(inventory, space)))
    if (space.max_tp > 0 || (model.heads % tp == 0 && model.kv_heads % tp == 0)) tps.push_back(tp);
  return tps;
}

/// The present-type set of a shape: bit t for a count of node type t.
unsigned type_mask(const NodeCounts& counts) {
  unsigned mask = 0;
  for (size_t t = 0; t < counts.size(); ++t)
    if (counts[t] > 0) mask |= 1u << t;
  return mask;
}

/// The space trains every layout in the model's precision without context or expert
/// parallelism: its layers are timed by the search's one profile per node type.
bool one_profile_space(const SearchSpaceOptions& space) {
  auto ones = [](const std::vector<int>& degrees) {
    return std::all_of(degrees.begin(), degrees.end(), [](int d) { return d == 1; });
  };
  return ones(space.cp) && ones(space.ep) &&
         std::all_of(space.precisions.begin(), space.precisions.end(), [](const std::string& p) { return p.empty(); });
}

/// The space gives every layout one tp, one micro-batch size and one dp, timed by one profile:
/// the configuration floors hold.
bool plain_space(const SearchSpaceOptions& space) {
  return !space.per_stage_dp && !space.per_stage_tp && !space.uneven_dp && !space.speed_split && one_profile_space(space);
}

/// Every set of profiles the space's layouts are timed with: the search's own, and one per
/// precision, cp and ep beyond it (SearchInput::profiles_for).
std::vector<const NodeTypeProfiles*> profile_sets(const SearchInput& input) {
  std::vector<const NodeTypeProfiles*> sets = {&input.profiles};
  for (const auto& [key, profiles] : input.parallel_profiles) sets.push_back(&profiles);
  return sets;
}

/// The least of node type t's forward-and-backward times of layer type `layer` at (tp, mbs)
/// over the sets that time it at tp (infinity where none does). Context parallelism's times are
/// a GPU's share of the sequence: a micro-batch's pass on the cp GPUs takes that time and cp
/// times its GPU-seconds, both at least the least time (the floors stay floors, if looser).
double least_layer_time_s(const std::vector<const NodeTypeProfiles*>& sets, size_t t, const std::string& layer, int tp,
                          int mbs) {
  double least = kInf;
  for (const NodeTypeProfiles* set : sets) {
    const ProfileSpec* profile = t < set->size() ? (*set)[t] : nullptr;
    if (profile && profile->has(layer, tp)) least = std::min(least, profile->forward_backward_time_s(layer, tp, mbs));
  }
  return least;
}

/// The activations a recomputation mode keeps (selective: the search's modules), with or
/// without sequence parallelism, on the stack of `settings`.
ActivationMode activation_mode_of(RecomputeMode recompute, bool sequence_parallel, RecomputeModules modules,
                                  const MemorySettings& settings) {
  PlanKey key;
  key.set_recompute(recompute);
  key.recompute_modules = modules;
  key.sequence_parallel = sequence_parallel;
  key.tp = sequence_parallel ? 2 : 1;  // any tp above 1 keeps sequence parallelism on
  return activation_mode(key, settings);
}

/// The memory settings of the search's policy: the analytic policy's, else Megatron's.
MemorySettings memory_settings_of(const SearchInput& input) {
  const AnalyticOptions* analytic = input.policy->floor_facts().analytic;
  return analytic ? analytic->memory : MemorySettings{};
}

/// `values` ascending, each once.
template <typename T>
std::vector<T> sorted_unique(std::vector<T> values) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

/// The GPUs of `counts`, each weighted by its type's credit.
double credited_gpus(const ClusterSpec& inventory, const NodeCounts& counts, const std::vector<double>& credit) {
  double capacity = 0;
  for (size_t t = 0; t < counts.size(); ++t)
    if (counts[t] > 0) capacity += double(counts[t]) * inventory.node_types[t].gpus_per_node * credit[t];
  return capacity;
}

/// What a layout at (tp, mbs, dp, ZeRO, recomputation) keeps on a GPU, at the least: the
/// lightest transformer layer's state (parameters, gradients, optimizer) and its activations per
/// micro-batch in flight, and every unit's state with one micro-batch's activations (one stage
/// holds every unit, embedding and head too).
struct LayerFootprint {
  double state_bytes = kInf, activation_bytes = kInf;
  double whole_state_bytes = 0, whole_activation_bytes = 0;  ///< every unit's
  double activation_factor = 1;  ///< the allocator's reserve on activations, 1 + its share
  /// The least a stage holding a layer holds beyond its units at its peak: the smallest layer's
  /// larger transient (the forward and backward moments hold the same state and activations).
  double transient_bytes = 0;
  double whole_bytes() const { return whole_state_bytes + (whole_activation_bytes + transient_bytes) * activation_factor; }
  int layers = 0;
  int microbatches = 1;  ///< m = B / (mbs dp): no stage holds more in flight
};

LayerFootprint layer_footprint(const ModelSpec& model, const SearchSpaceOptions& space, const MemorySettings& settings,
                               int tp, int mbs, int dp, int zero, RecomputeMode recompute) {
  // A layer's least parameters and activations (one sample) with or without sequence
  // parallelism, and every unit's.
  LayerFootprint fp;
  double params = kInf, activations = kInf, transient = kInf, all_params = 0, all_activations = 0;
  for (const LayerUnit& unit : model.units) {
    const double unit_p = unit_params(model, unit, tp);
    double unit_a = kInf, unit_t = kInf;
    for (bool sp : space.sequence_parallel) {
      const ActivationMode mode = activation_mode_of(recompute, sp && tp > 1, space.recompute_modules, settings);
      unit_a = std::min(unit_a, unit_activation_bytes(model, unit, tp, 1, mode));
      const UnitTransient t = unit_transient_bytes(model, unit, tp, 1, mode);
      unit_t = std::min(unit_t, std::max(t.forward_bytes, t.backward_bytes));
    }
    all_params += unit_p;
    all_activations += unit_a;
    if (unit.role != LayerRole::kTransformer) continue;
    ++fp.layers;
    params = std::min(params, unit_p);
    activations = std::min(activations, unit_a);
    transient = std::min(transient, unit_t);
  }
  fp.transient_bytes = transient < kInf ? transient * mbs : 0;
  const double per_param = static_bytes_per_param(settings.stack, model.dtype, model.grad_reduce_in_bf16, zero, dp);
  // Offloading leaves a GPU its share of a stage's activations (stage_memory_rates.h).
  const int layers = model.num_transformer_layers(), offloaded = std::min(settings.activation_offload_layers, layers);
  const double kept = offloaded > 0 ? double(layers - offloaded + 1) / layers : 1;
  fp.state_bytes = params * per_param;
  fp.activation_bytes = activations * mbs * kept;
  // The whole model on one stage holds a tied head's weight once (the embedding's).
  fp.whole_state_bytes = (all_params - shared_head_params(model, 1, tp)) * per_param;
  fp.whole_activation_bytes = all_activations * mbs * kept;
  fp.microbatches = model.global_batch / (mbs * dp);
  return fp;
}

/// The most transformer layers a stage k-th from the end (k = 1 the last) can hold in `room`
/// bytes (a GPU's memory less the plan's headroom), k = 1 .. layers: under 1F1B it holds
/// min(k, m) micro-batches in flight; no more than the model's layers (empty: one stage holds
/// the whole model, so any holds any layers). The memory model's other terms only add to it.
std::vector<uint16_t> layer_caps(const LayerFootprint& fp, double room) {
  if (fp.layers == 0 || (room > 0 && fp.whole_bytes() <= room)) return {};
  std::vector<uint16_t> caps(fp.layers, 0);
  for (int k = 1; k <= fp.layers && room > 0; ++k)
    caps[k - 1] = static_cast<uint16_t>(std::clamp<double>(
        std::floor((room - fp.transient_bytes * fp.activation_factor) /
                   (fp.state_bytes + fp.activation_bytes * fp.activation_factor * std::min(k, fp.microbatches))),
        0, fp.layers));
  return caps;
}

/// The least pp whose stages can hold every transformer layer, given each stage's caps
/// (ShapeFloor's per-configuration memory floor); INT_MAX: none.
int least_fitting_pp(const std::vector<uint16_t>& caps, int layers) {
  if (caps.empty()) return 1;
  int held = 0;
  for (int pp = 1; pp <= layers; ++pp) {
    held += caps[pp - 1];
    // The whole model does not fit one stage: two at the least.
    if (held >= layers) return std::max(pp, 2);
  }
  return std::numeric_limits<int>::max();
}

}  // namespace

ShapeFloor::ShapeFloor(const SearchInput& input, bool stage_type_is_slowest_rank, bool check_memory)
    // Which type is a stage's slowest depends on the profile a layout is timed with: with more
    // than one, every type of the shape counts.
    : slowest_rank_(stage_type_is_slowest_rank && one_profile_space(input.space)), inventory_(input.cluster) {
  const ModelSpec& model = *input.model;
  const size_t types = inventory_->node_types.size();
  if (types > kMaskTypes) return;
  // Distinct layer types in unit order, with how many units each has.
  std::vector<std::string> layers;
  for (const LayerUnit& unit : model.units) {
    auto at = std::find(layers.begin(), layers.end(), unit.type);
    if (at == layers.end()) {
      layers.push_back(unit.type), layer_counts_.push_back(0), at = layers.end() - 1;
      transformer_layer_.push_back(unit.role == LayerRole::kTransformer);
    }
    ++layer_counts_[at - layers.begin()];
  }
  const std::vector<int> tps = tp_options(model, *inventory_, input.space), mbss = divisors(model.global_batch);
  tps_ = tps.size();
  mbs_ = mbss.size();
  // Each type's layer times at every (tp, mbs), and ref: the fewest GPU-seconds per sample.
  std::vector<double> ref(layers.size(), kInf);
  points_.assign(types, {});
  // Where layouts differ in precision, cp or ep, each layer's time is the least over their
  // profiles: every floor below holds for each of them.
  const std::vector<const NodeTypeProfiles*> sets = profile_sets(input);
  for (size_t t = 0; t < types; ++t) {
    points_[t].assign(tps_, {});
    for (size_t i = 0; i < tps_; ++i) {
      const int tp = tps[i];
      if (!std::all_of(layers.begin(), layers.end(),
                       [&](const std::string& l) { return least_layer_time_s(sets, t, l, tp, mbss[0]) < kInf; }))
        continue;
      for (int mbs : mbss) {
        TypePoint point;
        for (size_t l = 0; l < layers.size(); ++l) {
          const double s = least_layer_time_s(sets, t, layers[l], tp, mbs);
          point.layer_s.push_back(s);
          point.whole_s += layer_counts_[l] * s;
          ref[l] = std::min(ref[l], tp * s / mbs);
        }
        points_[t][i].push_back(std::move(point));
      }
    }
  }
  double ref_sum = 0;
  for (size_t l = 0; l < layers.size(); ++l)
    if (ref[l] < kInf) ref_sum += layer_counts_[l] * ref[l];
  batch_ref_s_ = model.global_batch * ref_sum;
  for (size_t t = 0; t < types; ++t)
    for (size_t i = 0; i < tps_; ++i)
      for (size_t j = 0; j < points_[t][i].size(); ++j) {
        TypePoint& point = points_[t][i][j];
        point.ratio = kInf;
        for (size_t l = 0; l < layers.size(); ++l)
          if (ref[l] > 0 && ref[l] < kInf) point.ratio = std::min(point.ratio, tps[i] * point.layer_s[l] / mbss[j] / ref[l]);
      }
  if (check_memory) {
    // However ZeRO shards it, the shape's GPUs together hold every parameter's state once.
    const double params = one_stage_params(model, 1);
    double bytes = kInf;
    for (int zero : input.space.zero_stages)
      for (int dp : divisors(model.global_batch))
        for (const std::string& precision : input.space.precisions)
          bytes = std::min(bytes, static_bytes_per_param(memory_settings_of(input).stack, precision.empty() ? model.dtype : precision,
                                                         model.grad_reduce_in_bf16, zero, dp) * dp);
    min_state_bytes_ = params * bytes;
  }
  if (types <= kTabulatedTypes) {
    for (unsigned mask = 0; mask < (1u << types); ++mask) {
      credit_.push_back(credits(mask));
      path_floor_s_.push_back(path_floor_s(mask));
    }
    if (plain_space(input.space)) add_config_floors(input, tps, mbss, check_memory);
  }
}

void ShapeFloor::add_config_floors(const SearchInput& input, const std::vector<int>& tps, const std::vector<int>& mbss,
                                   bool check_memory) {
  const ModelSpec& model = *input.model;
  most_stages_ = model.num_transformer_layers();
  units_ = model.num_units();
  const std::vector<int>& vs = input.space.virtual_stages;
  interleaved_ = std::any_of(vs.begin(), vs.end(), [](int v) { return v > 1; });
  type_blocks_ = input.space.placements == PlacementKind::kTypeBlocks;
  const FloorFacts facts = input.policy->floor_facts();
  for (int zero = 0; zero < 4; ++zero) forward_share_[zero] = facts.forward_share_bound[zero];
  // Recomputation repeats part of the forward pass (the analytic policy's times; FASOP's
  // space has none): each mode is a configuration of its own, its time and memory apart.
  modes_ = sorted_unique(input.space.recompute);
  const AnalyticOptions* analytic = facts.analytic;
  sync_ = analytic;
  const MemorySettings settings = memory_settings_of(input);
  const MemoryHeadroom headroom = analytic ? analytic->headroom : MemoryHeadroom{.share = 0, .gib = 0};
  tp_values_ = tps;
  mbs_values_ = mbss;
  const std::vector<int> zeros = sorted_unique(input.space.zero_stages);
  const LinkFloorLimits limits = link_floor_limits(*inventory_);
  for (RecomputeMode recompute : modes_) {
    // A hair under the policy's factor: its passes round differently.
    const ActivationMode mode = activation_mode_of(recompute, false, input.space.recompute_modules, settings);
    const double factor = analytic ? recompute_time_factor(model, mode) * (1 - 1e-12) : 1;
    for (size_t i = 0; i < tps_; ++i) {
      const int tp = tps[i];
      const double all_params = one_stage_params(model, tp);  // one stage: pp 1
      const double first_params = model.units.empty() ? 0 : unit_params(model, model.units[0], tp);
      double layer_params = kInf, least_unit_params = kInf;  // the smallest transformer layer's, unit's
      for (const LayerUnit& unit : model.units) {
        const double params = unit_params(model, unit, tp);
        least_unit_params = std::min(least_unit_params, params);
        if (unit.role == LayerRole::kTransformer) layer_params = std::min(layer_params, params);
      }
      if (layer_params == kInf) layer_params = 0;
      if (least_unit_params == kInf) least_unit_params = 0;
      for (size_t j = 0; j < mbs_; ++j) {
        ConfigFloor config = config_times(i, j, factor * model.global_batch * tp / mbss[j], factor);
        config.tp = tp;
        for (int dp : divisors(model.global_batch / mbss[j]))
          for (int zero : zeros) {
            ConfigFloor::DpOption option{dp, zero, model.global_batch / (mbss[j] * dp), {}, {}, {}, {}, {}, {}, {}};
            const LayerFootprint footprint = layer_footprint(model, input.space, settings, tp, mbss[j], dp, zero, recompute);
            for (const NodeType& type : inventory_->node_types) {
              // A GPU's room: its memory less the headroom and what every moment holds besides
              // the units' state and activations (the allocator's reserve on these comes on top).
              const double capacity = type.gpu_memory_gib * kGib;
              const double fixed = analytic ? least_fixed_bytes(type.gpu_data.runtime_memory(settings.stack), settings) : 0;
              LayerFootprint reserved = footprint;
              reserved.activation_factor = 1 + (analytic ? type.gpu_data.runtime_memory(settings.stack).reserve_share : 0);
              option.layer_caps.push_back(check_memory ? layer_caps(reserved, capacity - headroom.bytes(capacity) - fixed)
                                                       : std::vector<uint16_t>());
              option.least_pp.push_back(least_fitting_pp(option.layer_caps.back(), footprint.layers));
              if (!sync_) continue;
              option.one_stage.push_back(sync_floor_parts(model, *sync_, type, limits, tp, dp, zero, all_params));
              option.first_stage.push_back(sync_floor_parts(model, *sync_, type, limits, tp, dp, zero, first_params));
              option.layer_stage.push_back(sync_floor_parts(model, *sync_, type, limits, tp, dp, zero, layer_params));
              option.unit_stage.push_back(sync_floor_parts(model, *sync_, type, limits, tp, dp, zero, least_unit_params));
            }
            if (sync_) option.send_s = send_floor_s_by_types(model, *inventory_, limits, tp, dp, mbss[j]);
            config.dps.push_back(std::move(option));
          }
        dp_stride_ = std::max(dp_stride_, config.dps.size());
        configs_.push_back(std::move(config));
      }
    }
  }
}

namespace {

/// ref_c(l): the fastest type's time of layer l at one configuration; r_c(t) the least ratio of
/// type t's layer times to them. The transformer layers' ratio r^L_c(t) likewise, over those
/// layers only: a type that runs the embedding and head nearly as fast as the fastest but its
/// layers slowly earns its layers' credit there.
struct LayerRatios {
  std::vector<double> ref, ratio, layer_ratio;
};
template <typename Has, typename LayerTime>
LayerRatios layer_ratios(size_t types, const std::vector<bool>& transformer_layer, Has has, LayerTime layer_s) {
  const size_t layers = transformer_layer.size();
  LayerRatios r{.ref = std::vector<double>(layers, kInf),
                .ratio = std::vector<double>(types, kInf),
                .layer_ratio = std::vector<double>(types, kInf)};
  for (size_t t = 0; t < types; ++t)
    for (size_t l = 0; l < layers && has(t); ++l) r.ref[l] = std::min(r.ref[l], layer_s(t, l));
  for (size_t t = 0; t < types; ++t)
    for (size_t l = 0; l < layers && has(t); ++l)
      if (r.ref[l] > 0) {
        r.ratio[t] = std::min(r.ratio[t], layer_s(t, l) / r.ref[l]);
        if (transformer_layer[l]) r.layer_ratio[t] = std::min(r.layer_ratio[t], layer_s(t, l) / r.ref[l]);
      }
  return r;
}

}  // namespace

ShapeFloor::ConfigFloor ShapeFloor::config_times(size_t i, size_t j, double batch_scale, double factor) const {
  const size_t types = points_.size(), layers = layer_counts_.size();
  auto has = [&](size_t t) { return !points_[t][i].empty(); };
  auto layer_s = [&](size_t t, size_t l) { return points_[t][i][j].layer_s[l]; };
  const LayerRatios ratios = layer_ratios(types, transformer_layer_, has, layer_s);
  const std::vector<double>& ref = ratios.ref;
  const std::vector<double>& ratio = ratios.ratio;
  const std::vector<double>& layer_ratio = ratios.layer_ratio;
  ConfigFloor config;
  for (size_t l = 0; l < layers; ++l)
    if (ref[l] < kInf) {
      config.work.batch_ref_s += batch_scale * layer_counts_[l] * ref[l];
      if (transformer_layer_[l]) config.layer_work.batch_ref_s += batch_scale * layer_counts_[l] * ref[l];
    }
  for (unsigned mask = 0; mask < (1u << types); ++mask) {
    auto present = [&](size_t t) { return (mask >> t & 1u) && has(t); };
    for (auto [floor, r] : {std::pair{&config.work, &ratio}, std::pair{&config.layer_work, &layer_ratio}}) {
      std::vector<double> credit(types, 0);
      for (size_t tau = 0; tau < types; ++tau)
        for (size_t t = 0; t < types && present(tau); ++t) {
          // As in credits(): a GPU runs in a stage of a type at least as slow as its own.
          if (!present(t) || (slowest_rank_ && points_[t][i][j].whole_s < points_[tau][i][j].whole_s)) continue;
          credit[tau] = std::max(credit[tau], (*r)[t] > 0 ? 1 / (*r)[t] : kInf);
        }
      double least_speed = kInf;
      for (size_t t = 0; t < types; ++t)
        if (present(t) && (*r)[t] > 0 && (*r)[t] < kInf) least_speed = std::min(least_speed, 1 / (*r)[t]);
      floor->least_speed.push_back(least_speed < kInf ? least_speed : 0);
      floor->credit.push_back(std::move(credit));
    }
    // Each layer type at its fastest present type: the path; the layer types fastest first;
    // the fastest transformer layer.
    double path = 0, least_layer = kInf;
    std::vector<std::pair<double, int>> fastest_layers;
    for (size_t l = 0; l < layers; ++l) {
      double fastest = kInf;
      for (size_t t = 0; t < types; ++t)
        if (present(t)) fastest = std::min(fastest, layer_s(t, l));
      if (fastest == kInf) continue;
      path += factor * layer_counts_[l] * fastest;
      fastest_layers.push_back({factor * fastest, layer_counts_[l]});
      if (transformer_layer_[l]) least_layer = std::min(least_layer, factor * fastest);
    }
    std::sort(fastest_layers.begin(), fastest_layers.end());
    config.fastest_layers.push_back(std::move(fastest_layers));
    config.least_layer_s.push_back(least_layer < kInf ? least_layer : 0);
    config.path_s.push_back(path);
    // The first stage's compute is at most the whole model's on the slowest type present.
    double slowest = 0;
    for (size_t t = 0; t < types; ++t)
      if (present(t)) slowest = std::max(slowest, points_[t][i][j].whole_s);
    config.forward_window_s.push_back(slowest / 3 * (1 + 1e-9));
    config.backward_window_s.push_back(slowest * (factor - 1.0 / 3) * (1 + 1e-9));
    std::vector<size_t> order;
    for (size_t t = 0; t < types; ++t)
      if (present(t)) order.push_back(t);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return points_[a][i][j].whole_s > points_[b][i][j].whole_s; });
    config.slowest_first.push_back(std::move(order));
  }
  for (size_t t = 0; t < types; ++t) {
    config.whole_s.push_back(has(t) ? points_[t][i][j].whole_s : 0);
    double least = kInf, layer = kInf;
    for (size_t l = 0; l < layers && has(t); ++l) {
      least = std::min(least, factor * layer_s(t, l));
      if (transformer_layer_[l]) layer = std::min(layer, factor * layer_s(t, l));
    }
    config.least_unit_s.push_back(has(t) ? least : 0);
    config.least_layer_by_type_s.push_back(layer < kInf ? layer : 0);
  }
  return config;
}

namespace {

/// The least of each part over the node types of `mask`.
SyncFloorParts least_parts(const std::vector<SyncFloorParts>& per_type, unsigned mask) {
  SyncFloorParts least{kInf, kInf, kInf, kInf, kInf, kInf, kInf};
  for (size_t t = 0; t < per_type.size(); ++t) {
    if (!(mask >> t & 1u)) continue;
    const SyncFloorParts& p = per_type[t];
    least.reduce_total_s = std::min(least.reduce_total_s, p.reduce_total_s);
    least.reduce_bucket_s = std::min(least.reduce_bucket_s, p.reduce_bucket_s);
    least.gather_total_s = std::min(least.gather_total_s, p.gather_total_s);
    least.gather_bucket_s = std::min(least.gather_bucket_s, p.gather_bucket_s);
    least.optimizer_s = std::min(least.optimizer_s, p.optimizer_s);
    least.zero3_pass_s = std::min(least.zero3_pass_s, p.zero3_pass_s);
    least.zero3_stream_s = std::min(least.zero3_stream_s, p.zero3_stream_s);
  }
  return least;
}

}  // namespace

template <typename Step>
void ShapeFloor::for_each_slow_step(const ConfigFloor& config, unsigned mask, const NodeCounts& lo, long long replica,
                                    long long most_pp, Step&& step) const {
  // Types of equal whole-model time go together (a stage may run at either).
  const std::vector<size_t>& order = config.slowest_first[mask];
  long long gpus = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    gpus += 1LL * lo[order[k]] * inventory_->node_types[order[k]].gpus_per_node;
    if (k + 1 < order.size() && config.whole_s[order[k + 1]] == config.whole_s[order[k]]) continue;
    step(k, std::min((gpus + replica - 1) / replica, most_pp));
  }
}

unsigned ShapeFloor::at_least_as_slow(const ConfigFloor& config, unsigned mask, size_t t) {
  unsigned types = 0;
  for (size_t u = 0; u < config.whole_s.size(); ++u)
    if ((mask >> u & 1u) && config.whole_s[u] >= config.whole_s[t]) types |= 1u << u;
  return types;
}

double ShapeFloor::staged_capacity(const ConfigFloor& config, const WorkFloor& work, unsigned mask,
                                   const NodeCounts& lo, long long replica, long long most_pp) const {
  if (!slowest_rank_) return kInf;
  // The GPUs of the k slowest types fill at least ceil(N_k / replica) stages, each at a type
  // among those k, whose credit is at most the largest of theirs, C_k; the rest of the stages
  // at most the largest credit of all.
  const std::vector<size_t>& order = config.slowest_first[mask];
  double capacity = 0, credit = 0;
  long long stages = 0;
  size_t seen = 0;
  for_each_slow_step(config, mask, lo, replica, most_pp, [&](size_t k, long long filled) {
    for (; seen <= k; ++seen) credit = std::max(credit, work.credit[mask][order[seen]]);
    capacity += double(filled - stages) * credit;
    stages = filled;
  });
  // The walk ends at the last type: credit is the largest of all.
  capacity += double(most_pp - stages) * credit;
  return capacity * replica;
}

double ShapeFloor::least_stage_s(const ConfigFloor& config, unsigned mask, unsigned sure_mask, long long most_pp) const {
  // Some stage holds ceil(units / pp) units, at least the fastest ones at their fastest type.
  int left = static_cast<int>((units_ + most_pp - 1) / most_pp);
  double least = 0;
  for (const auto& [seconds, count] : config.fastest_layers[mask]) {
    least += seconds * std::min(left, count);
    left -= std::min(left, count);
  }
  // Some stage holds ceil(layers / pp) transformer layers, whatever holds the other units.
  least = std::max(least, double((most_stages_ + most_pp - 1) / most_pp) * config.least_layer_s[mask]);
  if (!slowest_rank_ || sure_mask == 0) return least;
  // Every GPU runs in a stage, of a type at least as slow as its own by whole-model time: the
  // slowest type surely present runs a stage of one unit or more at such a type.
  const size_t types = config.whole_s.size();
  size_t slowest = types;
  for (size_t t = 0; t < types; ++t)
    if ((sure_mask >> t & 1u) && config.whole_s[t] > 0 && (slowest == types || config.whole_s[t] > config.whole_s[slowest]))
      slowest = t;
  if (slowest == types) return least;
  double unit = kInf;
  for (size_t t = 0; t < types; ++t)
    if ((mask >> t & 1u) && config.whole_s[t] >= config.whole_s[slowest]) unit = std::min(unit, config.least_unit_s[t]);
  return std::max(least, unit == kInf ? 0.0 : unit);
}

namespace {

/// 1F1B's step is at least sum_s t_s + D tau, tau = max_s t_s >= `tau0` (t_s: stage s's passes
/// of a micro-batch, D: `drain`). The stages' passes carry the work, W <= sum_s k_s t_s, at
/// speeds k_s >= kappa with K = sum_s k_s, so sum_s (tau - t_s) <= (K tau - W) / kappa and
///   sum_s t_s >= A(tau) = pp tau - (K tau - W) / kappa;  also sum_s t_s >= `path_s`.
/// The floor is the least over tau >= tau0 of max(A(tau), path_s) + D tau: both are linear in
/// tau, the second rising, so the least sits at tau0 or where the two meet. 0 where unknown.
double filled_pipeline_floor_s(double tau0, double stages, double drain, double path_s, double work,
                               double capacity, double kappa) {
  if (kappa <= 0 || capacity <= 0 || capacity == kInf || work <= 0) return 0;
  const double slope = stages + drain - capacity / kappa, offset = work / kappa;  // A(tau) + D tau
  auto filled = [&](double tau) { return std::max(slope * tau + offset, path_s + drain * tau); };
  // Both rise from tau0, or the rising one is already the larger there.
  if (slope >= 0 || slope * tau0 + offset <= path_s + drain * tau0) return filled(tau0);
  // A + D tau falls until it meets path + D tau, at tau1 > tau0.
  const double tau1 = (offset - path_s) / (drain - slope);
  return filled(std::max(tau0, tau1));
}

}  // namespace

ShapeFloor::SlowLayerStage ShapeFloor::slow_layer_stage(const ConfigFloor& config, unsigned mask, const NodeCounts& lo,
                                                        long long replica, long long most_pp, double send_s) const {
  SlowLayerStage stage;
  if (!slowest_rank_) return stage;
  // The GPUs of the k slowest types (surely present: lo's) fill at least n = ceil(N_k / replica)
  // stages, each running at a type at least as slow as the k-th. A stage without a transformer
  // layer holds one of the other units, so at least n - (units - layers) of them hold a layer;
  // of two such, one is not the first stage (it waits on a send a micro-batch), of three, one
  // is in the middle (two).
  const std::vector<size_t>& order = config.slowest_first[mask];
  const long long other_units = units_ - most_stages_;
  for_each_slow_step(config, mask, lo, replica, most_pp, [&](size_t k, long long filled) {
    const long long layer_stages = filled - other_units;
    if (layer_stages < 1) return;
    const unsigned slower = at_least_as_slow(config, mask, order[k]);
    double layer = kInf;
    for (size_t u = 0; u < config.whole_s.size(); ++u)
      if ((slower >> u & 1u) && config.least_layer_by_type_s[u] > 0) layer = std::min(layer, config.least_layer_by_type_s[u]);
    if (layer == kInf) return;
    stage.layer_s = std::max(stage.layer_s, layer);
    stage.chain_s = std::max(stage.chain_s, layer + double(std::min<long long>(2, layer_stages - 1)) * send_s);
  });
  return stage;
}

ShapeFloor::Ladder ShapeFloor::ladder(const ConfigFloor& config, const ConfigFloor::DpOption& option, unsigned mask,
                                      const NodeCounts& lo, long long replica, long long most_pp) const {
  Ladder ladder;
  if (!slowest_rank_ || most_stages_ == 0 || most_pp < 1) return ladder;
  // The GPUs of the k slowest types fill at least ceil(N_k / replica) stages at types at least
  // as slow as the k-th (as staged_capacity), the other stages (up to most_pp) at any type
  // present. Each rung: its stages, the types they may run at, a transformer layer's least time
  // on those.
  const std::vector<size_t>& order = config.slowest_first[mask];
  // ZeRO 3: a stage's passes also hold its layers' collectives, each layer's at least at the
  // bandwidth of its ring's link (zero3_stream_s, linear in the parameters). That link is no
  // faster than the stage's first rank's type's: some type of the mask. On type blocks, a type
  // of N >= replica - 1 GPUs sits at an end of every stage it touches (at_stage_ends):
  // the stages lo's slowest types fill pass a layer's collectives no faster than theirs.
  const bool zero3 = option.zero == 3 && !option.layer_stage.empty();
  std::vector<double> layer_comm_s(lo.size(), 0);
  double any_comm_s = kInf;
  if (zero3)
    for (size_t u = 0; u < lo.size(); ++u)
      if (mask >> u & 1u) any_comm_s = std::min(any_comm_s, option.layer_stage[u].zero3_stream_s);
  if (!zero3 || any_comm_s == kInf) any_comm_s = 0;
  for (size_t u = 0; u < lo.size() && zero3; ++u)
    layer_comm_s[u] = at_stage_ends(lo, u, replica) ? option.layer_stage[u].zero3_stream_s : any_comm_s;
  std::vector<unsigned> types;
  long long stages = 0;
  size_t seen = 0;
  double slow_comm_s = kInf;  // the least of layer_comm_s over lo's types among the k slowest
  for_each_slow_step(config, mask, lo, replica, most_pp, [&](size_t k, long long filled) {
    for (; seen <= k; ++seen)
      if (lo[order[seen]] > 0) slow_comm_s = std::min(slow_comm_s, layer_comm_s[order[seen]]);
    if (filled == stages) return;
    types.push_back(at_least_as_slow(config, mask, order[k]));
    Ladder::Rung rung{filled - stages, kInf, {}};
    for (size_t u = 0; u < config.whole_s.size(); ++u)
      if (types.back() >> u & 1u) rung.layer_s = std::min(rung.layer_s, config.least_layer_by_type_s[u]);
    if (zero3 && rung.layer_s > 0 && rung.layer_s < kInf && slow_comm_s < kInf)
      rung.layer_s = std::max(rung.layer_s, slow_comm_s);
    ladder.rungs.push_back(std::move(rung));
    stages = filled;
  });
  if (most_pp > stages) {
    const double layer_s = config.least_layer_s[mask];
    ladder.rungs.push_back({most_pp - stages, layer_s > 0 && layer_s < kInf ? std::max(layer_s, any_comm_s) : layer_s, {}});
    types.push_back(mask);
  }
  // Per rung, the most layers its stages can hold in memory at positions 1, 2, ... from the
  // end: each rung takes the positions of the most room (the last ones), as if the others were
  // elsewhere, at its most lenient type there. A real layout's stages are each as slow as the
  // ladder's (or slower), at positions they share: they hold no more.
  const int layers = most_stages_;
  for (size_t r = 0; r < ladder.rungs.size(); ++r) {
    Ladder::Rung& rung = ladder.rungs[r];
    if (!(rung.layer_s > 0) || rung.layer_s == kInf) rung.layer_s = 0;  // none known: time caps nothing
    rung.room.assign(static_cast<size_t>(rung.stages), layers);
    for (long long k = 0; k < rung.stages && !option.layer_caps.empty(); ++k) {
      int most = 0;
      for (size_t u = 0; u < option.layer_caps.size(); ++u) {
        if (!(types[r] >> u & 1u)) continue;
        const std::vector<uint16_t>& caps = option.layer_caps[u];
        most = std::max(most, caps.empty() ? layers : int(caps[static_cast<size_t>(k)]));
      }
      rung.room[static_cast<size_t>(k)] = most;
    }
  }
  // Fastest rung first: where the layers go cheapest.
  std::stable_sort(ladder.rungs.begin(), ladder.rungs.end(),
                   [](const Ladder::Rung& a, const Ladder::Rung& b) { return a.layer_s < b.layer_s; });
  return ladder;
}

namespace {

/// The layers a stage of `room` holds in time tau at `layer_s` a layer (0: no time cap).
long long held_layers(int room, double tau, double layer_s) {
  if (layer_s <= 0) return room;
  // A hair over the quotient: tau = j l must count j layers, not j - 1.
  const double quotient = std::floor(tau / layer_s * (1 + 1e-12));
  return quotient >= room ? room : static_cast<long long>(quotient);
}

/// The least tau at which `holds` (monotone in tau) holds: some j x l, j = 1 .. layers, l the
/// positive `layer_s` of an item of `items` (where a stage's layers change). Infinity where none
/// does; where no item has a time, 0 if `holds` holds at all (time caps nothing), else infinity.
template <typename Items, typename LayerTime, typename Holds>
double least_holding_tau(const Items& items, LayerTime layer_s, int layers, Holds holds) {
  double least = kInf;
  bool timed = false;
  for (const auto& item : items) {
    const double l = layer_s(item);
    if (l <= 0) continue;
    timed = true;
    if (!holds(layers * l)) continue;
    int a = 1, b = layers;
    while (a < b) {
      const int middle = (a + b) / 2;
      if (holds(middle * l)) b = middle;
      else a = middle + 1;
    }
    least = std::min(least, a * l);
  }
  if (!timed) return holds(0) ? 0 : kInf;
  return least;
}

}  // namespace

double ShapeFloor::laddered_stage_s(const Ladder& ladder) const {
  if (ladder.rungs.empty()) return 0;
  const int layers = most_stages_;
  // A stage holds at most floor(tau / l) whole layers in time tau: the busiest stage's tau is
  // at least the least with sum over the rungs' stages of min(room, floor(tau / l)) >= the
  // layers, some rung's j x l. Where the stages cannot hold them at all: infinity.
  auto holds = [&](double tau) {
    long long held = 0;
    for (const Ladder::Rung& rung : ladder.rungs) {
      // Rooms only fall along a rung: once a stage holds what the last one does, so does
      // every stage between them.
      const long long last = rung.room.empty() ? 0 : held_layers(rung.room.back(), tau, rung.layer_s);
      for (size_t k = 0; k < rung.room.size(); ++k) {
        const long long n = held_layers(rung.room[k], tau, rung.layer_s);
        if (n == last) {
          held += n * static_cast<long long>(rung.room.size() - k);
          break;
        }
        held += n;
      }
      if (held >= layers) return true;
    }
    return false;
  };
  return least_holding_tau(ladder.rungs, [](const Ladder::Rung& rung) { return rung.layer_s; }, layers, holds);
}

double ShapeFloor::laddered_pipeline_s(const Ladder& ladder, double tau0, double drain) const {
  if (ladder.rungs.empty() || tau0 == kInf) return 0;
  const int layers = most_stages_;
  const long long other_units = units_ - most_stages_;
  // The least sum of the stages' passes that holds the layers with none above tau (infinity
  // where they do not fit). Every stage holds a unit: all but the model's other units' hold a
  // transformer layer. Those that cannot are spared first, then the slowest: sparing a slower
  // stage's layer never costs more. Then one layer on each stage not spared, and the rest where
  // a layer takes least.
  std::vector<long long> cap;
  std::vector<char> must;
  auto least_sum_s = [&](double tau) {
    cap.clear();
    long long none = 0;
    for (const Ladder::Rung& rung : ladder.rungs)
      for (int room : rung.room) {
        cap.push_back(held_layers(room, tau, rung.layer_s));
        none += cap.back() < 1;
      }
    if (none > other_units) return kInf;
    must.assign(cap.size(), 0);
    long long spare = other_units - none;
    for (size_t i = cap.size(); i-- > 0;) {  // rungs are fastest first: the slowest last
      if (cap[i] < 1) continue;
      if (spare > 0) --spare;
      else must[i] = 1;
    }
    long long left = layers;
    double sum = 0;
    size_t i = 0;
    for (const Ladder::Rung& rung : ladder.rungs)
      for (size_t k = 0; k < rung.room.size(); ++k, ++i)
        if (must[i]) sum += rung.layer_s, --left;
    if (left < 0) return sum;  // more stages than layers: no layout (other floors say so)
    i = 0;
    for (const Ladder::Rung& rung : ladder.rungs)
      for (size_t k = 0; k < rung.room.size(); ++k, ++i) {
        const long long extra = std::min(left, cap[i] - must[i]);
        if (extra <= 0) continue;
        sum += double(extra) * rung.layer_s;
        left -= extra;
      }
    return left > 0 ? kInf : sum;
  };
  // The sum's least at any tau: at no time cap.
  const double lowest_sum = least_sum_s(kInf);
  // 1F1B's step is at least sum_s t_s + D tau at the busiest stage's tau >= tau0: the least over
  // tau of least_sum_s(tau) + D tau. The sum only falls where a rung's stage holds one layer more
  // (tau = j l): tried in order, up to a budget, after which the sum's least floors the rest.
  double best = least_sum_s(tau0) + drain * tau0;
  double tau = tau0;
  for (int step = 0; step < 64; ++step) {
    // The next tau where some rung's stage holds one layer more.
    double next = kInf;
    for (const Ladder::Rung& rung : ladder.rungs)
      if (rung.layer_s > 0) next = std::min(next, (std::floor(tau / rung.layer_s * (1 + 1e-12)) + 1) * rung.layer_s);
    if (next == kInf || lowest_sum + drain * next >= best) return best;
    tau = next;
    best = std::min(best, least_sum_s(tau) + drain * tau);
  }
  return std::min(best, lowest_sum + drain * tau);
}

ShapeFloor::OptionTerms ShapeFloor::option_terms(const ConfigFloor& config, const ConfigFloor::DpOption& option,
                                                 unsigned mask, const Capacity& capacity, const NodeCounts& lo,
                                                 long long least_pp, long long most_pp, bool one_stage,
                                                 bool laddered) const {
  const int m = option.microbatches;
  OptionTerms terms;
  // The work over the shape's credited GPUs, or over its stages where each runs at its
  // slowest rank's type.
  const long long replica = 1LL * config.tp * option.dp;
  const double most_capacity = std::min(capacity.all, staged_capacity(config, config.work, mask, lo, replica, most_pp));
  const double work_s = config.work.batch_ref_s / most_capacity;
  // The same over the transformer layers alone: other units only add to a stage's time.
  const double most_layer_capacity =
      std::min(capacity.layers, staged_capacity(config, config.layer_work, mask, lo, replica, most_pp));
  const double layer_work_s = most_layer_capacity > 0 ? config.layer_work.batch_ref_s / most_layer_capacity : 0;
  // The busiest stage's micro-batch: its share of the work, or the whole units it must hold.
  terms.stage_s = std::max({work_s / m, layer_work_s / m, least_stage_s(config, mask, type_mask(lo), most_pp)});
  // The fill and drain, least at the most stages.
  terms.drain = interleaved_ ? 0 : ((m - 1) - forward_share_[option.zero] * std::min<long long>(m - 1, most_pp - 1)) * (1 - 1e-9);
  // 1F1B (pipeline_1f1b.h) has a stage send each forward's activations and each backward's
  // gradients before its next pass: every stage but the first runs m x (its passes + its
  // sends), a middle stage two sends a micro-batch, the last one. Stage s's passes meet
  // W_s <= k_s m t_s (k_s its capacity, at least its GPUs x least_speed) with
  // m (t_s + sends_s) <= T, so T sum_s k_s >= W + m sigma sum_s k_s sends_s / sigma.
  const double send_s = !option.send_s.empty() && !interleaved_ ? option.send_s[mask] : 0;
  // Likewise over the layers alone, with their own least speed.
  if (send_s > 0 && least_pp > 1) {
    const double sends = m * send_s * double(2 * least_pp - 3) * replica;
    if (config.work.batch_ref_s > 0)
      terms.send_work_share = sends * config.work.least_speed[mask] / config.work.batch_ref_s * (1 - 1e-9);
    if (config.layer_work.batch_ref_s > 0)
      terms.layer_send_work_share = sends * config.layer_work.least_speed[mask] / config.layer_work.batch_ref_s * (1 - 1e-9);
  }
  const SlowLayerStage slow = slow_layer_stage(config, mask, lo, replica, most_pp, send_s);
  const Ladder rungs = laddered ? ladder(config, option, mask, lo, replica, most_pp) : Ladder();
  terms.stage_s = std::max({terms.stage_s, slow.layer_s, memory_balanced_stage_s(config, option, mask, most_pp),
                            laddered_stage_s(rungs)});
  terms.chain_s = slow.chain_s;
  // The chain through every stage holds each stage's pass, not only each unit's at its fastest
  // type: where the work fills most stages, their sum is near pp x the busiest.
  double filled_s = 0;
  if (!interleaved_)
    for (auto [work, capacity] : {std::pair{&config.work, most_capacity}, std::pair{&config.layer_work, most_layer_capacity}})
      filled_s = std::max(filled_s, filled_pipeline_floor_s(terms.stage_s, double(least_pp), terms.drain, config.path_s[mask],
                                                            work->batch_ref_s / m, capacity,
                                                            double(replica) * work->least_speed[mask]));
  if (!interleaved_) filled_s = std::max(filled_s, laddered_pipeline_s(rungs, terms.stage_s, terms.drain));
  terms.pipe_s = std::max({m * terms.stage_s, config.path_s[mask] + terms.drain * terms.stage_s, filled_s,
                           work_s * (1 + terms.send_work_share), layer_work_s * (1 + terms.layer_send_work_share),
                           m * terms.chain_s}) *
                 (1 - 1e-9);
  if (!sync_) return terms;
  // One stage holds every parameter; of more, the first holds at least its first unit's.
  const SyncFloorParts every = least_parts(option.one_stage, mask);
  const SyncFloorParts parts = one_stage ? every : least_parts(option.first_stage, mask);
  // ZeRO 3: a stage passes its own parameters' collectives every micro-batch, and some stage
  // holds a pp-th of them.
  const double shared = every.zero3_pass_s / most_pp;
  const double busiest_comm_s = std::max({parts.zero3_pass_s, shared, zero3_type_stage_s(option, lo, replica, most_pp)});
  terms.comm_s = m * busiest_comm_s * (1 - 1e-9);
  // A stage's passes hold its collectives (t_s >= z_s, and t_s >= its compute c_s): 1F1B's
  // chain through the stages, sum_s max(c_s, z_s), holds every parameter's, and its fill and
  // drain the busiest stage's again.
  if (option.zero == 3 && !interleaved_)
    terms.comm_s = std::max(terms.comm_s, (std::max(config.path_s[mask], every.zero3_stream_s) +
                                           terms.drain * std::max(terms.stage_s, busiest_comm_s)) *
                                              (1 - 1e-9));
  terms.sync_s = exposed_sync_floor_s(parts, *sync_, option.zero, config.backward_window_s[mask],
                                      config.forward_window_s[mask]) *
                 (1 - 1e-9);
  return terms;
}

bool ShapeFloor::at_stage_ends(const NodeCounts& lo, size_t t, long long replica) const {
  const long long gpus = 1LL * lo[t] * inventory_->node_types[t].gpus_per_node;
  return type_blocks_ && gpus > 0 && gpus + 1 >= replica;
}

double ShapeFloor::zero3_type_stage_s(const ConfigFloor::DpOption& option, const NodeCounts& lo, long long replica,
                                      long long most_pp) const {
  if (option.zero != 3 || !type_blocks_ || option.layer_stage.empty() || most_pp < 2) return 0;
  // Type t's N_t GPUs sit together in rank order and stages are runs of `replica` ranks: they
  // touch at least ceil(N_t / replica) stages, each with a rank of t at an end (at_stage_ends).
  // Its data-parallel ring's link (AnalyticPolicy's dp_link: its end ranks' link) is then no
  // faster than t's. Each holds a unit, and all but the model's other units' stages a
  // transformer layer: where t touches more, some stage passes a layer's collectives at t's
  // link every micro-batch, else a unit's.
  const long long other_units = units_ - most_stages_;
  double busiest = 0;
  for (size_t t = 0; t < lo.size(); ++t) {
    if (!at_stage_ends(lo, t, replica)) continue;
    const long long gpus = 1LL * lo[t] * inventory_->node_types[t].gpus_per_node;
    const long long touched = std::min((gpus + replica - 1) / replica, most_pp);
    const std::vector<SyncFloorParts>& held = touched > other_units ? option.layer_stage : option.unit_stage;
    busiest = std::max(busiest, held[t].zero3_pass_s);
  }
  return busiest;
}

ShapeFloor::ConfigBound ShapeFloor::config_bound(const NodeCounts& lo, const NodeCounts& hi,
                                                 const std::function<double(const WorkFloor&)>& work_cost,
                                                 const ConfigBound& general, const Reachable& reachable,
                                                 const OptionList* only) const {
  ConfigBound least;
  if (configs_.empty()) return {0, 0, {}};
  const unsigned mask = type_mask(hi);
  const long long gpus_lo = shape_gpus(*inventory_, lo), gpus_hi = shape_gpus(*inventory_, hi);
  const double lo_price = shape_price_usd_per_s(*inventory_, lo);
  // The least price of a GPU of the box: a shape of n GPUs costs at least n of them.
  double gpu_price = kInf;
  for (size_t t = 0; t < hi.size(); ++t) {
    const NodeType& type = inventory_->node_types[t];
    if (hi[t] > 0) gpu_price = std::min(gpu_price, type.price_usd_per_hour / 3600 / type.gpus_per_node);
  }
  // Per configuration: its credited GPUs (0: no type of the box has its tp), and
  // work_cost of its work floors, asked once a layout can run (-1 before).
  std::vector<Capacity> capacity(configs_.size(), {-1, -1});
  std::vector<double> cost(configs_.size(), -1), layer_cost(configs_.size(), -1);
  auto try_option = [&](unsigned index) {
    const size_t c = index / 2 / dp_stride_, j = index / 2 % dp_stride_;
    const int part = index % 2;
    const ConfigFloor& config = configs_[c];
    if (j >= config.dps.size()) return;
    if (capacity[c].all < 0)
      capacity[c] = {credited_gpus(*inventory_, hi, config.work.credit[mask]),
                     credited_gpus(*inventory_, hi, config.layer_work.credit[mask])};
    if (capacity[c].all <= 0) return;
    const ConfigFloor::DpOption& option = config.dps[j];
    // The stages a shape of the box gives this (tp, dp): its GPUs over tp x dp, a whole number.
    const long long replica = 1LL * config.tp * option.dp;
    const long long most_pp = std::min<long long>(gpus_hi / replica, most_stages_);
    const long long least_pp =
        std::max({(gpus_lo + replica - 1) / replica, 1LL, static_cast<long long>(least_fitting(option, hi))});
    if (least_pp > most_pp) return;
    if (gpus_lo == gpus_hi && gpus_hi % replica != 0) return;  // one shape: pp must be whole
    const long long from = part == 0 ? least_pp : std::max(least_pp, 2LL), to = part == 0 ? 1 : most_pp;
    if (from > to) return;
    // The floors' (step seconds, USD per step) from the option's terms.
    auto floors = [&](const OptionTerms& terms) {
      const double step_s = std::max(general.step_s, terms.step_s());
      double step_usd = std::max(general.step_cost_usd, lo_price * step_s);
      if (!work_cost) return std::pair{step_s, step_usd};
      if (cost[c] < 0) cost[c] = work_cost(config.work), layer_cost[c] = work_cost(config.layer_work);
      const double work_usd = cost[c] == kInf ? 0.0 : cost[c];
      const double layer_work_usd = layer_cost[c] == kInf ? 0.0 : layer_cost[c];
      const double price = std::max(lo_price, double(replica * from) * gpu_price);
      // price x stage_s >= max(work's cost / m, lo's price x the units' floor).
      const double stage_usd =
          std::max({work_usd / option.microbatches, layer_work_usd / option.microbatches, lo_price * terms.stage_s});
      const double pipe_usd = std::max({option.microbatches * stage_usd, lo_price * config.path_s[mask] + terms.drain * stage_usd,
                                        work_usd * (1 + terms.send_work_share),
                                        layer_work_usd * (1 + terms.layer_send_work_share),
                                        lo_price * option.microbatches * terms.chain_s, price * terms.comm_s}) *
                              (1 - 1e-9);
      return std::pair{step_s, std::max(step_usd, pipe_usd + price * terms.sync_s)};
    };
    // The ladder's floors cost the most: only for an option the others leave open.
    auto [step_s, step_usd] = floors(option_terms(config, option, mask, capacity[c], lo, from, to, part == 0, false));
    if (reachable && !reachable(step_s, step_usd)) return;
    std::tie(step_s, step_usd) = floors(option_terms(config, option, mask, capacity[c], lo, from, to, part == 0, true));
    if (reachable && !reachable(step_s, step_usd)) return;
    least.open.push_back(index);
    least.step_s = std::min(least.step_s, step_s);
    least.step_cost_usd = std::min(least.step_cost_usd, step_usd);
  };
  if (only) {
    for (unsigned index : *only) try_option(index);
  } else {
    for (unsigned index = 0; index < configs_.size() * dp_stride_ * 2; ++index) try_option(index);
  }
  return least;
}

double ShapeFloor::memory_balanced_stage_s(const ConfigFloor& config, const ConfigFloor::DpOption& option,
                                           unsigned mask, long long pp) const {
  const size_t types = option.layer_caps.size();
  const int layers = most_stages_;
  if (pp < 1 || pp > layers || layers == 0) return 0;
  const uint64_t index = uint64_t(&config - configs_.data()) * dp_stride_ + uint64_t(&option - config.dps.data());
  const uint64_t key = ((index << types) + mask) * uint64_t(layers + 1) + uint64_t(pp);
  const auto known = balanced_stage_s_.find(key);
  if (known != balanced_stage_s_.end()) return known->second;
  // The types present, each with its caps (none: any stage of it holds any layers) and its
  // layer time (0: no time cap known; it is never the reason a stage holds fewer layers).
  std::vector<size_t> present;
  bool capped = false;
  for (size_t t = 0; t < types; ++t)
    if (mask >> t & 1u) present.push_back(t), capped = capped || !option.layer_caps[t].empty();
  double least = 0;
  if (capped) {
    auto holds = [&](double tau) {  // the stages hold every layer with none above tau
      long long held = 0;
      for (long long k = 1; k <= pp; ++k) {
        long long best = 0;
        for (size_t t : present) {
          const std::vector<uint16_t>& caps = option.layer_caps[t];
          best = std::max(best, held_layers(caps.empty() ? layers : caps[k - 1], tau, config.least_layer_by_type_s[t]));
        }
        held += best;
        if (held >= layers) return true;
      }
      return false;
    };
    // The least tau is some type's j x l_t. At the slowest type's layers x l_t no type's time
    // caps a stage below the layers: where that does not hold them, memory alone cannot
    // (infinity); where no type has a time cap, memory alone decides.
    least = least_holding_tau(present, [&](size_t t) { return config.least_layer_by_type_s[t]; }, layers, holds);
  }
  balanced_stage_s_.emplace(key, least);
  return least;
}

int ShapeFloor::least_fitting(const ConfigFloor::DpOption& option, const NodeCounts& counts) {
  // The largest memory present needs the fewest stages.
  int fitting = std::numeric_limits<int>::max();
  for (size_t t = 0; t < counts.size(); ++t)
    if (counts[t] > 0) fitting = std::min(fitting, option.least_pp[t]);
  return fitting;
}

std::optional<unsigned> ShapeFloor::option_of(const PlanKey& key) const {
  if (configs_.empty() || key.virtual_stages != 1 || !key.stage_tp.empty() || !key.stage_dp.empty()) return std::nullopt;
  const auto mode = std::find(modes_.begin(), modes_.end(), key.recompute_mode());
  const auto tp = std::find(tp_values_.begin(), tp_values_.end(), key.tp);
  const auto mbs = std::find(mbs_values_.begin(), mbs_values_.end(), key.mbs);
  if (mode == modes_.end() || tp == tp_values_.end() || mbs == mbs_values_.end()) return std::nullopt;
  const size_t c = ((mode - modes_.begin()) * tps_ + (tp - tp_values_.begin())) * mbs_ + (mbs - mbs_values_.begin());
  const std::vector<ConfigFloor::DpOption>& dps = configs_[c].dps;
  for (size_t j = 0; j < dps.size(); ++j)
    if (dps[j].dp == key.dp && dps[j].zero == key.zero_stage)
      return static_cast<unsigned>((c * dp_stride_ + j) * 2 + (key.pp > 1 ? 1 : 0));
  return std::nullopt;
}

bool ShapeFloor::option_open(const BoxFloor& box, const PlanKey& key) const {
  if (box.all_options) return true;
  const std::optional<unsigned> index = option_of(key);
  return !index || std::binary_search(box.open.begin(), box.open.end(), *index);
}

double ShapeFloor::layout_floor_s(const NodeCounts& counts, const PlanKey& key) const {
  const std::optional<unsigned> index = option_of(key);
  if (!index) return 0;
  const ConfigFloor& config = configs_[*index / 2 / dp_stride_];
  const ConfigFloor::DpOption& option = config.dps[*index / 2 % dp_stride_];
  if (key.pp < least_fitting(option, counts)) return kInf;
  const unsigned mask = type_mask(counts);
  const Capacity capacity{credited_gpus(*inventory_, counts, config.work.credit[mask]),
                          credited_gpus(*inventory_, counts, config.layer_work.credit[mask])};
  if (capacity.all <= 0) return 0;
  return option_terms(config, option, mask, capacity, counts, key.pp, key.pp, key.pp == 1).step_s();
}

std::vector<double> ShapeFloor::credits(unsigned mask) const {
  const size_t types = points_.size();
  std::vector<double> credit(types, 0);
  for (size_t tau = 0; tau < types; ++tau) {
    if (!(mask >> tau & 1u)) continue;
    for (size_t i = 0; i < tps_; ++i)
      for (size_t j = 0; j < points_[tau][i].size(); ++j)
        for (size_t t = 0; t < types; ++t) {
          if (!(mask >> t & 1u) || points_[t][i].empty()) continue;
          const TypePoint &own = points_[tau][i][j], &stage = points_[t][i][j];
          // A GPU of type tau runs in a stage of a type at least as slow as its own.
          if (slowest_rank_ && stage.whole_s < own.whole_s) continue;
          if (stage.ratio > 0) credit[tau] = std::max(credit[tau], 1 / stage.ratio);
          else credit[tau] = kInf;
        }
  }
  return credit;
}

double ShapeFloor::path_floor_s(unsigned mask) const {
  double floor = kInf;
  for (size_t i = 0; i < tps_; ++i) {
    double path = 0;
    bool any = false;
    for (size_t l = 0; l < layer_counts_.size(); ++l) {
      double fastest = kInf;
      for (size_t t = 0; t < points_.size(); ++t) {
        if (!(mask >> t & 1u)) continue;
        for (const TypePoint& point : points_[t][i]) fastest = std::min(fastest, point.layer_s[l]);
      }
      if (fastest < kInf) any = true, path += layer_counts_[l] * fastest;
    }
    if (any) floor = std::min(floor, path);
  }
  return floor;
}

double ShapeFloor::general_floor_s(const NodeCounts& counts) const {
  const unsigned mask = type_mask(counts);
  const bool tabulated = !credit_.empty();
  const std::vector<double> computed = tabulated ? std::vector<double>() : credits(mask);
  const std::vector<double>& credit = tabulated ? credit_[mask] : computed;
  const double capacity = credited_gpus(*inventory_, counts, credit);
  const double work = capacity > 0 ? batch_ref_s_ / capacity : 0;
  const double path = tabulated ? path_floor_s_[mask] : path_floor_s(mask);
  // A shape whose types have no profile at any tp has no layout: no floor is needed (or given).
  return std::max(work, path == kInf ? 0.0 : path);
}

double ShapeFloor::step_floor_s(const NodeCounts& counts) const { return box_floor(counts, counts).step_s; }

namespace {

/// The least of sum_t n_t price_t / sum_t n_t capacity_t over counts between `lo` and `hi`:
/// at a prefix of the types by ascending price per capacity (infinity where no capacity).
double least_price_per_capacity(const NodeCounts& lo, const NodeCounts& hi, const std::vector<double>& price,
                                const std::vector<double>& capacity) {
  std::vector<size_t> order;
  for (size_t t = 0; t < hi.size(); ++t) order.push_back(t);
  auto ratio = [&](size_t t) { return capacity[t] > 0 ? price[t] / capacity[t] : kInf; };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ratio(a) < ratio(b); });
  double usd = 0, cap = 0;
  for (size_t t = 0; t < lo.size(); ++t) usd += lo[t] * price[t], cap += lo[t] * capacity[t];
  double least = cap > 0 ? usd / cap : kInf;
  for (size_t t : order) {
    usd += (hi[t] - lo[t]) * price[t];
    cap += (hi[t] - lo[t]) * capacity[t];
    if (cap > 0) least = std::min(least, usd / cap);
  }
  return least;
}

}  // namespace

ShapeFloor::BoxFloor ShapeFloor::box_floor(const NodeCounts& lo, const NodeCounts& hi, const Reachable& reachable,
                                           const BoxFloor* parent) const {
  BoxFloor floor;
  if (points_.empty()) return floor;  // too many node types to tabulate sets of: no floor
  if (type_mask(hi) == 0) return {kInf, kInf, {}, true};
  // The general floors fall as nodes are added: hi's bound the box.
  const double general_s = general_floor_s(hi);
  const double lo_price = shape_price_usd_per_s(*inventory_, lo);
  if (credit_.empty()) return {general_s, lo_price * general_s, {}, true};
  // Credits only grow with the types present: hi's bound every shape of the box.
  const unsigned mask = type_mask(hi);
  const size_t types = hi.size();
  std::vector<double> price(types), capacity(types);
  for (size_t t = 0; t < types; ++t) price[t] = inventory_->node_types[t].price_usd_per_hour / 3600;
  auto work_cost = [&](const std::vector<double>& credit, double batch_ref_s) {
    for (size_t t = 0; t < types; ++t) {
      capacity[t] = inventory_->node_types[t].gpus_per_node * credit[t];
      if (capacity[t] == kInf) return kInf;  // a type with no floor on its work: none here
    }
    return batch_ref_s * least_price_per_capacity(lo, hi, price, capacity);
  };
  const double general_cost = work_cost(credit_[mask], batch_ref_s_);
  const ConfigBound general{general_s, std::max(lo_price * general_s, general_cost == kInf ? 0.0 : general_cost), {}};
  if (configs_.empty()) {
    floor = {general.step_s, general.step_cost_usd, {}, true};
    if (reachable && !reachable(floor.step_s, floor.step_cost_usd)) return {kInf, kInf, {}, true};
    return floor;
  }
  ConfigBound configs =
      config_bound(lo, hi, [&](const WorkFloor& work) { return work_cost(work.credit[mask], work.batch_ref_s); },
                   general, reachable, parent && !parent->all_options ? &parent->open : nullptr);
  return {configs.step_s, configs.step_cost_usd, std::move(configs.open), false};
}

bool ShapeFloor::may_fit(const NodeCounts& counts) const {
  if (min_state_bytes_ <= 0) return true;
  double bytes = 0;
  for (size_t t = 0; t < counts.size(); ++t) {
    const NodeType& type = inventory_->node_types[t];
    bytes += double(counts[t]) * type.gpus_per_node * type.gpu_memory_gib * kGib;
  }
  return bytes >= min_state_bytes_;
}

}  // namespace fasop
