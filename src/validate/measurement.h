#pragma once
// The one place where a published throughput becomes a measured step time.
#include <string>

#include "specs/validation_case.h"

namespace fasop {

/// Megatron-LM's FLOP count of one training step with full recomputation (Narayanan et al.,
/// "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", SC'21,
/// eq. 3): F = 96 B s l h^2 (1 + s / (6 h) + V / (16 l h)), with B the global batch, s the
/// sequence length, l the layers, h the hidden size and V the vocabulary. Megatron's papers
/// report tflops_per_gpu = F / (step seconds x GPUs) with this F whatever the recomputation.
constexpr const char* kMegatronNarayanan2021 = "megatron-narayanan-2021";
double megatron_narayanan_2021_flops(double batch, double sequence, double layers, double hidden, double vocab);

/// Seconds per step of a run that reached `tflops_per_gpu` on `gpus` GPUs, counting a step's
/// work as `flops`: flops / (gpus x tflops_per_gpu x 1e12).
double step_s_from_tflops(double flops, int gpus, double tflops_per_gpu);

/// The case's measured seconds per step: measurement.step_s, or tflops_per_gpu converted with
/// its flop_formula (an unknown formula throws SpecError naming the file and field).
double measured_step_s(const ValidationCase& c);

}  // namespace fasop
