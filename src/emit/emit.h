#pragma once
// emit: a saved plan in the forms training frameworks take. Pure functions of the plan and its
// model; the `schedule` command writes what they return.
//   slapo_schedule_py      a Python script building a Slapo schedule (slapo_schedule.h)
//   atorch_strategy_py     ATorch auto_accelerate's load_strategy list (atorch_strategy.h)
//   megatron_args          Megatron-LM arguments, upstream or FASOP's fork (megatron_args.h)
//   torchtitan_config_py   a torchtitan configuration module (torchtitan_config.h)
//   megatron_bridge_args   Megatron-Bridge's run_recipe.py recipe and overrides (megatron_bridge_args.h)
//   deepspeed_config_json  the DeepSpeed config: batch, ZeRO, precision (deepspeed_config.h)
//   deepspeed_pipeline_py  a DeepSpeed PipelineModule subclass with the plan's stages
//                          (deepspeed_pipeline.h)
#include "emit/atorch_strategy.h"
#include "emit/deepspeed_config.h"
#include "emit/deepspeed_pipeline.h"
#include "emit/megatron_args.h"
#include "emit/megatron_bridge_args.h"
#include "emit/slapo_schedule.h"
#include "emit/torchtitan_config.h"
