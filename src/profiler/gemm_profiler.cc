// `profile gemm`: the only translation unit of the GEMM sweep that includes LibTorch.
#include "profiler/gemm_profiler.h"

#include <torch/torch.h>
#ifdef FASOP_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <tuple>

#include "profiler/gemm_fit.h"
#include "profiler/reporting_errors.h"
#include "report/atomic_file.h"
#include "specs/gpu_spec.h"
#include "specs/precision.h"
#include "specs/spec_error.h"

// FP8 GEMMs need torch::kFloat8_e4m3fn and at::_scaled_mm with its tensor scales (LibTorch 2.4
// and later; Debian's 1.13 has neither).
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define FASOP_HAVE_FP8_GEMM 1
#endif

namespace fasop {
namespace {

using Clock = std::chrono::steady_clock;

const std::vector<std::string> kDtypes = {"fp32", "fp16", "bf16", "fp8"};

struct Shape {
  int64_t m = 0, n = 0, k = 0;
};

std::string shape_text(const Shape& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
}

std::string join(const std::vector<std::string>& values) {
  std::string text;
  for (const std::string& v : values) text += (text.empty() ? "" : ",") + v;
  return text;
}

std::string number(double value, int digits = 6) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*g", digits, value);
  return text;
}

/// A name as a YAML scalar: plain where that reads back the same, else double-quoted.
std::string yaml_scalar(const std::string& text) {
  bool plain = !text.empty() && text.front() != ' ' && text.back() != ' ';
  for (char c : text)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == ' ' || c == '_' || c == '-' || c == '.' || c == '(' ||
          c == ')'))
      plain = false;
  if (plain) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return quoted + "\"";
}

/// A positive integer, or nothing.
bool parse_dimension(const std::string& text, int64_t* value) {
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos) return false;
  *value = std::stoll(text);
  return *value > 0;
}

std::vector<Shape> parse_shapes(const std::vector<std::string>& texts) {
  std::vector<Shape> shapes;
  for (const std::string& text : texts) {
    std::vector<std::string> parts(1);
    for (char c : text) {
      if (c == 'x' || c == 'X') parts.emplace_back();
      else parts.back() += c;
    }
    Shape s;
    if (parts.size() != 3 || !parse_dimension(parts[0], &s.m) || !parse_dimension(parts[1], &s.n) ||
        !parse_dimension(parts[2], &s.k))
      throw SpecError("--shapes: '" + text + "' is not MxNxK with positive integers (e.g. 4096x4096x4096)");
    shapes.push_back(s);
  }
  return shapes;
}

std::vector<Shape> grid(const std::vector<int64_t>& ms, const std::vector<int64_t>& nks) {
  std::vector<Shape> shapes;
  for (int64_t m : ms)
    for (int64_t n : nks)
      for (int64_t k : nks) shapes.push_back({m, n, k});
  return shapes;
}

torch::Device parse_device(const std::string& device) {
  bool cuda = device == "cuda" || device.rfind("cuda:", 0) == 0;
  if (device != "cpu" && !cuda) throw SpecError("--device: unknown '" + device + "'; use cpu, cuda or cuda:N");
  if (cuda && !torch::cuda::is_available())
    throw SpecError("--device " + device + ": no CUDA device here (or this build of LibTorch has no CUDA); use cpu");
  try {
    return torch::Device(device);
  } catch (const std::exception&) {
    throw SpecError("--device: '" + device + "' is not cpu, cuda or cuda:N");
  }
}

void synchronize(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index() < 0 ? -1 : device.index());
}

std::string device_name(const torch::Device& device) {
#ifdef FASOP_WITH_CUDA
  if (device.is_cuda()) return at::cuda::getDeviceProperties(device.index() < 0 ? 0 : device.index())->name;
#endif
  return device.is_cuda() ? "cuda" : "cpu";
}

torch::Dtype torch_dtype(const std::string& dtype) {
  if (dtype == "fp16") return torch::kFloat16;
  if (dtype == "bf16") return torch::kBFloat16;
  return torch::kFloat32;
}

/// The dtypes asked for, in order and once each; throws on an unknown one.
std::vector<std::string> parse_dtypes(std::vector<std::string> requested, const torch::Device& device) {
  if (requested.empty()) requested = {device.is_cuda() ? "bf16" : "fp32"};
  std::vector<std::string> dtypes;
  for (const std::string& d : requested) {
    if (std::find(kDtypes.begin(), kDtypes.end(), d) == kDtypes.end())
      throw SpecError("--dtype: unknown '" + d + "'; use fp32, fp16, bf16 or fp8");
    if (std::find(dtypes.begin(), dtypes.end(), d) == dtypes.end()) dtypes.push_back(d);
  }
  return dtypes;
}

