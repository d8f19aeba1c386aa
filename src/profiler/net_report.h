#pragma once
// The fits of `profile net`'s measurements (latency + bytes / bandwidth), the table that
// shows them against the points, and the YAML in the cluster file's field names.
#include <ostream>
#include <string>
#include <vector>

#include "profiler/alpha_beta_fit.h"
#include "profiler/net_timing.h"

namespace fasop {

/// Both fits. The all-reduce is fitted against bus bytes, 2(n-1)/n x the message, which is what
/// a ring moves through each rank's link: its bandwidth is then the link's, comparable across n.
struct NetFits {
  double bus_factor = 1;  ///< 2(n-1)/n
  std::vector<TimedMessage> send_recv_points, allreduce_bus_points;
  AlphaBeta send_recv, allreduce_bus;
  /// The larger of the two fits' worst relative errors against their points.
  double worst_relative_error() const;
};

/// Fits both operations; throws std::runtime_error when one cannot be fitted.
NetFits fit_net(const std::vector<SizeTiming>& timings, int ranks);

/// The medians alone, for when no line can be fitted to them: the user still sees what was measured.
void print_measured(std::ostream& out, const std::vector<SizeTiming>& timings);

/// The measured medians next to the fitted models' predictions, then the fitted numbers.
void print_fit_table(std::ostream& out, const std::vector<SizeTiming>& timings, const NetFits& fits, int ranks);

/// The node-type fields of the cluster file, with the points and where they come from;
/// `link` says in a comment what was measured (loopback TCP, or the GPUs' interconnect).
std::string net_profile_yaml(const NetProfileOptions& options, const std::vector<SizeTiming>& timings,
                             const NetFits& fits, const std::string& link);

}  // namespace fasop
