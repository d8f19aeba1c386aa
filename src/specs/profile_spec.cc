#include "specs/profile_spec.h"

#include <iterator>

namespace fasop {

bool ProfileSpec::has(const std::string& layer_type, int tp) const {
  auto layer = forward_s.find(layer_type);
  return layer != forward_s.end() && layer->second.count(tp) > 0;
}

namespace {

/// A time at micro-batch `mbs` from measured points: the point itself, linear interpolation
/// between two, growth in proportion to mbs beyond them.
double interpolate(const std::map<int, double>& points, int mbs) {
  auto above = points.lower_bound(mbs);
  if (above != points.end() && above->first == mbs) return above->second;
  if (above == points.end()) {
    auto last = std::prev(points.end());
    return last->second * mbs / last->first;
  }
  if (above == points.begin()) return above->second * mbs / above->first;
  auto below = std::prev(above);
  double weight = double(mbs - below->first) / double(above->first - below->first);
  return below->second + weight * (above->second - below->second);
}

}  // namespace

double ProfileSpec::forward_time_s(const std::string& layer_type, int tp, int mbs) const {
  return interpolate(forward_s.at(layer_type).at(tp), mbs);
}

double ProfileSpec::forward_backward_time_s(const std::string& layer_type, int tp, int mbs) const {
  double forward = forward_time_s(layer_type, tp, mbs);
  auto layer = backward_s.find(layer_type);
  if (layer == backward_s.end() || !layer->second.count(tp)) return 3 * forward;
  return forward + interpolate(layer->second.at(tp), mbs);
}

double ProfileSpec::layer_comm_time_s(const std::string& layer_type, int tp, int mbs) const {
  auto layer = layer_comm_s.find(layer_type);
  if (layer == layer_comm_s.end() || !layer->second.count(tp)) return 0;
  return interpolate(layer->second.at(tp), mbs);
}

}  // namespace fasop
