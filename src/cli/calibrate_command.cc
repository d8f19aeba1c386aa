#include "cli/calibrate_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>

#include "profiles/analytic_profile.h"
#include "specs/preset_catalog.h"
#include "specs/spec_error.h"
#include "specs/spec_loader.h"
#include "specs/spec_store.h"

namespace fasop {
namespace {

struct CalibrateOptions {
  std::string model, cluster, node_type, profile;
};

void run(const CalibrateOptions& options) {
  DiskSource disk;
  SpecStore store(disk, embedded_presets());
  ModelSpec model = store.load_model(options.model);
  ClusterSpec cluster = store.load_cluster(options.cluster);
  std::optional<std::string> text = disk.read(options.profile);
  if (!text) throw SpecError("--profile: cannot read '" + options.profile + "'");
  ProfileSpec measured = parse_profile(*text, options.profile);
  std::string wanted = options.node_type.empty() ? measured.gpu : options.node_type;
  const NodeType* node = nullptr;
  for (const NodeType& t : cluster.node_types)
    if (t.name == wanted || t.gpu == wanted) node = &t;
  if (!node)
    throw SpecError("--node-type: cluster '" + cluster.name + "' has no node type or GPU '" + wanted +
                    "'; name one of its node types");
  if (!node->has_gpu_data())
    throw SpecError(cluster.source + ": node type '" + node->name + "': GPU '" + node->gpu +
                    "' has no shipped data (configs/gpus/) and the file gives no peak_tflops and "
                    "memory_bandwidth_bytes_per_s: nothing to calibrate");
  double efficiency = calibrated_efficiency(model, *node, measured);
  // How well the analytic times match each measured forward time, at a GEMM peak share.
  const double given = node->gpu_data.efficiency(model.dtype).gemm_peak_share;
  auto ratios = [&](double at) {
    NodeType trial = *node;
    for (auto& [name, e] : trial.gpu_data.precisions) e.gemm_peak_share = at;
    std::vector<double> out;
    for (const LayerUnit& unit : model.units) {
      auto layer = measured.forward_s.find(unit.type);
      if (layer == measured.forward_s.end() || &unit != &*std::find_if(model.units.begin(), model.units.end(),
                                                                         [&](const LayerUnit& u) { return u.type == unit.type; }))
        continue;
      for (const auto& [tp, points] : layer->second)
        for (const auto& [mbs, seconds] : points)
          out.push_back(layer_time(model, unit, tp, mbs, trial).forward.seconds / seconds);
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  std::vector<double> before = ratios(given), after = ratios(efficiency);
  if (after.empty()) throw SpecError(options.profile + ": no layer type of model '" + model.name + "' is measured");
  std::printf("%s on %s (node type %s): compute_efficiency %.3f (GEMM peak share; the GPU data says %.3f)\n", model.name.c_str(),
              node->gpu.c_str(), node->name.c_str(), efficiency, given);
  std::printf("analytic / measured forward over %zu points: at %.3f median %.2f (%.2f to %.2f); at %.3f median %.2f "
              "(%.2f to %.2f)\n",
              after.size(), given, before[before.size() / 2], before.front(), before.back(), efficiency,
              after[after.size() / 2], after.front(), after.back());
  std::printf("to use it: set `compute_efficiency: %.3f` on node type %s in %s\n", efficiency, node->name.c_str(),
              file_to_edit(embedded_presets(), cluster.source).c_str());
}

}  // namespace

void add_calibrate_command(CLI::App& app) {
  auto options = std::make_shared<CalibrateOptions>();
  CLI::App* command = app.add_subcommand(
      "calibrate", "fit a node type's compute efficiency to a measured profile (for analytic profiles)");
  command->add_option("--model", options->model, "model preset or YAML file")->required();
  command->add_option("--cluster", options->cluster, "cluster preset or YAML file holding the node type")->required();
  command->add_option("--profile", options->profile, "measured profile YAML (configs/profiles format)")->required();
  command->add_option("--node-type", options->node_type, "node type or GPU name (default: the profile's GPU)");
  command->callback([options] { run(*options); });
}

}  // namespace fasop
