#include "emit/deepspeed_config.h"

#include "emit/deepspeed_checks.h"
#include "specs/precision.h"

namespace fasop {
std::string deepspeed_config_json(const PlanFile& plan, const ModelSpec& model) {
  const PlanKey& key = plan.key;
  deepspeed_stage_boundaries(plan, model);  // throws for what DeepSpeed does not run

  const int gas = deepspeed_accumulation_steps(plan);
  std::string j = "{\n";
  j += "  \"train_batch_size\": " + std::to_string(plan.global_batch) + ",\n";
  j += "  \"train_micro_batch_size_per_gpu\": " + std::to_string(key.mbs) + ",\n";
  j += "  \"gradient_accumulation_steps\": " + std::to_string(gas) + ",\n";
  j += "  \"zero_optimization\": {\n    \"stage\": " + std::to_string(key.zero_stage) + "\n  },\n";
  // fp32 is DeepSpeed's default: neither section. fp8 and nvfp4 training run in bf16 here; their
  // fp8 or fp4 GEMMs come from Transformer Engine's layers in the model code, not from this file.
  const std::string non_gemm = non_gemm_precision(model.dtype);
  if (non_gemm == "fp16") j += "  \"fp16\": {\n    \"enabled\": true\n  },\n";
  if (non_gemm == "bf16") j += "  \"bf16\": {\n    \"enabled\": true\n  },\n";
  if (key.recompute) {
    // deepspeed.checkpointing's settings (runtime/activation_checkpointing/config.py): plain
    // recomputation, activations neither partitioned over tp nor moved to the CPU, as priced.
    j += "  \"activation_checkpointing\": {\n"
         "    \"partition_activations\": false,\n"
         "    \"cpu_checkpointing\": false,\n"
         "    \"contiguous_memory_optimization\": false,\n"
         "    \"synchronize_checkpoint_boundary\": false\n"
         "  },\n";
  }
  // The pipeline engine checkpoints every `interval` layers when > 0 (it sets PipelineModule's
  // activation_checkpoint_interval from here): 1 recomputes each layer, the plan's full recomputation.
  j += "  \"pipeline\": {\n";
  j += "    \"activation_checkpoint_interval\": " + std::string(key.recompute ? "1" : "0") + "\n";
  j += "  }\n}\n";
  return j;
}

}  // namespace fasop
