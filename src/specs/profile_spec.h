#pragma once
#include <map>
#include <string>

namespace fasop {

/// Measured forward times of one model's layer types on one GPU type.
/// Backward is taken as twice the forward time (FASOP's assumption) unless measured.
struct ProfileSpec {
  std::string model;
  std::string gpu;
  std::string source;
  /// layer type -> tp degree -> micro-batch size -> forward seconds
  std::map<std::string, std::map<int, std::map<int, double>>> forward_s;
  /// The same for the backward pass, where measured (fasop-cpp profile layers); else 2 x forward.
  std::map<std::string, std::map<int, std::map<int, double>>> backward_s;
  /// Analytic profiles only: the communication inside a layer's forward + backward (tensor-
  /// parallel collectives, ring attention's sends, the experts' all-to-alls), so that an
  /// estimate can tell it apart from compute.
  std::map<std::string, std::map<int, std::map<int, double>>> layer_comm_s;

  bool has(const std::string& layer_type, int tp) const;
  /// Forward seconds of one unit at micro-batch `mbs`: the stored point, linear interpolation
  /// between two points, and growth in proportion to mbs past the last one.
  double forward_time_s(const std::string& layer_type, int tp, int mbs) const;
  /// Forward plus backward seconds: the measured backward where there is one (interpolated
  /// like the forward), else twice the forward.
  double forward_backward_time_s(const std::string& layer_type, int tp, int mbs) const;
  /// The tensor-parallel communication in forward_backward_time_s (0 where not known).
  double layer_comm_time_s(const std::string& layer_type, int tp, int mbs) const;
};

}  // namespace fasop
