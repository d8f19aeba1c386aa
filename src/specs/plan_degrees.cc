#include "specs/plan_degrees.h"

#include "specs/spec_loader.h"

namespace fasop {

const std::vector<PlanDegree>& plan_degrees() {
  static const std::vector<PlanDegree> degrees{
      {.name = "cp",
       .value = &PlanKey::cp,
       .most = kMaxNodes,
       .comment = "context parallelism: each sequence over cp GPUs",
       .help = "context-parallel degree: each sequence split over cp GPUs (ring attention; analytic profiles)"},
      {.name = "ep",
       .value = &PlanKey::ep,
       .most = kMaxExperts,
       .comment = "expert parallelism: the experts over ep GPUs",
       .help = "expert-parallel degree: a MoE model's experts split over ep GPUs of a stage's tp x cp x dp"},
      {.name = "etp",
       .value = &PlanKey::etp,
       .most = kMaxGpusPerNode,
       .comment = "expert tensor parallelism",
       .help = "expert tensor-parallel degree: each expert split over etp GPUs"},
  };
  return degrees;
}

std::vector<std::string> plan_degree_names() {
  std::vector<std::string> names;
  for (const PlanDegree& degree : plan_degrees()) names.emplace_back(degree.name);
  return names;
}

void read_plan_degrees(const Field& block, PlanKey& key) {
  for (const PlanDegree& degree : plan_degrees())
    if (const Field field = block.child(degree.name); field.present()) key.*degree.value = field.positive_int(degree.most);
}

std::string plan_degrees_yaml(const PlanKey& key) {
  std::string out;
  for (const PlanDegree& degree : plan_degrees())
    if (key.*degree.value > 1)
      out += std::string(degree.name) + ": " + std::to_string(key.*degree.value) + "    # " + degree.comment + "\n";
  return out;
}

std::vector<std::pair<std::string, int>> context_expert_degrees(const PlanKey& key) {
  std::vector<std::pair<std::string, int>> degrees;
  for (const PlanDegree& degree : plan_degrees())
    if (key.*degree.value > 1) degrees.emplace_back(degree.name, key.*degree.value);
  return degrees;
}

std::string context_expert_text(const PlanKey& key, const std::string& separator) {
  std::string text;
  for (const auto& [name, value] : context_expert_degrees(key)) text += separator + name + " " + std::to_string(value);
  if (!key.precision.empty()) text += separator + key.precision;
  if (key.moe_dispatcher != MoeDispatcher::kAlltoall) text += separator + moe_dispatcher_name(key.moe_dispatcher);
  return text;
}

}  // namespace fasop
