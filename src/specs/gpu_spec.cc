#include "specs/gpu_spec.h"

#include <algorithm>
#include <cctype>

#include "specs/precision.h"
#include "specs/spec_error.h"
#include "specs/spec_store.h"
#include "specs/yaml_field.h"

namespace fasop {
namespace {

constexpr const char* kGpuDir = "configs/gpus/";

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

double share(const Field& field) {
  double value = field.positive_double();
  if (value > 1) field.fail("is a share: at most 1");
  return value;
}

/// One precision's entry over `base`; `inherit_sdpa`: `base` is the first precision listed,
/// whose SDPA shares a later entry without its own takes.
PrecisionEfficiency parse_precision(const Field& f, const PrecisionEfficiency& base, bool inherit_sdpa) {
  f.keys("a map of gemm_peak_share, gemm_half_dim, attention_peak_share, ...");
  f.only_keys({"gemm_peak_share", "gemm_half_dim", "gemm_unaligned_share", "attention_peak_share",
               "attention_backward_peak_share", "sdpa_attention_peak_share", "sdpa_attention_backward_peak_share",
               "memory_share"});
  PrecisionEfficiency e = base;
  if (f.child("gemm_peak_share").present()) e.gemm_peak_share = share(f.child("gemm_peak_share"));
  if (f.child("gemm_half_dim").present()) e.gemm_half_dim = f.child("gemm_half_dim").non_negative_double();
  if (f.child("gemm_unaligned_share").present()) e.gemm_unaligned_share = share(f.child("gemm_unaligned_share"));
  if (f.child("attention_peak_share").present()) e.attention_peak_share = share(f.child("attention_peak_share"));
  if (f.child("attention_backward_peak_share").present())
    e.attention_backward_peak_share = share(f.child("attention_backward_peak_share"));
  // PyTorch's SDPA kernel: its own shares where given, else the first precision's, else the
  // fused kernel's (the same kernel on GPUs whose files omit them; see gpu_spec.h).
  const bool sdpa_given = f.child("sdpa_attention_peak_share").present();
  if (sdpa_given != f.child("sdpa_attention_backward_peak_share").present())
    f.fail("gives one of sdpa_attention_peak_share and sdpa_attention_backward_peak_share; give both or neither");
  if (sdpa_given) {
    e.sdpa_attention_peak_share = share(f.child("sdpa_attention_peak_share"));
    e.sdpa_attention_backward_peak_share = share(f.child("sdpa_attention_backward_peak_share"));
  } else if (!inherit_sdpa) {
    e.sdpa_attention_peak_share = e.attention_peak_share;
    e.sdpa_attention_backward_peak_share = e.attention_backward_peak_share;
  }
  if (f.child("memory_share").present()) e.memory_share = share(f.child("memory_share"));
  return e;
}

CollectiveEfficiency parse_collective(const Field& f) {
  CollectiveEfficiency c;
  if (!f.present()) return c;
  f.keys("{bus_share: SHARE, half_bytes: BYTES}");
  f.only_keys({"bus_share", "half_bytes"});
  if (f.child("bus_share").present()) c.bus_share = share(f.child("bus_share"));
  if (f.child("half_bytes").present()) c.half_bytes = f.child("half_bytes").non_negative_double();
  return c;
}

}  // namespace

const char* stack_name(Stack stack) {
  switch (stack) {
    case Stack::kEager: return "eager";
    case Stack::kLibtorch: return "libtorch";
    case Stack::kTorchtitan: return "torchtitan";
    case Stack::kTorchtitanCompiled: return "torchtitan-compiled";
    case Stack::kMegatron: break;
  }
  return "megatron";
}

bool stack_named(const std::string& name, Stack* stack) {
  for (Stack s : {Stack::kMegatron, Stack::kEager, Stack::kLibtorch, Stack::kTorchtitan, Stack::kTorchtitanCompiled})
    if (name == stack_name(s)) {
      *stack = s;
      return true;
    }
  return false;
}

RuntimeMemory GpuSpec::runtime_memory(TrainingStack stack) const {
  auto it = memory_runtime.find(training_stack_name(stack));
  return it == memory_runtime.end() ? default_runtime_memory(stack) : it->second;
}

double LaunchCosts::dispatch_s_of(const std::string& stack) const {
  auto it = dispatch_s.find(stack);
  return it == dispatch_s.end() ? 0 : it->second;
}

const PrecisionEfficiency& GpuSpec::efficiency(const std::string& precision) const {
  static const PrecisionEfficiency kDefault;
  // The cost model asks in its inner loops: the common case builds no string.
  auto it = precisions.find(precision);
  if (it != precisions.end()) return it->second;
  // A precision without data of its own takes its nearest kin's: MXFP8 fp8's, bf16 fp16's.
  it = precisions.find(precision == "mxfp8" ? "fp8" : precision == "bf16" ? "fp16" : "bf16");
  if (it != precisions.end()) return it->second;
  return precisions.empty() ? kDefault : precisions.begin()->second;
}

GpuSpec parse_gpu_spec(const std::string& yaml_text, const std::string& source) {
  Field root = load_root(yaml_text, source);
  GpuSpec gpu;
  gpu.source = source;
  root.only_keys({"name", "aliases", "memory_gib", "peak_tflops", "memory_bandwidth_bytes_per_s", "precisions",
                  "collectives", "launch", "overlap_slowdown", "memory_runtime"});
  gpu.name = root.child("name").text();
  if (Field aliases = root.child("aliases"); aliases.present())
    for (const Field& alias : aliases.items("a list of names")) gpu.aliases.push_back(alias.text());
  gpu.memory_gib = root.child("memory_gib").positive_double();
  Field peak = root.child("peak_tflops");
  for (const std::string& precision : peak.keys("a map: precision -> dense TFLOP/s", true))
    gpu.peak_tflops[precision] = peak.child(precision).positive_double();
  gpu.memory_bandwidth_bytes_per_s = root.child("memory_bandwidth_bytes_per_s").positive_double();
  Field precisions = root.child("precisions");
  // A precision inherits what it does not give from the first one listed (e.g. fp8's
  // attention and element-wise kernels run as bf16's).
  const PrecisionEfficiency* first = nullptr;
  for (const std::string& name :
       precisions.keys("a map: precision -> {gemm_peak_share, gemm_half_dim, attention_peak_share, ...}", true)) {
    if (!gpu.peak_tflops.count(peak_precision(name)))
      precisions.child(name).fail("has no peak_tflops." + peak_precision(name) + "; add it");
    gpu.precisions[name] = parse_precision(precisions.child(name), first ? *first : PrecisionEfficiency{}, first != nullptr);
    if (!first) first = &gpu.precisions[name];
  }
  Field collectives = root.child("collectives");
  collectives.only_keys({"intra_node", "inter_node"});
  gpu.nvlink = parse_collective(collectives.child("intra_node"));
  gpu.network = parse_collective(collectives.child("inter_node"));
  if (Field launch = root.child("launch"); launch.present()) {
    launch.keys("{kernel_gap_s, dispatch_s}");
    launch.only_keys({"kernel_gap_s", "dispatch_s"});
    if (launch.child("kernel_gap_s").present()) gpu.launch.kernel_gap_s = launch.child("kernel_gap_s").non_negative_double();
    if (Field dispatch = launch.child("dispatch_s"); dispatch.present()) {
      dispatch.only_keys({"megatron", "eager", "libtorch"});
      for (const std::string& stack : dispatch.keys("a map: stack (megatron, eager, libtorch) -> seconds"))
        gpu.launch.dispatch_s[stack] = dispatch.child(stack).non_negative_double();
    }
  }
  if (root.child("overlap_slowdown").present()) {
    gpu.overlap_slowdown = root.child("overlap_slowdown").non_negative_double();
    if (gpu.overlap_slowdown >= 1) root.child("overlap_slowdown").fail("is a share of the GEMMs' speed: below 1");
  }
  if (Field runtime = root.child("memory_runtime"); runtime.present()) parse_memory_runtime(runtime, gpu);
  return gpu;
}

void parse_memory_runtime(const Field& runtime, GpuSpec& gpu) {
  for (const std::string& name : runtime.keys("a mapping: stack (megatron, torchtitan, deepspeed) -> {workspace_gib, ...}")) {
    const std::optional<TrainingStack> stack = training_stack_named(name);
    if (!stack) runtime.child(name).fail(std::string("unknown stack; use ") + training_stack_choices());
    gpu.memory_runtime[name] = parse_runtime_memory(runtime.child(name), gpu.runtime_memory(*stack));
  }
}

const std::vector<GpuSpec>& shipped_gpu_specs() {
  static const std::vector<GpuSpec> specs = [] {
    std::vector<GpuSpec> out;
    for (const EmbeddedFile& file : embedded_presets()) {
      std::string path = file.path;
      if (path.rfind(kGpuDir, 0) == 0) out.push_back(parse_gpu_spec(file.text, path));
    }
    std::sort(out.begin(), out.end(), [](const GpuSpec& a, const GpuSpec& b) { return a.name < b.name; });
    return out;
  }();
  return specs;
}

const GpuSpec* shipped_gpu_spec(const std::string& gpu) {
  const std::string wanted = lower(gpu);
  for (const GpuSpec& spec : shipped_gpu_specs()) {
    if (lower(spec.name) == wanted) return &spec;
    for (const std::string& alias : spec.aliases)
      if (lower(alias) == wanted) return &spec;
  }
  return nullptr;
}

}  // namespace fasop

namespace fasop {

bool GpuSpec::runs_precision(const std::string& dtype) const {
  if (!peak_tflops.count(peak_precision(dtype))) return false;
  return !is_block_scaled(dtype) || precisions.count(dtype) > 0;
}

}  // namespace fasop
