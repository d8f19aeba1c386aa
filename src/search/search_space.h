#pragma once
#include <functional>
#include <string>
#include <vector>

#include "specs/cluster_spec.h"
#include "specs/model_spec.h"
#include "specs/moe_dispatcher.h"
#include "specs/plan.h"

namespace fasop {

/// The divisors of n, ascending.
std::vector<int> divisors(int n);

/// ep 1 and the powers of two dividing `experts`, up to 64 (an expert group beyond 8 nodes of 8
/// pays all-to-alls across the network that no published recipe takes): the degrees a search of
/// a model with experts tries by default.
std::vector<int> default_expert_degrees(int experts);

/// How the search orders a cluster's nodes into ranks.
enum class PlacementKind {
  kCyclic,      ///< FASOP: every cyclic rotation of the node list
  kTypeBlocks,  ///< every order of the node types, each type's nodes together: stages are
                ///< contiguous ranks, so only which types follow which matters (k! orders)
};

/// Degrees the user fixed (`search --fix tp=2,pp=4`, as ATorch's semi-automatic mode): the
/// search tries only layouts that have them. 0: free.
struct FixedDims {
  int mbs = 0, tp = 0, dp = 0, pp = 0, cp = 0, ep = 0;
  bool matches(const PlanKey& key) const {
    return (mbs == 0 || key.mbs == mbs) && (tp == 0 || key.tp == tp) && (dp == 0 || key.dp == dp) &&
           (pp == 0 || key.pp == pp) && (cp == 0 || key.cp == cp) && (ep == 0 || key.ep == ep);
  }
  bool any() const { return mbs || tp || dp || pp || cp || ep; }
};

/// A degree `search --fix NAME=N` sets: its name and its FixedDims field.
struct FixedDimField {
  const char* name;
  int FixedDims::*value;
};
/// Every such degree: mbs, tp, dp, pp, cp and ep.
const std::vector<FixedDimField>& fixed_dim_fields();

/// Bounds and dimensions of the layouts the search tries. The defaults are FASOP's space.
struct SearchSpaceOptions {
  int max_tp = 4;  ///< FASOP: tp divides min(GPUs per node, 4); 0: up to the GPUs in a node
  std::vector<int> zero_stages = {0};
  std::vector<RecomputeMode> recompute = {RecomputeMode::kNone};
  /// What selective recomputation recomputes where `recompute` tries it (--recompute-modules).
  RecomputeModules recompute_modules = kDefaultRecomputeModules;
  std::vector<bool> sequence_parallel = {false};  ///< true is tried only where tp > 1
  std::vector<int> virtual_stages = {1};          ///< v > 1 only where the interleaved schedule fits
  /// Context-parallel degrees (PlanKey::cp): cp > 1 only where 2 x cp splits the sequence, the
  /// attention is fused and the layout is uniform.
  std::vector<int> cp = {1};
  /// Expert-parallel degrees (PlanKey::ep) of a model with experts: ep > 1 only where it divides
  /// the experts and a stage's tp x cp x dp GPUs.
  std::vector<int> ep = {1};
  /// Training precisions (PlanKey::precision; "": the model's own dtype).
  std::vector<std::string> precisions = {""};
  PlacementKind placements = PlacementKind::kCyclic;
  /// Also try a data-parallel degree per node type (Metis-style): with type-block placements,
  /// each type's GPUs form whole stages of tp x that type's dp.
  bool per_stage_dp = false;
  /// Also try a tensor-parallel degree per node type (Sailor-style, type-block placements):
  /// each type's GPUs form whole stages of its tp x its dp (one dp, or with per_stage_dp a dp
  /// per type too).
  bool per_stage_tp = false;
  /// Also try dp degrees (and micro-batch sizes) that do not divide the global batch
  /// (Sailor-style; PlanKey::uneven_dp): mbs at most the largest replica's share.
  bool uneven_dp = false;
  /// Also try, for each layout where some stage's replicas sit on several node types, its
  /// speed-split variant (Metis-style; PlanKey::speed_split).
  bool speed_split = false;
  /// Megatron-Core's EP all-to-all overlap (LayerOptions::overlap_ep_comm): layouts with ep > 1
  /// where Megatron cannot run it (parallel_rules.h ep_overlap_runs) are left out.
  bool ep_comm_overlap = false;
  /// MoE token dispatchers to try (PlanKey::moe_dispatcher) where ep > 1: a layout one cannot
  /// run (parallel_dims_checks.h moe_dispatcher_fault) is left out for it.
  std::vector<MoeDispatcher> moe_dispatchers = {MoeDispatcher::kAlltoall};
  FixedDims fixed;  ///< only layouts with these degrees
  /// tps left out, on any stage: degrees a measured profile has no times for (profile_gaps.h).
  std::vector<int> skipped_tp;

  /// Everything beyond FASOP: tp up to a node, ZeRO 0-3, recomputation off and on, type blocks.
  static SearchSpaceOptions beyond_fasop();
};

/// The node orders FASOP tries: the distinct cyclic rotations of the cluster's node list.
std::vector<std::vector<int>> cyclic_placements(const ClusterSpec& cluster);

/// Every order of the cluster's node types, each type's nodes kept together (in the order
/// the types first appear, then its permutations).
std::vector<std::vector<int>> type_block_placements(const ClusterSpec& cluster);

/// The largest tp the space tries on `cluster`'s largest nodes: their GPUs, or fewer where
/// max_tp caps it (FASOP's 4).
int largest_tp(const ClusterSpec& cluster, const SearchSpaceOptions& options);

/// An upper bound on the GPUs a layout of `model` uses: every layout uses all of a cluster's
/// GPUs, tp x dp x pp of them, with tp at most largest_tp, dp dividing the global batch and pp at
/// most the transformer layers (times the largest cp). A cluster (or a pareto shape) with more
/// GPUs has no layout.
long long most_layout_gpus(const ModelSpec& model, const ClusterSpec& cluster, const SearchSpaceOptions& options);

/// A test on a layout's degrees: false drops it from the enumeration.
using LayoutFilter = std::function<bool(const PlanKey&)>;

/// Every layout FASOP tries, in FASOP's enumeration order: for each placement, for each
/// micro-batch size (ascending), each tp (ascending) and dp (ascending) such that tp divides
/// min(GPUs per node, max_tp), dp divides the GPUs / tp and the global batch, pp = GPUs/(tp*dp)
/// is at most the number of transformer layers, and mbs divides the global batch / dp; then
/// each ZeRO stage and recomputation setting of `options`. Beyond FASOP's space (max_tp 0), tp
/// must also divide the attention heads and key/value heads. With per_stage_dp, after each
/// placement's uniform layouts come those with a dp per node type (not all equal); with
/// per_stage_tp then those with a tp per node type (not all equal). With uneven_dp, dp and mbs
/// need not divide the batch: dp may be any of the degrees above up to the batch, mbs any divisor
/// of the batch up to the largest replica's share (ceil(batch / dp)). With speed_split, each
/// layout where some stage mixes node types (speed_split_applies) is followed by its speed-split
/// variant. `keep`, where given, drops the uniform layouts (one tp, dp and mbs for every stage)
/// it returns false for: it sees each one once, without its placement (node_order empty), so it
/// must not depend on the placement.
std::vector<PlanKey> enumerate_plan_keys(const ModelSpec& model, const ClusterSpec& cluster,
                                         const SearchSpaceOptions& options = {}, const LayoutFilter& keep = {});

}  // namespace fasop
