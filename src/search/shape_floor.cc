#include "search/shape_floor.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "costmodel/analytic_policy.h"

namespace fasop {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kGibBytes = 1024.0 * 1024.0 * 1024.0;
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

/// The space gives every layout one tp, one micro-batch size and one dp: the configuration
/// floors hold.
bool plain_space(const SearchSpaceOptions& space) {
  return !space.per_stage_dp && !space.per_stage_tp && !space.uneven_dp && !space.speed_split;
}

/// The fewest GPUs of a layout at (tp, mbs) whose stages can hold every transformer layer on
/// GPUs of `memory_bytes` (ShapeFloor's per-configuration memory floor); LLONG_MAX: none.
long long least_fitting_gpus(const ModelSpec& model, const SearchSpaceOptions& space, int tp, int mbs,
                             RecomputeMode recompute, double memory_bytes) {
  // A layer's least parameters and activations (one sample) with or without sequence parallelism.
  double params = kInf, activations = kInf;
  int layers = 0;
  for (const LayerUnit& unit : model.units) {
    if (unit.role != LayerRole::kTransformer) continue;
    ++layers;
    params = std::min(params, unit_params(model, unit, tp));
    for (bool sp : space.sequence_parallel) {
      ActivationMode mode{recompute == RecomputeMode::kFull, recompute == RecomputeMode::kSelective, sp && tp > 1};
      activations = std::min(activations, unit_activation_bytes(model, unit, tp, 1, mode));
    }
  }
  const double room = memory_bytes - kReservedGpuBytes;
  if (layers == 0) return 0;
  if (room <= 0) return std::numeric_limits<long long>::max();
  long long least = std::numeric_limits<long long>::max();
  const int batch = model.global_batch, most_stages = model.num_units();
  if (batch % mbs != 0) return least;
  for (int m : divisors(batch / mbs)) {
    const long long dp = batch / mbs / m;
    for (int zero : space.zero_stages) {
      const double per_param = AnalyticPolicy::bytes_per_param(zero, static_cast<int>(dp), model.dtype);
      // Stages 1..pp hold min(k, m) micro-batches each, k = 1..pp: a stage more adds one.
      double held = 0;
      for (int pp = 1; pp <= most_stages; ++pp) {
        held += std::floor(room / (params * per_param + activations * mbs * std::min(pp, m)));
        if (held >= layers) {
          least = std::min(least, tp * pp * dp);
          break;
        }
      }
    }
  }
  return least;
}

}  // namespace