/// Why this LibTorch cannot run `dtype`'s GEMMs on `device`, or "" when it can.
std::string unsupported(const std::string& dtype, const torch::Device& device) {
  if (dtype == "fp8") {
#ifdef FASOP_HAVE_FP8_GEMM
    if (!device.is_cuda()) return "fp8: not supported on cpu (_scaled_mm runs on CUDA)";
    return "";
#else
    return "fp8: not supported by this LibTorch (" TORCH_VERSION ": no torch::kFloat8_e4m3fn and _scaled_mm)";
#endif
  }
  try {
    torch::NoGradGuard no_grad;
    torch::Tensor a = torch::ones({16, 16}, torch::TensorOptions().dtype(torch_dtype(dtype)).device(device));
    torch::mm(a, a);
    synchronize(device);
    return "";
  } catch (const std::exception&) {
    return dtype + ": this LibTorch (" TORCH_VERSION ") cannot multiply " + dtype + " matrices on " + device.str();
  }
}

/// The dense peak TFLOP/s of each dtype where known: --peak-tflops, else the GPU data.
struct Peak {
  double tflops = 0;  ///< 0: unknown (the fit then takes the measured maximum)
  std::string from;
};

std::map<std::string, Peak> parse_peaks(const GemmProfileOptions& options, const std::vector<std::string>& dtypes) {
  std::map<std::string, Peak> peaks;
  if (!options.gpu.empty()) {
    const GpuSpec* gpu = shipped_gpu_spec(options.gpu);
    if (!gpu) {
      std::string names;
      for (const GpuSpec& g : shipped_gpu_specs()) names += (names.empty() ? "" : ", ") + g.name;
      throw SpecError("--gpu: no shipped GPU data for '" + options.gpu + "' (shipped: " + names +
                      "); give --peak-tflops DTYPE=TFLOPS instead");
    }
    for (const std::string& d : dtypes) {
      auto it = gpu->peak_tflops.find(d);
      if (it != gpu->peak_tflops.end() && it->second > 0) peaks[d] = {it->second, "the GPU data of " + gpu->name};
    }
  }
  for (const std::string& entry : options.peak_tflops) {
    const size_t eq = entry.find('=');
    const std::string dtype = entry.substr(0, eq);
    if (eq == std::string::npos || std::find(kDtypes.begin(), kDtypes.end(), dtype) == kDtypes.end())
      throw SpecError("--peak-tflops: '" + entry + "' is not DTYPE=TFLOPS with DTYPE fp32, fp16, bf16 or fp8");
    char* end = nullptr;
    const std::string value = entry.substr(eq + 1);
    const double tflops = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0' || !(tflops > 0) || !std::isfinite(tflops))
      throw SpecError("--peak-tflops: '" + entry + "' needs a positive number of TFLOP/s");
    peaks[dtype] = {tflops, "--peak-tflops"};
  }
  return peaks;
}

/// One dtype and shape: how to run it once, the GEMMs a timed sample runs back to back (so
/// that a sample outlasts the timer's and the launches' noise), and its samples.
struct Case {
  std::string dtype;
  Shape shape;
  std::function<void()> run;
  int inner = 1;
  std::vector<double> samples;  ///< seconds per GEMM
  double median_s = 0, spread = 0;
};

/// The operands, shared by the shapes that have the same ones (the default CUDA grid would
/// need ~9 GB per dtype with its own for each).
class Operands {
 public:
  explicit Operands(const torch::Device& device) : device_(device) {}

  /// A rows x cols matrix of `dtype`; `column_major` stores it transposed (FP8's second operand).
  torch::Tensor matrix(const std::string& dtype, int64_t rows, int64_t cols, bool column_major = false) {
    auto key = std::make_tuple(dtype, rows, cols, column_major);
    auto it = pool_.find(key);
    if (it != pool_.end()) return it->second;
    torch::TensorOptions o = torch::TensorOptions().device(device_);
    torch::Tensor t;
#ifdef FASOP_HAVE_FP8_GEMM
    if (dtype == "fp8") {
      t = column_major ? torch::randn({cols, rows}, o).to(torch::kFloat8_e4m3fn).t()
                       : torch::randn({rows, cols}, o).to(torch::kFloat8_e4m3fn);
    } else
#endif
      t = torch::randn({rows, cols}, o.dtype(torch_dtype(dtype)));
    return pool_[key] = t;
  }
  torch::Tensor output(const std::string& dtype, int64_t rows, int64_t cols) {
    auto key = std::make_tuple(dtype + "-out", rows, cols, false);
    auto it = pool_.find(key);
    if (it != pool_.end()) return it->second;
    return pool_[key] = torch::empty({rows, cols}, torch::TensorOptions().device(device_).dtype(torch_dtype(dtype)));
  }
  torch::Tensor unit_scale() { return torch::ones({}, torch::TensorOptions().device(device_).dtype(torch::kFloat32)); }

