#include "emit/deepspeed_config.h"

#include <vector>

#include "emit/plan_checks.h"
#include "specs/precision.h"
#include "specs/spec_error.h"

namespace fasop {
std::string deepspeed_config_json(const PlanFile& plan, const ModelSpec& model) {
  const PlanKey& key = plan.key;
  const std::vector<int> parts = stage_boundaries(plan, model);
  require_uniform_dp(plan, "DeepSpeed");
  require_uniform_tp(plan, "DeepSpeed");
  require_even_batch(plan, "DeepSpeed");
  require_no_speed_split(plan, "DeepSpeed");
  require_no_megatron_features(plan, "DeepSpeed");
  // DeepSpeed checks train_batch_size == micro x gradient_accumulation_steps x dp world size
  // (DeepSpeedConfig._batch_assertion), so the division must be exact.
  if (key.mbs <= 0 || key.dp <= 0 || plan.global_batch % (key.mbs * key.dp) != 0)
    throw SpecError(plan_where(plan) + "global batch " + std::to_string(plan.global_batch) +
                    " is not a multiple of micro-batch " + std::to_string(key.mbs) + " x dp " +
                    std::to_string(key.dp) + ", which DeepSpeed asserts; fix global_batch or mbs");
  // PipelineEngine.__init__ asserts zero_optimization_stage() < ZeroStageEnum.gradients:
  // "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism" (deepspeed/runtime/pipe/engine.py).
  // Emitting stage 1 instead would silently change the plan's memory, so refuse.
  if (key.pp > 1 && key.zero_stage >= 2)
    throw SpecError(plan_where(plan) + "ZeRO stage " + std::to_string(key.zero_stage) + " with pp " +
                    std::to_string(key.pp) + ": DeepSpeed's pipeline engine allows ZeRO 0 or 1 only "
                    "(\"ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism\"); re-plan with --zero 1 "
                    "or pp 1");
  if (key.zero_stage < 0 || key.zero_stage > 3)
    throw SpecError(plan_where(plan) + "ZeRO stage " + std::to_string(key.zero_stage) + " is not 0-3");

  const int gas = plan.global_batch / (key.mbs * key.dp);
  std::string j = "{\n";
  j += "  \"train_batch_size\": " + std::to_string(plan.global_batch) + ",\n";
  j += "  \"train_micro_batch_size_per_gpu\": " + std::to_string(key.mbs) + ",\n";
  j += "  \"gradient_accumulation_steps\": " + std::to_string(gas) + ",\n";
  j += "  \"zero_optimization\": {\n    \"stage\": " + std::to_string(key.zero_stage) + "\n  },\n";
  // fp32 is DeepSpeed's default: neither section. fp8 training runs in bf16 here; its fp8
  // GEMMs come from Transformer Engine's layers in the model code, not from this file.
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
  std::string parts_text;
  for (size_t i = 0; i < parts.size(); ++i) parts_text += (i ? ", " : "") + std::to_string(parts[i]);
  j += "  \"pipeline\": {\n";
  j += "    \"stages\": " + std::to_string(key.pp) + ",\n";
  j += "    \"parts\": [" + parts_text + "],\n";
  // The pipeline engine checkpoints every `interval` layers when > 0 (PipelineModule
  // activation_checkpoint_interval): 1 recomputes each layer, the plan's full recomputation.
  j += "    \"activation_checkpoint_interval\": " + std::string(key.recompute ? "1" : "0") + "\n";
  j += "  }\n}\n";
  return j;
}

}  // namespace fasop
