#include "cli/schedule_command.h"

#include <iostream>
#include <memory>

#include "cli/saved_plan.h"
#include "emit/emit.h"
#include "emit/plan_checks.h"
#include "report/atomic_file.h"
#include "specs/spec_error.h"

namespace fasop {
namespace {

struct ScheduleOptions {
  std::string plan;
  std::string format;
  std::string output;
  std::string megatron_flavor = "upstream";
  std::string fsdp = "megatron";
};

/// The stack whose memory the cost model prices for a format ("": none of its own).
std::string priced_stack_of(const std::string& format) {
  if (format == "megatron" || format == "megatron-bridge") return "megatron";
  if (format == "deepspeed" || format == "deepspeed-pipeline") return "deepspeed";
  return format == "torchtitan" ? "torchtitan" : "";
}

/// The plan in `options.format`.
std::string emit(const ScheduleOptions& options, const PlanFile& plan, const ModelSpec& model, const ClusterSpec& cluster) {
  if (options.format == "torchtitan") return torchtitan_config_py(plan, model, cluster);
  if (options.format == "megatron-bridge") return megatron_bridge_args_text(plan, model, cluster);
  if (options.format == "slapo") return slapo_schedule_py(plan, model);
  if (options.format == "atorch") return atorch_strategy_py(plan, model);
  if (options.format == "deepspeed") return deepspeed_config_json(plan, model);
  if (options.format == "deepspeed-pipeline") return deepspeed_pipeline_py(plan, model);
  MegatronFlavor flavor = options.megatron_flavor == "fasop" ? MegatronFlavor::kFasop : MegatronFlavor::kUpstream;
  return megatron_args_text(plan, model, flavor, fsdp_impl_named(options.fsdp)) + "\n";
}

void run(const ScheduleOptions& options) {
  // Loading checks the plan against its specs (and re-estimates it): a schedule is only written
  // for a plan its model and cluster can still hold.
  LoadedPlan loaded = load_plan(options.plan);
  if (loaded.result.estimate.memory.is_oom)
    std::cerr << "fasop-cpp: warning: " << options.plan << " is estimated not to fit in GPU memory ("
              << loaded.result.estimate.memory.oom_gpumem_gib << " GiB a GPU)\n";
  std::string text = emit(options, loaded.file, loaded.setup->model, loaded.setup->cluster);
  // Warned once the stack takes the plan: a refusal stays one line.
  if (std::string stack = priced_stack_of(options.format); !stack.empty())
    if (std::string note = priced_stack_note(loaded.file, stack); !note.empty())
      std::cerr << "fasop-cpp: warning: " << note << "\n";
  if (options.output.empty()) {
    std::cout << text;
    return;
  }
  write_file_atomically(options.output, text);
  std::cout << "wrote " << options.output << " (" << options.format << ")\n";
}

}  // namespace

void add_schedule_command(CLI::App& app) {
  auto options = std::make_shared<ScheduleOptions>();
  CLI::App* command = app.add_subcommand(
      "schedule", "write a saved plan for a training framework: Megatron-LM arguments, a torchtitan config, "
                  "Megatron-Bridge overrides, a DeepSpeed config and PipelineModule, a Slapo schedule or an ATorch "
                  "strategy");
  command->add_option("--plan", options->plan, "plan file (search --save-plan)")->required();
  command->add_option("--format", options->format,
                      "megatron (arguments), torchtitan (Python module: fasop_plan() returns its Trainer.Config), "
                      "megatron-bridge (run_recipe.py arguments: recipe and overrides), deepspeed (config JSON), "
                      "deepspeed-pipeline (Python module: a PipelineModule with the plan's stages), slapo (Python "
                      "schedule script), atorch (load_strategy list)")
      ->required()
      ->check(CLI::IsMember({"slapo", "atorch", "megatron", "torchtitan", "megatron-bridge", "deepspeed",
                             "deepspeed-pipeline"}));
  command->add_option("-o,--output", options->output, "file to write (default: standard output)");
  command->add_option("--megatron-flavor", options->megatron_flavor,
                      "with --format megatron: upstream (--pipeline-model-parallel-layout) or fasop (FASOP's "
                      "fork, --balance)")
      ->check(CLI::IsMember({"upstream", "fasop"}));
  command->add_option("--fsdp", options->fsdp,
                      "with --format megatron, how a ZeRO-3 plan shards: megatron (Megatron-FSDP, default) or torch "
                      "(PyTorch FSDP2, --use-torch-fsdp2: pp 1, no experts, an untied output layer)")
      ->check(CLI::IsMember({"megatron", "torch"}));
  command->callback([options, command] {
    if (command->count("--megatron-flavor") && options->format != "megatron")
      throw SpecError("--megatron-flavor needs --format megatron");
    if (command->count("--fsdp") && options->format != "megatron") throw SpecError("--fsdp needs --format megatron");
    run(*options);
  });
}

}  // namespace fasop
