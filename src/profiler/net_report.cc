#include "profiler/net_report.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <stdexcept>

#include "profiler/provenance.h"

namespace fasop {
namespace {

constexpr double kCloseFit = 0.2;  ///< worst relative error beyond which the report warns

/// short_number for YAML: "3e+10" gains a ".0" ("3.0e+10"), since YAML 1.1 readers (PyYAML)
/// take an exponent without a point for a string.
std::string yaml_number(double value) {
  std::string text = short_number(value);
  size_t exponent = text.find('e');
  if (exponent != std::string::npos && text.find('.') == std::string::npos) text.insert(exponent, ".0");
  return text;
}

/// Signed relative error of a prediction, in percent with one decimal.
std::string percent_error(double predicted_s, double measured_s) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%+.1f%%", 100 * (predicted_s - measured_s) / measured_s);
  return buffer;
}

/// An unsigned share in percent with one decimal.
std::string percent(double share) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f%%", 100 * share);
  return buffer;
}

/// `fit_alpha_beta`, its error named after the operation.
AlphaBeta fit_operation(const std::vector<TimedMessage>& points, const char* operation) {
  try {
    return fit_alpha_beta(points);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(std::string(operation) + ": " + e.what());
  }
}

}  // namespace

double NetFits::worst_relative_error() const {
  return std::max(send_recv.worst_relative_error(send_recv_points),
                  allreduce_bus.worst_relative_error(allreduce_bus_points));
}

NetFits fit_net(const std::vector<SizeTiming>& timings, int ranks) {
  NetFits fits;
  fits.bus_factor = 2.0 * (ranks - 1) / ranks;
  for (const SizeTiming& t : timings) {
    fits.send_recv_points.push_back({t.bytes, t.send_recv_s});
    fits.allreduce_bus_points.push_back({t.bytes * fits.bus_factor, t.allreduce_s});
  }
  fits.send_recv = fit_operation(fits.send_recv_points, "send/recv");
  fits.allreduce_bus = fit_operation(fits.allreduce_bus_points, "all-reduce");
  return fits;
}

void print_measured(std::ostream& out, const std::vector<SizeTiming>& timings) {
  char line[200];
  std::snprintf(line, sizeof line, "%-9s %12s %14s\n", "size", "send/recv s", "all-reduce s");
  out << line;
  for (const SizeTiming& t : timings) {
    std::snprintf(line, sizeof line, "%-9s %12.4g %14.4g\n", human_bytes(t.bytes).c_str(), t.send_recv_s,
                  t.allreduce_s);
    out << line;
  }
  out.flush();
}

void print_fit_table(std::ostream& out, const std::vector<SizeTiming>& timings, const NetFits& fits, int ranks) {
  char line[200];
  std::snprintf(line, sizeof line, "%-9s %12s %12s %8s %14s %12s %8s\n", "size", "send/recv s", "fit s", "error",
                "all-reduce s", "fit s", "error");
  out << line;
  for (const SizeTiming& t : timings) {
    double p2p_fit_s = fits.send_recv.predict_s(t.bytes);
    double allreduce_fit_s = fits.allreduce_bus.predict_s(t.bytes * fits.bus_factor);
    std::snprintf(line, sizeof line, "%-9s %12.4g %12.4g %8s %14.4g %12.4g %8s\n", human_bytes(t.bytes).c_str(),
                  t.send_recv_s, p2p_fit_s, percent_error(p2p_fit_s, t.send_recv_s).c_str(), t.allreduce_s,
                  allreduce_fit_s, percent_error(allreduce_fit_s, t.allreduce_s).c_str());
    out << line;
  }
  const AlphaBeta& p2p = fits.send_recv;
  const AlphaBeta& bus = fits.allreduce_bus;
  out << "send/recv (rank 0 <-> rank 1): latency " << short_number(p2p.latency_s) << " s, bandwidth "
      << short_number(8 * p2p.bytes_per_s) << " bit/s (" << short_number(p2p.bytes_per_s / 1e9)
      << " GB/s); worst relative error " << percent(p2p.worst_relative_error(fits.send_recv_points)) << "\n";
  out << "all-reduce (ring, " << ranks << " ranks): latency " << short_number(bus.latency_s)
      << " s, bus bandwidth " << short_number(8 * bus.bytes_per_s) << " bit/s (" << short_number(bus.bytes_per_s / 1e9)
      << " GB/s, bus bytes = " << short_number(fits.bus_factor) << " x message); worst relative error "
      << percent(bus.worst_relative_error(fits.allreduce_bus_points)) << "\n";
  if (fits.worst_relative_error() > kCloseFit)
    out << "note: the fitted lines miss some points by more than " << percent(kCloseFit) << " (see the error columns).\n"
        << "  Either the times do not follow one latency plus one bandwidth over these sizes (on\n"
           "  loopback, messages that stay in the CPU caches move faster per byte), or other work\n"
           "  disturbed the run. Measuring only the sizes your plans send gives a closer fit.\n";
}

std::string net_profile_yaml(const NetProfileOptions& options, const std::vector<SizeTiming>& timings,
                             const NetFits& fits, const std::string& link) {
  const AlphaBeta& p2p = fits.send_recv;
  const AlphaBeta& bus = fits.allreduce_bus;
  std::ostringstream out;
  out << "# Measured by `fasop-cpp profile net --backend " << options.backend << " --ranks " << options.ranks
      << "` on " << host_name() << ", " << utc_now() << ".\n"
      << "# Point-to-point: latency + bytes / bandwidth fitted to send/recv between ranks 0 and 1.\n"
      << "# All-reduce: the same fit of the ring all-reduce over " << options.ranks
      << " ranks, bytes = 2(n-1)/n x message (bus bytes).\n"
      << "# " << link << "\n"
      << "# Median of " << options.repeats << "+ repetitions per size; worst relative error of the fits: send/recv "
      << percent(p2p.worst_relative_error(fits.send_recv_points)) << ", all-reduce "
      << percent(bus.worst_relative_error(fits.allreduce_bus_points)) << ".\n"
      << "intra_node_bandwidth_bits_per_s: " << yaml_number(8 * p2p.bytes_per_s)
      << "    # 8 x bytes/s of the send/recv fit\n"
      << "intra_node_latency_s: " << yaml_number(p2p.latency_s) << "\n"
      << "allreduce_bus_bandwidth_bits_per_s: " << yaml_number(8 * bus.bytes_per_s)
      << "    # 8 x bytes/s of the all-reduce fit\n"
      << "allreduce_latency_s: " << yaml_number(bus.latency_s) << "\n"
      << "points:\n";
  for (const SizeTiming& t : timings)
    out << "  - {bytes: " << static_cast<long long>(t.bytes) << ", send_recv_s: " << yaml_number(t.send_recv_s)
        << ", allreduce_s: " << yaml_number(t.allreduce_s) << "}\n";
  return out.str();
}

}  // namespace fasop
