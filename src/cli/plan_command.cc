#include "cli/plan_command.h"

#include <iostream>
#include <memory>

#include "cli/saved_plan.h"
#include "costmodel/make_context.h"
#include "report/atomic_file.h"
#include "report/pipeline_timeline.h"
#include "report/plan_view.h"
#include "report/step_breakdown_text.h"
#include "specs/plan_degrees.h"

namespace fasop {
namespace {

struct PlanShowOptions {
  std::string plan;
  std::string timeline;
  std::string cluster;
};

void show(const PlanShowOptions& options) {
  PlanOverrides overrides;
  overrides.cluster = options.cluster;
  LoadedPlan loaded = load_plan(options.plan, overrides);
  const PlannerSetup& setup = *loaded.setup;
  if (!options.timeline.empty()) {
    PlanContext ctx = make_plan_context(setup.model, setup.cluster, setup.input.profiles, *setup.policy,
                                        loaded.result.plan.key);
    std::vector<PipelineEvent> events = pipeline_events(ctx, *setup.policy, loaded.result.plan.partition);
    std::string title = setup.model.name + " on " + setup.cluster.name + ": tp " +
                        std::to_string(loaded.result.plan.key.tp) + ", dp " + std::to_string(loaded.result.plan.key.dp) +
                        ", pp " + std::to_string(loaded.result.plan.key.pp) +
                        context_expert_text(loaded.result.plan.key, ", ") + ", micro-batch " +
                        std::to_string(loaded.result.plan.key.mbs);
    write_file_atomically(options.timeline,
                          pipeline_timeline_svg(events, stage_labels(setup.model, setup.cluster, loaded.result), title,
                                                step_breakdown_sum_text(loaded.result.estimate.breakdown)));
  }
  std::cout << plan_view_text(loaded.file, setup.model, setup.cluster, loaded.result)
            << estimate_change(loaded.file, loaded.result);
  if (!options.timeline.empty()) {
    std::cout << "wrote " << options.timeline << "\n";
    if (loaded.result.plan.key.virtual_stages > 1)
      std::cout << "note: the timeline draws plain 1F1B; the estimate prices the interleaved schedule's "
                << loaded.result.plan.key.virtual_stages << " virtual stages a rank\n";
  }
}

}  // namespace

void add_plan_command(CLI::App& app) {
  CLI::App* plan = app.add_subcommand("plan", "saved plans (search --save-plan): show them");
  plan->require_subcommand(1);
  auto options = std::make_shared<PlanShowOptions>();
  CLI::App* show_command = plan->add_subcommand("show", "a plan in words: layout, stages, compute, memory, estimate");
  show_command->add_option("plan", options->plan, "plan file")->required();
  show_command->add_option("--timeline", options->timeline,
                           "also draw the 1F1B timeline as SVG: a row per stage, forward and backward boxes of each "
                           "micro-batch, sends");
  show_command->add_option("--cluster", options->cluster, "show it on another cluster preset or file");
  show_command->callback([options] { show(*options); });
}

}  // namespace fasop