ShapeFloor::ShapeFloor(const SearchInput& input, bool stage_type_is_slowest_rank, bool check_memory)
    : slowest_rank_(stage_type_is_slowest_rank), inventory_(input.cluster) {
  const ModelSpec& model = *input.model;
  const size_t types = inventory_->node_types.size();
  if (types > kMaskTypes) return;
  // Distinct layer types in unit order, with how many units each has.
  std::vector<std::string> layers;
  for (const LayerUnit& unit : model.units) {
    auto at = std::find(layers.begin(), layers.end(), unit.type);
    if (at == layers.end()) layers.push_back(unit.type), layer_counts_.push_back(0), at = layers.end() - 1;
    ++layer_counts_[at - layers.begin()];
  }
  const std::vector<int> tps = tp_options(model, *inventory_, input.space), mbss = divisors(model.global_batch);
  tps_ = tps.size();
  mbs_ = mbss.size();
  // Each type's layer times at every (tp, mbs), and ref: the fewest GPU-seconds per sample.
  std::vector<double> ref(layers.size(), kInf);
  points_.assign(types, {});
  for (size_t t = 0; t < types; ++t) {
    const ProfileSpec* profile = t < input.profiles.size() ? input.profiles[t] : nullptr;
    points_[t].assign(tps_, {});
    if (!profile) continue;
    for (size_t i = 0; i < tps_; ++i) {
      const int tp = tps[i];
      if (!std::all_of(layers.begin(), layers.end(), [&](const std::string& l) { return profile->has(l, tp); })) continue;
      for (int mbs : mbss) {
        TypePoint point;
        for (size_t l = 0; l < layers.size(); ++l) {
          const double s = profile->forward_backward_time_s(layers[l], tp, mbs);
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
    double params = 0;
    for (const LayerUnit& unit : model.units) params += unit_params(model, unit, 1);
    double bytes = kInf;
    for (int zero : input.space.zero_stages)
      for (int dp : divisors(model.global_batch))
        bytes = std::min(bytes, AnalyticPolicy::bytes_per_param(zero, dp, model.dtype) * dp);
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
  // Recomputation repeats part of the forward pass (the analytic policy's times; FASOP's
  // space has none): each mode is a configuration of its own, its time and memory apart.
  std::vector<RecomputeMode> modes = input.space.recompute;
  std::sort(modes.begin(), modes.end());
  modes.erase(std::unique(modes.begin(), modes.end()), modes.end());
  const bool analytic = dynamic_cast<const AnalyticPolicy*>(input.policy) != nullptr;
  for (RecomputeMode recompute : modes) {
    const ActivationMode mode{recompute == RecomputeMode::kFull, recompute == RecomputeMode::kSelective, false};
    // A hair under the policy's factor: its passes round differently.
    const double factor = analytic ? recompute_time_factor(model, mode) * (1 - 1e-12) : 1;
    for (size_t i = 0; i < tps_; ++i)
      for (size_t j = 0; j < mbs_; ++j) {
        ConfigFloor config = config_times(i, j, factor * model.global_batch * tps[i] / mbss[j], factor);
        for (const NodeType& type : inventory_->node_types) {
          const double memory = type.gpu_memory_gib * kGibBytes;
          config.least_gpus.push_back(check_memory ? least_fitting_gpus(model, input.space, tps[i], mbss[j], recompute, memory) : 0);
        }
        configs_.push_back(std::move(config));
      }
  }
}

ShapeFloor::ConfigFloor ShapeFloor::config_times(size_t i, size_t j, double batch_scale, double factor) const {
  const size_t types = points_.size(), layers = layer_counts_.size();
  auto has = [&](size_t t) { return !points_[t][i].empty(); };
  auto layer_s = [&](size_t t, size_t l) { return points_[t][i][j].layer_s[l]; };
  // ref_c(l): the fastest type's time of layer l at this configuration; r_c(t) the least ratio.
  std::vector<double> ref(layers, kInf), ratio(types, kInf);
  for (size_t t = 0; t < types; ++t)
    for (size_t l = 0; l < layers && has(t); ++l) ref[l] = std::min(ref[l], layer_s(t, l));
  for (size_t t = 0; t < types; ++t)
    for (size_t l = 0; l < layers && has(t); ++l)
      if (ref[l] > 0) ratio[t] = std::min(ratio[t], layer_s(t, l) / ref[l]);
  ConfigFloor config;
  for (size_t l = 0; l < layers; ++l)
    if (ref[l] < kInf) config.batch_ref_s += batch_scale * layer_counts_[l] * ref[l];
  for (unsigned mask = 0; mask < (1u << types); ++mask) {
    auto present = [&](size_t t) { return (mask >> t & 1u) && has(t); };
    std::vector<double> credit(types, 0);
    for (size_t tau = 0; tau < types; ++tau)
      for (size_t t = 0; t < types && present(tau); ++t) {
        // As in credits(): a GPU runs in a stage of a type at least as slow as its own.
        if (!present(t) || (slowest_rank_ && points_[t][i][j].whole_s < points_[tau][i][j].whole_s)) continue;
        credit[tau] = std::max(credit[tau], ratio[t] > 0 ? 1 / ratio[t] : kInf);
      }
    double path = 0;
    for (size_t l = 0; l < layers; ++l) {
      double fastest = kInf;
      for (size_t t = 0; t < types; ++t)
        if (present(t)) fastest = std::min(fastest, layer_s(t, l));
      path += fastest < kInf ? factor * layer_counts_[l] * fastest : 0;
    }
    config.credit.push_back(std::move(credit));
    config.path_s.push_back(path);
  }
  return config;
}

bool ShapeFloor::ConfigFloor::may_fit(const NodeCounts& counts, long long gpus) const {
  // The largest memory present needs the fewest GPUs.
  long long needed = std::numeric_limits<long long>::max();
  for (size_t t = 0; t < counts.size(); ++t)
    if (counts[t] > 0) needed = std::min(needed, least_gpus[t]);
  return gpus >= needed;
}

double ShapeFloor::config_floor_s(const NodeCounts& counts, unsigned mask, long long gpus) const {
  if (configs_.empty()) return 0;
  double least = kInf;
  for (const ConfigFloor& config : configs_) {
    if (!config.may_fit(counts, gpus)) continue;
    double capacity = 0;
    for (size_t t = 0; t < counts.size(); ++t)
      if (counts[t] > 0) capacity += double(counts[t]) * inventory_->node_types[t].gpus_per_node * config.credit[mask][t];
    if (capacity <= 0) continue;  // no type of the shape has this tp
    least = std::min(least, std::max(config.batch_ref_s / capacity, config.path_s[mask]));
  }
  return least;
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

double ShapeFloor::step_floor_s(const NodeCounts& counts) const {
  if (points_.empty()) return 0;  // too many node types to tabulate sets of: no floor
  const unsigned mask = type_mask(counts);
  if (mask == 0) return kInf;
  const bool tabulated = !credit_.empty();
  const std::vector<double> computed = tabulated ? std::vector<double>() : credits(mask);
  const std::vector<double>& credit = tabulated ? credit_[mask] : computed;
  double capacity = 0;
  for (size_t t = 0; t < counts.size(); ++t)
    capacity += double(counts[t]) * inventory_->node_types[t].gpus_per_node * credit[t];
  const double work = capacity > 0 ? batch_ref_s_ / capacity : 0;
  const double path = tabulated ? path_floor_s_[mask] : path_floor_s(mask);
  // A shape whose types have no profile at any tp has no layout: no floor is needed (or given).
  const double configs = config_floor_s(counts, mask, shape_gpus(*inventory_, counts));
  return std::max({work, path == kInf ? 0.0 : path, configs});
}

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

ShapeFloor::BoxFloor ShapeFloor::box_floor(const NodeCounts& lo, const NodeCounts& hi) const {
  BoxFloor floor;
  floor.step_s = step_floor_s(hi);
  floor.step_cost_usd = step_cost_floor_usd(lo, hi, floor.step_s);
  return floor;
}

double ShapeFloor::step_cost_floor_usd(const NodeCounts& lo, const NodeCounts& hi, double hi_floor_s) const {
  const double lo_price = shape_price_usd_per_s(*inventory_, lo), corners = lo_price * hi_floor_s;
  if (points_.empty() || credit_.empty()) return corners;
  // Credits only grow with the types present, and a configuration's memory floor only eases
  // with more GPUs and more memory: hi's bound every shape of the box.
  const unsigned mask = type_mask(hi);
  const size_t types = hi.size();
  std::vector<double> price(types), capacity(types);
  for (size_t t = 0; t < types; ++t) price[t] = inventory_->node_types[t].price_usd_per_hour / 3600;
  auto work_cost = [&](const std::vector<double>& credit, double batch_ref_s) {
    for (size_t t = 0; t < types; ++t) {
      capacity[t] = inventory_->node_types[t].gpus_per_node * credit[t];
      if (capacity[t] == kInf) return 0.0;  // a type with no floor on its work: none here
    }
    const double least = least_price_per_capacity(lo, hi, price, capacity);
    return least == kInf ? kInf : batch_ref_s * least;
  };
  double cost = std::max(corners, work_cost(credit_[mask], batch_ref_s_));
  if (configs_.empty()) return cost;
  const long long gpus = shape_gpus(*inventory_, hi);
  double least_config = kInf;
  for (const ConfigFloor& config : configs_) {
    if (!config.may_fit(hi, gpus)) continue;
    const double work = work_cost(config.credit[mask], config.batch_ref_s);
    least_config = std::min(least_config, std::max(work == kInf ? 0.0 : work, lo_price * config.path_s[mask]));
  }
  return std::max(cost, least_config == kInf ? cost : least_config);
}

bool ShapeFloor::may_fit(const NodeCounts& counts) const {
  if (min_state_bytes_ <= 0) return true;
  double bytes = 0;
  for (size_t t = 0; t < counts.size(); ++t) {
    const NodeType& type = inventory_->node_types[t];
    bytes += double(counts[t]) * type.gpus_per_node * type.gpu_memory_gib * kGibBytes;
  }
  return bytes >= min_state_bytes_;
}

}  // namespace fasop
