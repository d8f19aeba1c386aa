#pragma once
// `fasop-cpp profile layers`: each distinct layer type of a model built in LibTorch, timed
// forward and backward per tensor-parallel shard and micro-batch, written as a profile.
#include <string>
#include <vector>

#include "specs/model_spec.h"

namespace fasop {

/// What `profile layers` measures and where it writes.
struct LayerProfileOptions {
  std::string model;             ///< preset name or YAML file
  std::string device = "cpu";    ///< cpu, cuda or cuda:N
  std::vector<int> tps = {1};
  std::vector<int> micro_batches = {1};
  std::string dtype = "fp32";    ///< fp32, fp16 or bf16
  std::string gpu;               ///< the profile's GPU name (default: cpu, or the CUDA device's name)
  int warmup = 2;
  int repeats = 10;
  double max_spread = 0.25;      ///< refuse repeats whose interquartile range / median exceeds this
  bool allow_noisy = false;      ///< write even so
  std::string output;            ///< profile YAML to write (atomically); empty: print only
  bool quiet = false;
  int threads = 0;               ///< intra-op threads on CPU (0: LibTorch's default)
  /// The vocabulary is padded to a multiple of this x tp, as Megatron-LM does (its default 128),
  /// so that the head's GEMMs are the aligned ones the trainer runs; 1 pads to tp only.
  int vocab_multiple = kMegatronVocabMultiple;
};

/// Runs the measurement; returns the process exit code (0 ok, 2 bad input, 1 failure).
int run_layer_profile(const LayerProfileOptions& options);

/// `fasop-cpp profile step`: one whole training step of the model (pp = tp = dp = 1) in
/// LibTorch against the planner's estimate from a profile, for the accuracy loop.
struct StepCheckOptions {
  std::string model;
  std::string profile;           ///< the profile to estimate from, or
  std::string measure_profile;   ///< a profile to measure in the same rounds as the steps, then write here
  std::string device = "cpu";
  std::string dtype = "fp32";    ///< the precision the profile was measured in
  int micro_batch = 1;
  int micro_batches = 4;         ///< micro-batches a step accumulates
  int warmup = 3;                ///< the first steps allocate gradients and warm caches
  int repeats = 20;              ///< a VM's stray slow steps need this many for a stable median
  int threads = 0;
};
int run_step_check(const StepCheckOptions& options);

}  // namespace fasop
