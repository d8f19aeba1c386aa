#include "validate/layer_validation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "profiles/analytic_profile.h"
#include "specs/spec_error.h"

namespace fasop {
namespace {

std::string format(const char* pattern, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, pattern, value);
  return buffer;
}

}  // namespace

std::vector<LayerPointResult> predict_layer_case(const LayerTimeCase& c) {
  if (!c.node_type.has_gpu_data())
    throw SpecError(c.file + ": field 'node_type': GPU '" + c.node_type.gpu +
                    "' has no shipped data (configs/gpus/) and the node type gives no peak_tflops and "
                    "memory_bandwidth_bytes_per_s; add them");
  LayerOptions options;
  options.stack = c.stack;
  std::vector<LayerPointResult> out;
  for (const LayerTimePoint& p : c.points) {
    const LayerUnit& unit = *std::find_if(c.model.units.begin(), c.model.units.end(),
                                          [&](const LayerUnit& u) { return u.type == p.unit; });
    LayerTime t = layer_time(c.model, unit, p.tp, p.mbs, c.node_type, options);
    auto add = [&](const char* pass, double measured, double predicted) {
      out.push_back({c.set, c.name, c.node_type.gpu_data.name, p.unit, pass, p.tp, p.mbs, measured, predicted,
                     (predicted - measured) / measured * 100});
    };
    // A profile of one GPU's shard measured in one process has no tensor-parallel communication.
    const bool comm = c.tp_comm_included;
    const double forward = t.forward.seconds - (comm ? 0 : t.forward.tp_comm_s);
    const double backward = t.backward.seconds - (comm ? 0 : t.backward.tp_comm_s);
    if (p.forward_backward_s > 0) {
      add("fwd+bwd", p.forward_backward_s, forward + backward);
      continue;
    }
    add("forward", p.forward_s, forward);
    if (p.backward_s > 0) add("backward", p.backward_s, backward);
  }
  return out;
}

std::vector<LayerSummary> summarize_layers(const std::vector<LayerPointResult>& results) {
  std::vector<LayerSummary> sets;
  std::vector<std::vector<double>> errors;
  for (const LayerPointResult& r : results) {
    auto it = std::find_if(sets.begin(), sets.end(), [&](const LayerSummary& s) { return s.set == r.set && s.gpu == r.gpu; });
    if (it == sets.end()) {
      sets.push_back({r.set, r.gpu, 0, 0, 0, ""});
      errors.emplace_back();
      it = sets.end() - 1;
    }
    std::vector<double>& e = errors[it - sets.begin()];
    e.push_back(std::fabs(r.error_pct));
    it->points += 1;
    if (it->worst_point.empty() || std::fabs(r.error_pct) > std::fabs(it->worst_error_pct)) {
      it->worst_error_pct = r.error_pct;
      it->worst_point = r.case_name + " " + r.unit + " tp" + std::to_string(r.tp) + "/mbs" + std::to_string(r.mbs) + " " + r.pass;
    }
  }
  for (size_t i = 0; i < sets.size(); ++i) {
    std::vector<double>& e = errors[i];
    std::sort(e.begin(), e.end());
    const size_t n = e.size();
    sets[i].median_abs_error_pct = n % 2 ? e[n / 2] : (e[n / 2 - 1] + e[n / 2]) / 2;
  }
  return sets;
}

std::string layer_validation_text(const std::vector<LayerPointResult>& results, bool quiet) {
  std::string out;
  if (!quiet) {
    char line[256];
    std::snprintf(line, sizeof line, "%-18s %-24s %-10s %-14s %3s %4s %-8s %12s %12s %8s\n", "layer set", "case", "gpu",
                  "unit", "tp", "mbs", "pass", "measured s", "predicted s", "error %");
    out += line;
    for (const LayerPointResult& r : results) {
      std::snprintf(line, sizeof line, "%-18s %-24s %-10s %-14s %3d %4d %-8s %12.6f %12.6f %+8.1f\n", r.set.c_str(),
                    r.case_name.c_str(), r.gpu.c_str(), r.unit.c_str(), r.tp, r.mbs, r.pass.c_str(), r.measured_s,
                    r.predicted_s, r.error_pct);
      out += line;
    }
    out += "\n";
  }
  for (const LayerSummary& s : summarize_layers(results))
    out += s.set + " on " + s.gpu + ": " + std::to_string(s.points) + " layer times, median absolute error " +
           format("%.1f", s.median_abs_error_pct) + "%, worst " + s.worst_point + " " + format("%+.1f", s.worst_error_pct) +
           "%\n";
  return out;
}

std::string layer_validation_csv(const std::vector<LayerPointResult>& results) {
  std::string out = "set,case,gpu,unit,tp,mbs,pass,measured_s,predicted_s,error_pct\n";
  for (const LayerPointResult& r : results)
    out += r.set + "," + r.case_name + "," + r.gpu + "," + r.unit + "," + std::to_string(r.tp) + "," +
           std::to_string(r.mbs) + "," + r.pass + "," + format("%.9f", r.measured_s) + "," + format("%.9f", r.predicted_s) +
           "," + format("%.3f", r.error_pct) + "\n";
  return out;
}

}  // namespace fasop
