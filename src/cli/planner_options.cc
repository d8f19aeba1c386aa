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

std::unique_ptr<PlannerSetup> PlannerSetup::load(const PlannerOptions& options) {
  auto setup = std::make_unique<PlannerSetup>();
  DiskSource disk;
  SpecStore store(disk, embedded_presets());
  setup->model = store.load_model(options.model);
  std::string cluster = options.cluster;
  if (cluster.empty()) {
    const char* kind = options.heterogeneous ? "heterogeneous" : "homogeneous";
    auto preset = setup->model.default_clusters.find(kind);
    if (preset == setup->model.default_clusters.end())
      throw SpecError(setup->model.source + ": field 'default_clusters." + kind +
                      "': missing; pass --cluster");
    cluster = preset->second;
  }
  setup->cluster = store.load_cluster(cluster);
  // One profile per node type that has nodes; the rest are never consulted.
  const ClusterSpec& c = setup->cluster;
  setup->profile_storage.reserve(c.node_types.size());
  setup->input.profiles.assign(c.node_types.size(), nullptr);
  for (size_t type = 0; type < c.node_types.size(); ++type) {
    if (c.node_count(int(type)) == 0) continue;
    setup->profile_storage.push_back(store.load_profile(setup->model, c.node_types[type].gpu, options.profile_dir));
    setup->input.profiles[type] = &setup->profile_storage.back();
  }
  setup->input.model = &setup->model;
  setup->input.cluster = &setup->cluster;
  setup->input.policy = &setup->policy;
  setup->input.iterations = options.iterations;
  return setup;
}

}  // namespace fasop
