#pragma once
// A training step's model FLOPs, the numerator of MFU: what the model's layers compute, counted
// by the same GEMMs and attention the layer model times.
#include "specs/model_spec.h"

namespace fasop {

/// FLOPs of one training step of `model` at `global_batch` sequences: every unit's forward
/// GEMMs and attention, times 3 for the forward and the backward's two GEMMs per forward GEMM.
/// Recomputation is not counted (model FLOPs, not hardware FLOPs, as PaLM's MFU defines them).
double model_flops_per_step(const ModelSpec& model, int global_batch);

}  // namespace fasop
