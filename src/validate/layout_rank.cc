#include "validate/layout_rank.h"

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <sstream>

#include "costmodel/analytic_policy.h"
#include "profiles/analytic_profile.h"
#include "search/search_space.h"
#include "specs/plan_degrees.h"

namespace fasop {
namespace {

/// The expert-parallel degrees a search of the case tries: the planner's default ones and the
/// case's own.
std::vector<int> expert_degrees(const ValidationCase& c) {
  std::vector<int> degrees = default_expert_degrees(c.model.moe.experts);
  if (std::find(degrees.begin(), degrees.end(), c.plan.key.ep) == degrees.end()) degrees.push_back(c.plan.key.ep);
  std::sort(degrees.begin(), degrees.end());
  return degrees;
}

/// The space of Megatron-Core layouts with the case's own settings.
SearchSpaceOptions case_space(const ValidationCase& c) {
  const ValidationPlan& plan = c.plan;
  SearchSpaceOptions space = SearchSpaceOptions::beyond_fasop();
  space.placements = PlacementKind::kCyclic;  // one node type
  space.zero_stages = {plan.fsdp ? 3 : plan.distributed_optimizer ? 1 : 0};
  space.recompute = {plan.recompute};
  space.recompute_modules = plan.recompute_modules;
  space.sequence_parallel = {false, true};  // with experts, tp > 1 takes the sp variant alone
  space.virtual_stages = {1};
  if (plan.virtual_stages > 1) space.virtual_stages.push_back(plan.virtual_stages);
  if (c.model.moe.enabled()) space.ep = expert_degrees(c);
  space.moe_dispatchers = {MoeDispatcher::kAlltoall};
  if (plan.key.moe_dispatcher != MoeDispatcher::kAlltoall) space.moe_dispatchers.push_back(plan.key.moe_dispatcher);
  space.ep_comm_overlap = plan.execution.overlap_moe_expert_parallel_comm;
  return space;
}

}  // namespace

LayoutRank rank_published_layout(const ValidationCase& c, size_t top) {
  LayoutRank rank;
  rank.published = predict_case(c);
  const NodeType& node = c.node_type;
  const ClusterSpec cluster = case_cluster(c);
  AnalyticPolicy policy(case_analytic_options(c));
  SearchInput input;
  input.model = &c.model;
  input.cluster = &cluster;
  input.policy = &policy;
  input.iterations = 1;
  input.threads = 1;
  input.memory_aware = true;
  input.space = case_space(c);
  // A profile per (ep, dispatcher), as the planner loads them; ep 1 alltoall is the plain one.
  std::deque<ProfileSpec> storage;
  LayerOptions plain;
  plain.execution = c.plan.execution;
  plain = with_training_stack(plain, c.plan.memory);
  auto profile = [&](const LayerOptions& layers) {
    storage.push_back(analytic_profile(c.model, node, divisors(node.gpus_per_node), divisors(c.plan.global_batch), layers));
    return NodeTypeProfiles{&storage.back()};
  };
  input.profiles = profile(plain);
  for (int ep : input.space.ep)
    for (MoeDispatcher dispatcher : input.space.moe_dispatchers) {
      if (ep == 1) continue;
      PlanKey split{.ep = ep};
      split.moe_dispatcher = dispatcher;
      input.parallel_profiles[{"", 1, ep, 1, dispatcher}] = profile(split_as(plain, split));
    }
  std::vector<CandidateResult> results = run_search(input);
  rank.candidates = results.size();
  const PlanKey& want = c.plan.key;
  auto published = [&](const PlanKey& k) {
    return k.tp == want.tp && k.pp == want.pp && k.dp == want.dp && k.ep == want.ep && k.mbs == rank.published.mbs &&
           k.virtual_stages == c.plan.virtual_stages && k.moe_dispatcher == want.moe_dispatcher;
  };
  auto found = std::find_if(results.begin(), results.end(), [&](const CandidateResult& r) { return published(r.plan.key); });
  rank.in_space = found != results.end();
  rank.searched_s = rank.in_space ? found->estimate.step_time_s : rank.published.predicted_step_s;
  const double published_s = rank.searched_s;
  rank.rank = 1 + int(std::count_if(results.begin(), results.end(), [&](const CandidateResult& r) {
                return !r.estimate.memory.is_oom && r.estimate.step_time_s < published_s;
              }));
  rank.fastest_s = published_s;
  for (const CandidateResult& r : results) {
    if (r.estimate.memory.is_oom) continue;
    rank.fastest_s = std::min(rank.fastest_s, r.estimate.step_time_s);
    if (rank.top.size() < top) rank.top.push_back(r);
  }
  return rank;
}

std::string layout_changes(const PlanKey& published, const PlanKey& faster) {
  std::string text;
  auto add = [&](const char* name, int mine, int theirs) {
    if (mine != theirs)
      text += (text.empty() ? "" : ", ") + std::string(name) + " " + std::to_string(theirs) + " (published " +
              std::to_string(mine) + ")";
  };
  add("tp", published.tp, faster.tp);
  add("pp", published.pp, faster.pp);
  add("ep", published.ep, faster.ep);
  add("mbs", published.mbs, faster.mbs);
  add("v", published.virtual_stages, faster.virtual_stages);
  if (published.moe_dispatcher != faster.moe_dispatcher)
    text += (text.empty() ? "" : ", ") + std::string(moe_dispatcher_name(faster.moe_dispatcher)) + " (published " +
            moe_dispatcher_name(published.moe_dispatcher) + ")";
  return text;
}

std::string layout_rank_text(const LayoutRank& rank) {
  const ValidationCase& c = rank.published.c;
  const PlanKey& k = c.plan.key;
  std::ostringstream out;
  char number[160];
  auto layout = [](const PlanKey& key) {
    return "tp " + std::to_string(key.tp) + " pp " + std::to_string(key.pp) + " dp " + std::to_string(key.dp) +
           context_expert_text(key, " ") + " mbs " + std::to_string(key.mbs) +
           (key.virtual_stages > 1 ? " v" + std::to_string(key.virtual_stages) : "");
  };
  PlanKey published = k;
  published.mbs = rank.published.mbs;
  published.virtual_stages = c.plan.virtual_stages;
  std::snprintf(number, sizeof number, "%.2f s measured, %.2f s priced (%.2f s %s)", rank.published.measured_step_s,
                rank.published.predicted_step_s, rank.searched_s,
                rank.in_space ? "with the search's partition" : "not in the search's space");
  out << c.name << ": published " << layout(published) << ", " << number << ": rank " << rank.rank << " of "
      << rank.candidates << "\n";
  for (size_t i = 0; i < rank.top.size(); ++i) {
    std::snprintf(number, sizeof number, "%.2f s", rank.top[i].estimate.step_time_s);
    out << "  " << i + 1 << ". " << number << "  " << layout(rank.top[i].plan.key) << "\n";
  }
  if (rank.rank > int(rank.top.size()) && !rank.top.empty()) {
    std::snprintf(number, sizeof number, "%.1f%%", (rank.searched_s / rank.fastest_s - 1) * 100);
    out << "  the fastest is " << number << " faster by " << layout_changes(published, rank.top.front().plan.key) << "\n";
  }
  return out.str();
}

}  // namespace fasop