 private:
  torch::Device device_;
  std::map<std::tuple<std::string, int64_t, int64_t, bool>, torch::Tensor> pool_;
};

Case make_case(const std::string& dtype, const Shape& s, Operands& operands) {
  Case c;
  c.dtype = dtype;
  c.shape = s;
#ifdef FASOP_HAVE_FP8_GEMM
  if (dtype == "fp8") {
    // e4m3 operands with unit tensor scales, bf16 out: the GEMM of FP8 training's linear layers.
    torch::Tensor a = operands.matrix(dtype, s.m, s.k), b = operands.matrix(dtype, s.k, s.n, true);
    torch::Tensor scale = operands.unit_scale();
    c.run = [a, b, scale] { at::_scaled_mm(a, b, scale, scale, {}, {}, torch::kBFloat16, false); };
    return c;
  }
#endif
  torch::Tensor a = operands.matrix(dtype, s.m, s.k), b = operands.matrix(dtype, s.k, s.n);
  torch::Tensor out = operands.output(dtype, s.m, s.n);
  c.run = [a, b, out]() mutable { torch::mm_out(out, a, b); };
  return c;
}

/// Seconds per GEMM of one sample: `inner` GEMMs back to back between synchronisations.
double time_sample(Case& c, const torch::Device& device) {
  synchronize(device);
  auto t0 = Clock::now();
  for (int i = 0; i < c.inner; ++i) c.run();
  synchronize(device);
  return std::chrono::duration<double>(Clock::now() - t0).count() / c.inner;
}

void summarise(Case& c) {
  std::vector<double> s = c.samples;
  std::sort(s.begin(), s.end());
  const size_t n = s.size();
  c.median_s = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  c.spread = c.median_s > 0 ? (s[std::min(n - 1, (3 * n) / 4)] - s[n / 4]) / c.median_s : 0;
}

/// Progress on stderr at most every few seconds: over itself on a terminal, a line otherwise.
class Progress {
 public:
  explicit Progress(bool on) : on_(on), tty_(::isatty(STDERR_FILENO)), last_(Clock::now()) {}
  void show(const std::string& text) {
    if (!on_ || std::chrono::duration<double>(Clock::now() - last_).count() < 3) return;
    last_ = Clock::now();
    std::fprintf(stderr, tty_ ? "\rprofile gemm: %s ...          " : "profile gemm: %s ...\n", text.c_str());
    shown_ = true;
  }
  void done() {
    if (on_ && tty_ && shown_) std::fprintf(stderr, "\n");
  }

 private:
  bool on_, tty_, shown_ = false;
  Clock::time_point last_;
};

std::string canonical_command(const GemmProfileOptions& o, const std::vector<std::string>& dtypes) {
  std::string command = "fasop-cpp profile gemm --device " + o.device + " --dtype " + join(dtypes);
  if (o.quick) command += " --quick";
  if (!o.shapes.empty()) command += " --shapes " + join(o.shapes);
  if (!o.gpu.empty()) command += " --gpu " + o.gpu;
  if (!o.peak_tflops.empty()) command += " --peak-tflops " + join(o.peak_tflops);
  if (o.warmup > 0) command += " --warmup " + std::to_string(o.warmup);
  if (o.repeats > 0) command += " --repeats " + std::to_string(o.repeats);
  if (o.threads > 0) command += " --threads " + std::to_string(o.threads);
  return command;
}

