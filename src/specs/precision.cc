#include "specs/precision.h"

namespace fasop {

bool known_precision(const std::string& dtype) {
  for (const char* name : {"fp32", "tf32", "fp16", "bf16", "fp8", "mxfp8", "nvfp4"})
    if (dtype == name) return true;
  return false;
}

const char* known_precisions_text() {
  return "fp16, bf16, fp32, tf32 (fp32 with TF32 GEMMs), fp8 (per-tensor scaling), mxfp8 (block scaling) or nvfp4 "
         "(4-bit block scaling)";
}

bool is_fp8(const std::string& dtype) { return dtype == "fp8" || dtype == "mxfp8"; }

bool is_quantized(const std::string& dtype) { return is_fp8(dtype) || dtype == "nvfp4"; }

bool is_block_scaled(const std::string& dtype) { return dtype == "mxfp8" || dtype == "nvfp4"; }

double activation_bytes(const std::string& dtype) { return dtype == "fp32" || dtype == "tf32" ? 4 : 2; }

double gemm_input_bytes(const std::string& dtype) {
  return dtype == "fp32" || dtype == "tf32" ? 4 : is_fp8(dtype) ? 1 : dtype == "nvfp4" ? 0.5 + 1.0 / 16 : 2;
}

std::string non_gemm_precision(const std::string& dtype) {
  return is_quantized(dtype) ? "bf16" : dtype == "tf32" ? "fp32" : dtype;
}

std::string peak_precision(const std::string& dtype) {
  return dtype == "mxfp8" ? "fp8" : dtype == "nvfp4" ? "fp4" : dtype;
}

bool has_bf16_gradients(const std::string& dtype) { return non_gemm_precision(dtype) == "bf16"; }

std::string no_bf16_gradients_text(const std::string& dtype) {
  return "trains in " + dtype + ", whose gradients have no bf16 to reduce in";
}

}  // namespace fasop
