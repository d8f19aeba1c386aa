#include "search/shape_floor.h"

#include <algorithm>
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
  }
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
  unsigned mask = 0;
  for (size_t t = 0; t < counts.size(); ++t)
    if (counts[t] > 0) mask |= 1u << t;
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
  return std::max(work, path == kInf ? 0.0 : path);
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