int profile_gemm(const GemmProfileOptions& options) {
  // Everything the flags say is checked, and the output opened, before any measuring.
  const torch::Device device = parse_device(options.device);
  std::vector<std::string> dtypes = parse_dtypes(options.dtypes, device);
  std::vector<Shape> shapes;
  if (!options.shapes.empty()) shapes = parse_shapes(options.shapes);
  else if (options.quick) shapes = grid({64, 128, 256, 512}, {64, 128, 256, 512});
  else if (device.is_cuda()) shapes = grid({256, 1024, 4096, 16384}, {256, 1024, 4096, 12288});
  else shapes = grid({128, 256, 512, 1024}, {128, 256, 512, 1024});
  if (options.warmup < 0) throw SpecError("--warmup: must not be negative");
  if (options.repeats < 0) throw SpecError("--repeats: must be positive");
  const int warmup = options.warmup > 0 ? options.warmup : options.quick ? 1 : 3;
  const int repeats = options.repeats > 0 ? options.repeats : options.quick ? 5 : 10;
  const double sample_s = options.quick ? 1e-3 : 2e-3;  // a timed sample runs this long at least
  const std::map<std::string, Peak> peaks = parse_peaks(options, dtypes);
  const std::string command = canonical_command(options, dtypes);
  std::vector<std::string> measured_dtypes, skipped;
  for (const std::string& d : dtypes) {
    std::string why = unsupported(d, device);
    if (why.empty()) measured_dtypes.push_back(d);
    else skipped.push_back(why);
  }
  if (measured_dtypes.empty()) {
    std::string reasons;
    for (const std::string& why : skipped) reasons += why + "; ";
    throw SpecError("--dtype " + join(dtypes) + ": " + reasons + "nothing left to measure");
  }
  for (const std::string& why : skipped) std::cerr << "fasop-cpp: note: " << why << "; skipped\n";
  if (std::find(measured_dtypes.begin(), measured_dtypes.end(), "fp8") != measured_dtypes.end())
    for (const Shape& s : shapes)
      if (s.m % 16 || s.n % 16 || s.k % 16)
        throw SpecError("--shapes: fp8 GEMMs need m, n and k divisible by 16, not " + shape_text(s));
  std::unique_ptr<AtomicFileWriter> file;
  if (!options.output.empty()) {
    try {
      file = std::make_unique<AtomicFileWriter>(options.output);
    } catch (const std::exception& e) {
      throw SpecError(std::string("-o: ") + e.what());
    }
  }
  if (options.threads > 0) torch::set_num_threads(options.threads);
  torch::manual_seed(0);
  torch::NoGradGuard no_grad;

  Operands operands(device);
  std::vector<Case> cases;
  for (const std::string& d : measured_dtypes)
    for (const Shape& s : shapes) cases.push_back(make_case(d, s, operands));
  Progress progress(!options.quiet);
  // Each case once (the libraries' first-call set-up), then once timed to size its samples.
  for (size_t i = 0; i < cases.size(); ++i) {
    Case& c = cases[i];
    progress.show("sizing " + c.dtype + " " + shape_text(c.shape) + " (" + std::to_string(i + 1) + " of " +
                  std::to_string(cases.size()) + ")");
    time_sample(c, device);
    const double once = time_sample(c, device);
    c.inner = int(std::clamp(std::ceil(sample_s / std::max(once, 1e-9)), 1.0, 10000.0));
  }
  // Rounds over all cases, as the layer profiler times layers: a slow spell of the machine
  // spoils one round's sample of every shape rather than all of one shape's.
  const int rounds = warmup + repeats;
  for (int r = 0; r < rounds; ++r)
    for (Case& c : cases) {
      progress.show("round " + std::to_string(r + 1) + " of " + std::to_string(rounds) +
                    (r < warmup ? " (warm-up)" : ""));
      const double seconds = time_sample(c, device);
      if (r >= warmup) c.samples.push_back(seconds);
    }
  progress.done();
  for (Case& c : cases) summarise(c);

  // The fit per dtype, against its peak or, without one, the measured maximum.
  std::ostringstream fits, notes;
  std::map<std::string, std::pair<GemmSweepFit, Peak>> fitted;
  for (const std::string& d : measured_dtypes) {
    std::vector<GemmPoint> points;
    double best_tflops = 0;
    for (const Case& c : cases)
      if (c.dtype == d) {
        GemmPoint p{double(c.shape.m), double(c.shape.n), double(c.shape.k), c.median_s};
        points.push_back(p);
        best_tflops = std::max(best_tflops, p.flops() / p.seconds / 1e12);
      }
    Peak peak;
    auto it = peaks.find(d);
    if (it != peaks.end()) peak = it->second;
    else peak = {best_tflops, "the measured maximum"};
    const GemmSweepFit sweep = fit_gemm_sweep(points, peak.tflops * 1e12, gemm_input_bytes(d));
    const GemmFit& fit = sweep.fit;
    fitted[d] = {sweep, peak};
    notes << "# " << d << ": peak " << number(peak.tflops) << " TFLOP/s from " << peak.from;
    if (it == peaks.end())
      notes << " (no --gpu or --peak-tflops peak for " << d
            << "): gemm_peak_share is relative to the fastest shape measured, not to a datasheet peak";
    notes << ".\n";
    fits << "  " << d << ": {gemm_peak_share: " << number(fit.gemm_peak_share, 4)
         << ", gemm_half_dim: " << number(fit.gemm_half_dim, 4)
         << ", gemm_unaligned_share: " << number(sweep.gemm_unaligned_share, 4) << ", peak_tflops: " << number(peak.tflops)
         << ", launch_bound_points: " << sweep.launch_bound
         << ", median_error_pct: " << number(100 * fit.median_error, 3)
         << ", worst_error_pct: " << number(100 * fit.worst_error, 3) << "}\n";
  }

  const std::string name = device_name(device);
  const std::string gpu = options.gpu.empty() ? name : options.gpu;
  std::ostringstream yaml;
  yaml << "# Measured by `" << command << "` on " << name << ", LibTorch " << TORCH_VERSION << ".\n"
       << "# points: seconds per GEMM (m x k) x (k x n), the median of " << repeats << " rounds over all shapes after "
       << warmup << " warm-up round" << (warmup == 1 ? "" : "s") << "; tflops = 2 m n k / seconds / 1e12.\n"
       << "# fit: fasop-cpp's GEMM model (configs/gpus/*.yaml precisions), least squares of log seconds:\n"
       << "#   seconds = 2 m n k / (peak x gemm_peak_share x prod over d in m, n, k of d / (d + gemm_half_dim));\n"
       << "#   shapes whose n or k is not a multiple of 16 bytes run at gemm_unaligned_share of that;\n"
       << "#   GEMMs shorter than " << number(kLaunchBoundFactor) << " x the shortest are launch-bound and left out;\n"
       << "#   errors are |model - measured| / measured over the points fitted.\n"
       << notes.str() << "kind: gemm_times\ngpu: " << yaml_scalar(gpu) << "\ndevice: " << yaml_scalar(name) << "\npoints:\n";
  for (const Case& c : cases)
    yaml << "  - {dtype: " << c.dtype << ", m: " << c.shape.m << ", n: " << c.shape.n << ", k: " << c.shape.k
         << ", seconds: " << number(c.median_s) << ", tflops: "
         << number(2.0 * c.shape.m * c.shape.n * c.shape.k / c.median_s / 1e12) << "}\n";
  yaml << "fit:\n" << fits.str();

  for (const Case& c : cases) {
    const auto& [sweep, peak] = fitted[c.dtype];
    const GemmPoint point{double(c.shape.m), double(c.shape.n), double(c.shape.k), c.median_s};
    const double model = sweep.fit.predict_s(point.m, point.n, point.k, peak.tflops * 1e12) /
                         (gemm_aligned(point, gemm_input_bytes(c.dtype)) ? 1 : sweep.gemm_unaligned_share);
    std::printf("%-4s %-19s %11.6g s  %9.4g TFLOP/s  model %+6.1f%%  spread %3.0f%%\n", c.dtype.c_str(),
                shape_text(c.shape).c_str(), c.median_s, 2.0 * c.shape.m * c.shape.n * c.shape.k / c.median_s / 1e12,
                100 * (model - c.median_s) / c.median_s, 100 * c.spread);
  }
  for (const std::string& d : measured_dtypes) {
    const auto& [sweep, peak] = fitted[d];
    std::printf("%s: gemm_peak_share %.4g, gemm_half_dim %.4g, gemm_unaligned_share %.3g against a peak of %.6g TFLOP/s "
                "(%s); error median %.3g%%, worst %.3g%% over %d aligned shapes (%d launch-bound left out)\n",
                d.c_str(), sweep.fit.gemm_peak_share, sweep.fit.gemm_half_dim, sweep.gemm_unaligned_share, peak.tflops,
                peak.from.c_str(), 100 * sweep.fit.median_error, 100 * sweep.fit.worst_error, sweep.aligned,
                sweep.launch_bound);
  }
  if (!file) return 0;
  file->write(yaml.str());
  file->commit();
  std::printf("wrote %s\n", options.output.c_str());
  return 0;
}

}  // namespace

int run_gemm_profile(const GemmProfileOptions& options) {
  return reporting_errors("profile gemm: ", [&] { return profile_gemm(options); });
}

}  // namespace fasop
