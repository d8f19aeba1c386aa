#include "cli/planner_options.h"

#include <unistd.h>

#include "specs/spec_error.h"
#include "specs/spec_store.h"

namespace fasop {

void PlannerOptions::add_to(CLI::App& command) {
  auto* model_option = command.add_option("--model,--type", model,
                                          "model preset (gpt2xl, bert, t5; FASOP's gpt2XL, T5) or YAML file");
  model_option->required();
  command.add_option("--cluster", cluster,
                     "cluster preset (see clusters/) or YAML file; default: FASOP's cluster for the model");
  command.add_flag("--heterogeneous", heterogeneous,
                   "use FASOP's heterogeneous cluster (1 A100 node, the rest A10) and name the report so");
  command.add_option("--profile-dir", profile_dir,
                     "directory of profiles <model>_<gpu>.yaml that override the shipped ones");
  command.add_option("--iterations", iterations, "training steps priced as the whole run (default 12.5M)")
      ->check(CLI::PositiveNumber);
  command.add_flag("--quiet,-q", quiet, "no progress on stderr");
}

bool show_progress(const PlannerOptions& options) { return !options.quiet && ::isatty(STDERR_FILENO); }

std::unique_ptr<PlannerSetup> PlannerSetup::load_specs(const PlannerOptions& options) {
  auto setup = std::make_unique<PlannerSetup>();
  DiskSource disk;
  SpecStore store(disk, embedded_presets());
  setup->model = store.load_model(options.model);
  std::string cluster = options.cluster;
  if (cluster.empty()) {
    const char* kind = options.pareto ? "pareto" : options.heterogeneous ? "heterogeneous" : "homogeneous";
    auto preset = setup->model.default_clusters.find(kind);
    if (preset == setup->model.default_clusters.end())
      throw SpecError(setup->model.source + ": field 'default_clusters." + kind +
                      "': missing; pass --cluster");
    cluster = preset->second;
  }
  setup->cluster = store.load_cluster(cluster);
  setup->input.model = &setup->model;
  setup->input.cluster = &setup->cluster;
  setup->input.policy = &setup->policy;
  setup->input.iterations = options.iterations;
  return setup;
}

void PlannerSetup::load_profiles(const PlannerOptions& options, const std::vector<int>& counts) {
  DiskSource disk;
  SpecStore store(disk, embedded_presets());
  // Profiles of node types without nodes are never consulted, and need not exist.
  profile_storage.clear();
  profile_storage.reserve(cluster.node_types.size());
  input.profiles.assign(cluster.node_types.size(), nullptr);
  for (size_t type = 0; type < cluster.node_types.size(); ++type) {
    if (counts[type] == 0) continue;
    profile_storage.push_back(store.load_profile(model, cluster.node_types[type].gpu, options.profile_dir));
    input.profiles[type] = &profile_storage.back();
  }
}

std::unique_ptr<PlannerSetup> PlannerSetup::load(const PlannerOptions& options) {
  std::unique_ptr<PlannerSetup> setup = load_specs(options);
  std::vector<int> counts(setup->cluster.node_types.size());
  for (size_t type = 0; type < counts.size(); ++type) counts[type] = setup->cluster.node_count(int(type));
  setup->load_profiles(options, counts);
  return setup;
}

}  // namespace fasop
