#pragma once
// The training precisions fasop-cpp models (a model's `dtype`) and what each implies: the
// bytes a GEMM reads, the bytes activations are kept in, the precision everything but the
// GEMMs runs in, and the tensor-core peak the GEMMs run at. One place, so that the layer model,
// the memory model and the emitters agree.
#include <string>

namespace fasop {

/// Whether `dtype` is one of: fp32, tf32 (fp32 training with TF32 GEMMs), fp16, bf16, fp8
/// (Transformer Engine's per-tensor scaling: delayed or current), mxfp8 (MXFP8 block scaling:
/// an e8m0 scale per 32 elements; Blackwell) or nvfp4 (NVFP4 block scaling: e2m1 values, an e4m3
/// scale per 16 elements and one fp32 scale a tensor; Blackwell).
bool known_precision(const std::string& dtype);
/// The list above, for error messages.
const char* known_precisions_text();
/// fp8 or mxfp8: GEMMs in 8 bits, the rest in bf16.
bool is_fp8(const std::string& dtype);
/// fp8, mxfp8 or nvfp4: Transformer Engine casts each GEMM's inputs to a narrow format (and
/// keeps their scales) and runs the rest in bf16.
bool is_quantized(const std::string& dtype);
/// mxfp8 or nvfp4: block-scaled formats, which run on GPUs whose data has an entry of their own
/// (Blackwell's tensor cores apply the block scales; no other kin's efficiency stands in).
bool is_block_scaled(const std::string& dtype);
/// Bytes an activation element is kept in: 4 for fp32 and tf32 training, 2 otherwise (fp8
/// training keeps activations in bf16).
double activation_bytes(const std::string& dtype);
/// Bytes a GEMM input element takes: 4 (fp32, tf32), 1 (fp8, mxfp8), 0.5625 (nvfp4: 4 bits and
/// a byte of scale per 16) or 2.
double gemm_input_bytes(const std::string& dtype);
/// The precision of everything but the GEMMs: bf16 for fp8 training, fp32 for TF32 training.
std::string non_gemm_precision(const std::string& dtype);
/// The datasheet peak a precision's GEMMs run against: MXFP8 runs on the fp8 tensor cores,
/// NVFP4 on the fp4 ones.
std::string peak_precision(const std::string& dtype);
/// Whether training in `dtype` has bf16 gradients to keep and reduce (Megatron's
/// --grad-reduce-in-bf16): bf16, and fp8 and nvfp4 with their bf16 parameters.
bool has_bf16_gradients(const std::string& dtype);
/// Why --grad-reduce-in-bf16 does not apply to training in `dtype`, for error messages:
/// "trains in fp16, whose gradients have no bf16 to reduce in".
std::string no_bf16_gradients_text(const std::string& dtype);

}  // namespace fasop
