#pragma once
// A GPU type as measured data: its datasheet peaks and the shares of them real kernels reach,
// per precision (configs/gpus/<gpu>.yaml, compiled in; every number with its source there).
// Node types name their GPU (`gpu: H100`) and get this data unless they override a field.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "specs/runtime_memory.h"

namespace fasop {

/// How fast one precision's kernels run on a GPU, as shares of its datasheet peaks.
struct PrecisionEfficiency {
  /// Large GEMMs' share of the dense peak of this precision.
  double gemm_peak_share = 0.75;
  /// GEMM shape: each of a GEMM's dimensions d (m, n, k) costs a factor d / (d + gemm_half_dim)
  /// of gemm_peak_share (narrow GEMMs fill fewer tiles and waves). 0: every shape alike.
  double gemm_half_dim = 0;
  /// The share of the above a GEMM keeps when a leading dimension (its n or k) is not a
  /// multiple of 16 bytes of its elements: cuBLAS then cannot run its vectorised (on Hopper,
  /// TMA-fed) kernels. GPT-2's unpadded 50,257-entry head is the common case. 1: no penalty.
  double gemm_unaligned_share = 1;
  /// Fused (flash) attention's forward share of the dense peak, on its counted FLOPs.
  double attention_peak_share = 0.5;
  /// Its backward pass's share (the backward kernel recomputes the scores: 2.5 x the forward's FLOPs).
  double attention_backward_peak_share = 0.4;
  /// The same two shares for PyTorch's scaled_dot_product_attention as torchtitan calls it:
  /// FlashAttention-2 built into PyTorch on Ampere and Hopper (the fused kernel above is cuDNN's
  /// or FlashAttention-3's there), cuDNN's on Blackwell. A file that omits them gives the fused
  /// kernel's: on Ampere and Ada FlashAttention-2 is the fused kernel, on Blackwell cuDNN is.
  double sdpa_attention_peak_share = 0.5;
  double sdpa_attention_backward_peak_share = 0.4;
  /// Element-wise (memory-bound) kernels' share of memory bandwidth.
  double memory_share = 0.9;
};

/// How a collective's bus bandwidth grows with its message: share x bytes / (bytes + half_bytes)
/// of the link's bandwidth (NCCL reaches its plateau only on large messages).
struct CollectiveEfficiency {
  double bus_share = 1.0;
  double half_bytes = 0;
  double at(double bytes) const { return half_bytes > 0 ? bus_share * bytes / (bytes + half_bytes) : bus_share; }
  /// Seconds of a ring all-reduce of `bytes` over `ranks` GPUs on a link of `latency_s` and
  /// `bits_per_s`: 2(r-1) latencies and 2(r-1)/r x bytes at the bandwidth x at(bytes); a
  /// reduce-scatter or an all-gather is half of it.
  double ring_allreduce_s(double bytes, int ranks, double latency_s, double bits_per_s) const {
    if (ranks <= 1) return 0;
    const double r = ranks;
    return 2 * (r - 1) * latency_s + 2 * (r - 1) / r * 8 * bytes / (bits_per_s * at(bytes));
  }
  /// The same as fixed_s + per_byte_s x bytes (for bytes > 0): bytes / at(bytes) is
  /// (bytes + half_bytes) / bus_share, so k rings of B bytes in all take k x fixed_s +
  /// per_byte_s x B.
  struct RingTerms {
    double fixed_s = 0, per_byte_s = 0;
  };
  RingTerms ring_allreduce_terms(int ranks, double latency_s, double bits_per_s) const {
    if (ranks <= 1) return {};
    const double r = ranks, per_byte_s = 2 * (r - 1) / r * 8 / (bits_per_s * bus_share);
    return {2 * (r - 1) * latency_s + per_byte_s * half_bytes, per_byte_s};
  }
};

/// The software that runs the layers, which decides their kernels: Megatron-LM's fused
/// kernels, PyTorch/Hugging Face eager ops (unfused: more kernels and traffic), fasop-cpp's
/// LibTorch profiler (eager ops launched from C++), or torchtitan's Llama blocks, eager or
/// compiled with torch.compile.
enum class Stack { kMegatron, kEager, kLibtorch, kTorchtitan, kTorchtitanCompiled };
/// A stack's name as files write it: megatron, eager, libtorch, torchtitan or torchtitan-compiled.
const char* stack_name(Stack stack);
/// The stack a name stands for; false for another name.
bool stack_named(const std::string& name, Stack* stack);

/// What launching a kernel costs on the host CPU, per software stack that runs the layers:
/// megatron (Megatron-LM's fused kernels), eager (PyTorch/Hugging Face eager ops), libtorch
/// (fasop-cpp's C++ profiler). A layer runs at the slower of its GPU time and its launches.
struct LaunchCosts {
  double kernel_gap_s = 3e-6;             ///< GPU-side gap between back-to-back kernels
  std::map<std::string, double> dispatch_s;  ///< stack -> host seconds per op it dispatches (PassWork::host_ops)
  double dispatch_s_of(const std::string& stack) const;
};

/// One GPU type's data.
struct GpuSpec {
  std::string name;                  ///< e.g. "H100"
  std::vector<std::string> aliases;  ///< other spellings node types use, e.g. "H100-SXM5-80GB"
  std::string source;                ///< file it was loaded from
  double memory_gib = 0;
  std::map<std::string, double> peak_tflops;  ///< dense peak per precision
  double memory_bandwidth_bytes_per_s = 0;
  std::map<std::string, PrecisionEfficiency> precisions;  ///< fp16, bf16, fp8, fp32, ...
  CollectiveEfficiency nvlink;   ///< collectives inside a node
  CollectiveEfficiency network;  ///< collectives between nodes
  LaunchCosts launch;
  /// Share by which GEMMs slow down while a collective overlaps them (its kernels take SMs
  /// and memory bandwidth): overlapping c seconds of communication costs c x this.
  double overlap_slowdown = 0.1;
  /// Per training stack (its name): what a process holds beyond its tensors (field
  /// memory_runtime); a stack without an entry takes default_runtime_memory's.
  std::map<std::string, RuntimeMemory> memory_runtime;
  /// The entry for `stack`, or its defaults.
  RuntimeMemory runtime_memory(TrainingStack stack) const;

  /// The efficiency of `precision`: its own entry, else fp16 for bf16 and bf16 for fp16, else
  /// the first listed. Throws SpecError when the GPU lists none.
  const PrecisionEfficiency& efficiency(const std::string& precision) const;
  /// Whether the GPU trains in `dtype` (precision.h): its data lists a dense peak for the
  /// precision its GEMMs run in (V100 none for bf16, A100 none for fp8), and for MXFP8 and
  /// NVFP4 an efficiency of its own (block-scaled tensor cores: Blackwell's).
  bool runs_precision(const std::string& dtype) const;
};

/// Parses a GPU data file (configs/gpus/*.yaml); errors name the file and field.
GpuSpec parse_gpu_spec(const std::string& yaml_text, const std::string& source);

/// Reads a memory_runtime map (stack -> {workspace_gib, ...}) into `gpu`'s, each entry over the
/// constants `gpu` has for that stack so far (a data file's own, else the stack's defaults);
/// errors name the field.
void parse_memory_runtime(const Field& runtime, GpuSpec& gpu);

/// The shipped GPU data for `gpu` (name or alias, case-insensitive), or none.
const GpuSpec* shipped_gpu_spec(const std::string& gpu);

/// Every shipped GPU's data, sorted by name.
const std::vector<GpuSpec>& shipped_gpu_specs();

}  // namespace fasop
