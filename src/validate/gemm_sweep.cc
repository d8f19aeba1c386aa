#include "validate/gemm_sweep.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "profiles/analytic_profile.h"
#include "specs/precision.h"
#include "specs/spec_error.h"
#include "specs/yaml_field.h"

namespace fasop {
namespace {

std::string shape_text(const GemmPoint& p) {
  char text[64];
  std::snprintf(text, sizeof text, "%.0fx%.0fx%.0f", p.m, p.n, p.k);
  return text;
}

GemmSweepResult predict(const GemmSweep& sweep, const std::string& dtype, const GpuSpec& gpu) {
  const std::vector<GemmPoint>& all = sweep.points.at(dtype);
  const std::vector<GemmPoint> points = outlasting_launch(all, gemm_input_bytes(dtype));
  GemmSweepResult r;
  r.file = sweep.file, r.gpu = gpu.name, r.dtype = dtype;
  r.points = int(points.size());
  r.launch_bound = int(all.size() - points.size());
  std::vector<double> errors;
  for (const GemmPoint& p : points) {
    Gemm g;
    g.m = p.m, g.n = p.n, g.k = p.k;
    const double e = 100 * (gemm_time_s(g, gpu, dtype) - p.seconds) / p.seconds;
    errors.push_back(std::abs(e));
    if (std::abs(e) > std::abs(r.worst_error_pct)) r.worst_error_pct = e, r.worst_shape = shape_text(p);
  }
  std::sort(errors.begin(), errors.end());
  const size_t n = errors.size();
  r.median_abs_error_pct = n % 2 ? errors[n / 2] : (errors[n / 2 - 1] + errors[n / 2]) / 2;
  return r;
}

std::string result_line(const GemmSweepResult& r) {
  char line[512];
  std::snprintf(line, sizeof line, "%s on %s (%s): %d GEMMs (%d launch-bound left out), median |error| %.1f%%, worst %s %+.1f%%\n",
                r.file.c_str(), r.gpu.c_str(), r.dtype.c_str(), r.points, r.launch_bound, r.median_abs_error_pct,
                r.worst_shape.c_str(), r.worst_error_pct);
  return line;
}

}  // namespace

bool is_gemm_sweep(const std::string& yaml_text) {
  try {
    YAML::Node root = YAML::Load(yaml_text);
    return root.IsMap() && root["kind"] && root["kind"].IsScalar() && root["kind"].as<std::string>() == "gemm_times";
  } catch (const YAML::Exception&) {
    return false;
  }
}

GemmSweep parse_gemm_sweep(const std::string& yaml_text, const std::string& source) {
  Field root = load_root(yaml_text, source);
  root.only_keys({"kind", "gpu", "device", "points", "fit"});
  GemmSweep sweep;
  sweep.file = source;
  sweep.gpu = root.child("gpu").text();
  for (const Field& item : root.child("points").items("a list of {dtype, m, n, k, seconds}", true)) {
    item.only_keys({"dtype", "m", "n", "k", "seconds", "tflops"});
    GemmPoint p;
    p.m = item.child("m").positive_double();
    p.n = item.child("n").positive_double();
    p.k = item.child("k").positive_double();
    p.seconds = item.child("seconds").positive_double();
    sweep.points[item.child("dtype").text()].push_back(p);
  }
  return sweep;
}

std::vector<GemmSweepResult> predict_gemm_sweep(const GemmSweep& sweep, const GpuSpec& gpu) {
  std::vector<GemmSweepResult> results;
  for (const auto& [dtype, points] : sweep.points)
    if (gpu.precisions.count(dtype)) results.push_back(predict(sweep, dtype, gpu));
  return results;
}

std::string gemm_sweep_text(const std::vector<GemmSweepResult>& results) {
  std::string text;
  for (const GemmSweepResult& r : results) text += "gemm sweep " + result_line(r);
  return text;
}

std::string gemm_fit_report(const std::vector<GemmSweep>& fitted, const std::vector<GemmSweep>& held_out,
                            const GpuSpec& gpu, const std::string& precision) {
  std::vector<GemmPoint> points;
  std::string files;
  for (const GemmSweep& sweep : fitted) {
    auto found = sweep.points.find(precision);
    if (found == sweep.points.end())
      throw SpecError(sweep.file + ": field 'points': no " + precision + " GEMMs; give sweeps measured in " + precision);
    points.insert(points.end(), found->second.begin(), found->second.end());
    files += (files.empty() ? "" : ", ") + sweep.file;
  }
  if (!gpu.precisions.count(precision))
    throw SpecError("GPU data " + gpu.name + ": field 'precisions." + precision + "': missing; add it before fitting");
  const GemmSweepFit f = fit_gemm_sweep(points, peak_flops(gpu, precision, gpu.name), gemm_input_bytes(precision));
  GpuSpec with_fit = gpu;
  PrecisionEfficiency& e = with_fit.precisions[precision];
  e.gemm_peak_share = f.fit.gemm_peak_share, e.gemm_half_dim = f.fit.gemm_half_dim;
  if (f.unaligned > 0) e.gemm_unaligned_share = f.gemm_unaligned_share;
  std::ostringstream out;
  char line[256];
  std::snprintf(line, sizeof line, "fitted %s (%s) on a GEMM sweep of %d aligned and %d unaligned shapes (%d launch-bound left out):\n",
                gpu.name.c_str(), precision.c_str(), f.aligned, f.unaligned, f.launch_bound);
  out << line;
  std::snprintf(line, sizeof line, "  gemm_peak_share: %.4g\n  gemm_half_dim: %.4g\n", e.gemm_peak_share, e.gemm_half_dim);
  out << line;
  if (f.unaligned > 0) {
    std::snprintf(line, sizeof line, "  gemm_unaligned_share: %.4g\n", e.gemm_unaligned_share);
    out << line;
  }
  out << "\nfitted on: " << files << "\n";
  for (const GemmSweep& sweep : fitted) out << "fit, " << result_line(predict(sweep, precision, with_fit));
  for (const GemmSweep& other : held_out)
    if (other.points.count(precision)) out << "held out, gemm sweep " << result_line(predict(other, precision, with_fit));
  return out.str();
}

}  // namespace fasop
