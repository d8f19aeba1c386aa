#include "report/plan_table.h"

#include <cstdio>
#include <sstream>

#include "costmodel/run_length.h"
#include "report/fasop_csv.h"
#include "report/json_text.h"
#include "report/memory_report.h"
#include "report/number_format.h"
#include "report/step_breakdown_text.h"
#include "search/cluster_shapes.h"
#include "specs/plan_degrees.h"

namespace fasop {
namespace {

/// A number with up to 3 decimals, trailing zeros dropped.
std::string fixed_trimmed(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.3f", value);
  std::string text = buffer;
  while (text.back() == '0') text.pop_back();
  if (text.back() == '.') text.pop_back();
  return text;
}

/// " rc mla_up_proj,moe_act" where selective recomputation names modules other than Megatron-
/// Core's default (attention's core); "" otherwise.
std::string recompute_modules_suffix(const PlanKey& k) {
  return k.names_recompute_modules() ? " rc " + recompute_modules_text(k.recompute_modules) : "";
}

/// " stage tp [..]", " uneven dp" and " speed split" where the plan has them (Sailor's and
/// Metis's layouts); else nothing, so that other plans read as before.
std::string sailor_layout_text(const PlanKey& k) {
  return (k.stage_tp.empty() ? "" : " stage tp " + partition_text(k.stage_tp)) + (k.uneven_dp ? " uneven dp" : "") +
         (k.speed_split ? " speed split" : "");
}

}  // namespace

std::string context_expert_json(const PlanKey& key) {
  std::string text;
  for (const auto& [name, value] : context_expert_degrees(key)) text += ", \"" + name + "\": " + std::to_string(value);
  if (key.moe_dispatcher != MoeDispatcher::kAlltoall)
    text += std::string(", \"moe_token_dispatcher\": \"") + moe_dispatcher_name(key.moe_dispatcher) + "\"";
  return text;
}

/// The widest a row of best_plans_table gets before its partition wraps (FASOP's 16-stage rows fit).
constexpr size_t kTableColumns = 160;

std::string best_plans_table(const ClusterSpec& cluster, const std::vector<CandidateResult>& results,
                             size_t count) {
  std::ostringstream out;
  char line[512];
  // The analytic policy's plans show the worst GPU's peak against its memory.
  bool memory = false;
  for (size_t i = 0; i < results.size() && i < count; ++i) memory = memory || results[i].estimate.memory.capacity_gib > 0;
  std::snprintf(line, sizeof line, "%4s %10s %4s %3s %3s %3s %4s %4s  %-12s %5s%s %12s  %s\n", "rank", "s/step",
                "mbs", "tp", "dp", "pp", "zero", "rc", "$/step", "OOM", memory ? "   GiB/GPU" : "", "train $",
                "placement / partition");
  out << line;
  for (size_t i = 0; i < results.size() && i < count; ++i) {
    const CandidateResult& r = results[i];
    const PlanEstimate& e = r.estimate;
    const char* oom = e.memory.is_oom ? (e.memory.is_zero_oom ? "yes" : "zero") : "no";
    char gib[32] = "";
    if (memory) std::snprintf(gib, sizeof gib, " %9s", memory_fraction_text(e.memory).c_str());
    std::snprintf(line, sizeof line, "%4zu %10.6f %4d %3d %3d %3d %4d %4s  %-12s %5s%s %12.0f  ", i + 1,
                  e.step_time_s, r.plan.key.mbs, r.plan.key.tp, r.plan.key.dp, r.plan.key.pp, r.plan.key.zero_stage,
                  r.plan.key.recompute ? "full" : r.plan.key.selective_recompute ? "sel" : "-",
                  fixed(e.price_per_step_usd, 6).c_str(), oom, gib, e.train_cost_usd);
    const std::string columns = line, placement = placement_runs(cluster, r.plan.key.node_order);
    const std::string layout = partition_text(r.plan.partition) +
                               (r.plan.key.stage_dp.empty() ? "" : " stage dp " + partition_text(r.plan.key.stage_dp)) +
                               sailor_layout_text(r.plan.key) + context_expert_text(r.plan.key, " ") +
                               (r.plan.key.virtual_stages > 1 ? " v " + std::to_string(r.plan.key.virtual_stages) : "") +
                               recompute_modules_suffix(r.plan.key);
    // A row past kTableColumns goes on below its placement, under it.
    if (columns.size() + placement.size() + 1 + layout.size() > kTableColumns)
      out << columns << placement << "\n" << std::string(columns.size(), ' ') << layout << "\n";
    else
      out << columns << placement << " " << layout << "\n";
  }
  out << "OOM: no = fits; zero = fits only with ZeRO-3 sharding; yes = does not fit. zero: ZeRO stage; rc: "
         "activation recomputation.\n";
  if (memory)
    out << "GiB/GPU: the predicted peak of the GPU left the least room, against its memory; a plan fits with the "
           "headroom kept free. Plans within 1% of each other's step time rank by the room they leave.\n";
  return out.str();
}

std::string plan_summary(const ClusterSpec& inventory, const CandidateResult& r) {
  const PlanKey& k = r.plan.key;
  const PlanEstimate& e = r.estimate;
  return fixed(e.step_time_s, 6) + " s/step, $" + fixed(e.train_cost_usd, 0) + " and " +
         duration_text(e.train_time_s) + " for the run" +
         (e.memory.is_oom ? " (out of memory)" : "") + ": " +
         shape_label(inventory, counts_of(inventory, k.node_order)) + ", tp " + std::to_string(k.tp) + " dp " +
         std::to_string(k.dp) + " pp " + std::to_string(k.pp) + context_expert_text(k, " ") + " mbs " +
         std::to_string(k.mbs) +
         (k.zero_stage ? " ZeRO-" + std::to_string(k.zero_stage) : "") + (k.recompute ? " recompute" : "") +
         (k.selective_recompute && !k.recompute ? " selective recompute" : "") + recompute_modules_suffix(k) +
         (k.sequence_parallel ? " SP" : "") +
         (k.virtual_stages > 1 ? " v" + std::to_string(k.virtual_stages) : "") +
         (k.stage_dp.empty() ? "" : " stage dp " + partition_text(k.stage_dp)) + sailor_layout_text(k) +
         ", placement " +
         placement_runs(inventory, k.node_order) + ", partition " + partition_text(r.plan.partition);
}

std::string format_iterations(double iterations) {
  if (iterations >= 1e6) return fixed_trimmed(iterations / 1e6) + "M";
  if (iterations >= 1e3) return fixed_trimmed(iterations / 1e3) + "k";
  return fixed_trimmed(iterations);
}

std::string estimate_text(const ModelSpec& model, const ClusterSpec& cluster, const CandidateResult& r) {
  const PlanEstimate& e = r.estimate;
  const PlanKey& k = r.plan.key;
  std::ostringstream out;
  out << "model " << model.name << " on cluster " << cluster.name << ": mbs " << k.mbs << ", tp " << k.tp
      << ", dp " << k.dp << ", pp " << k.pp << context_expert_text(k, ", ") << sailor_layout_text(k) << "\n"
      << "placement            " << placement_text(cluster, k.node_order) << "\n"
      << "partition            " << partition_text(r.plan.partition) << "\n"
      << "step time            " << fixed(e.step_time_s, 6) << " s\n"
      << "  pipeline (1F1B)    " << fixed(e.pipeline_time_s, 6) << " s\n"
      << "  DP all-reduce      " << fixed(e.dp_allreduce_s, 6) << " s\n"
      << "  embedding sync     " << fixed(e.embedding_allreduce_s, 6) << " s\n"
      << "  as terms           " << step_breakdown_text(e.breakdown, 4, std::string(21, ' '))
      << "price per step       $" << fixed(e.price_per_step_usd, 6) << "\n";
  // Across zones, the price's two parts: the nodes' time and the egress between zones.
  if (cluster.multi_zone())
    out << "  nodes' time        $" << fixed(e.node_price_per_step_usd, 6) << "\n"
        << "  egress (zones)     $" << fixed(e.egress_usd_per_step, 6) << "\n";
  out << "training cost        $" << fixed(e.train_cost_usd, 2) << "\n"
      << "training time        " << duration_text(e.train_time_s) << " on these GPUs\n"
      << "peak memory          " << fixed(e.memory.oom_gpumem_gib, 3) << " GiB"
      << (e.memory.is_oom ? " (out of memory)" : "") << "; with ZeRO "
      << fixed(e.memory.zero_oom_gpumem_gib, 3) << " GiB" << (e.memory.is_zero_oom ? " (out of memory)" : "")
      << "\n" << memory_breakdown_text(e)
      << "\nstage  units    gpu    compute_s   end_s       dp_allreduce_s  mem_gib  zero_gib  limit_gib\n";
  char line[256];
  for (size_t s = 0; s < e.stages.size(); ++s) {
    const StageReport& st = e.stages[s];
    std::snprintf(line, sizeof line, "%5zu  %2d-%-4d  %-5s  %-10.6f  %-10.6f  %-14.6f  %7.3f  %8.3f  %9.2f\n", s,
                  st.first_unit, st.first_unit + st.num_units - 1, cluster.node_types[st.node_type].gpu.c_str(),
                  st.compute_s, st.end_s, st.dp_allreduce_s, st.memory.gib, st.memory.zero_gib,
                  st.memory.limit_gib);
    out << line;
  }
  return out.str();
}

}  // namespace fasop
