#pragma once
#include <optional>
#include <vector>

#include "costmodel/memory_model.h"
#include "specs/batch_split.h"
#include "specs/cluster_spec.h"
#include "specs/model_spec.h"
#include "specs/plan.h"
#include "specs/profile_spec.h"
#include "specs/training_stack.h"

namespace fasop {

/// Profiles of one model, one per node type of the cluster (indexed like node_types).
using NodeTypeProfiles = std::vector<const ProfileSpec*>;

/// Everything a plan's cost depends on besides its layer partition, computed once per
/// candidate layout so that the partitioner can try many partitions cheaply.
struct PlanContext {
  const ModelSpec* model = nullptr;
  const ClusterSpec* cluster = nullptr;
  PlanKey key;
  /// With selective recomputation, the share of a forward pass its backward repeats beyond
  /// attention's core (recomputed_gemm_share, or torchtitan's op_selective_gemm_share; once per
  /// layout: it sums the model's layers).
  double recomputed_gemm_share = 0;
  /// Selective recomputation repeats attention's core (Megatron's core_attn; torchtitan's per-op
  /// checkpointing saves the attention's output).
  bool recomputes_core_attention = false;
  /// The training stack and its settings the policy prices (Megatron's where it has none).
  MemorySettings stack_settings;
  int num_microbatches = 0;  ///< global batch / (dp * mbs), the ceiling with uneven dp (batch_split.h)
  /// Forward+backward seconds of one micro-batch through each unit, per node type.
  std::vector<std::vector<double>> unit_compute_s;
  /// Of unit_compute_s, the communication inside the units (tensor, context and expert
  /// parallel; exposed, or with overlap what it costs), per node type; known for analytic
  /// profiles only (ProfileSpec::layer_comm_s), else 0.
  /// Empty in contexts made by hand: no unit's communication is known.
  std::vector<std::vector<double>> unit_layer_comm_s;
  /// Per node type, per unit: the seconds selective recomputation's element-wise modules
  /// (layernorm, moe_act) add to the unit's backward pass, timed from the GPU's data
  /// (recomputed_elementwise.h); empty where the plan recomputes none (or a type has no GPU data).
  std::vector<std::vector<double>> unit_recompute_s;
  /// Node type whose speed each stage runs at.
  std::vector<int> stage_node_type;
  /// Seconds to send one micro-batch's activations across boundary b (stage b -> b+1).
  std::vector<double> boundary_send_s;
  /// The stages' memory as the policy models it, where partitions must fit (CostPolicy::memory_model).
  std::optional<MemoryModel> partition_memory;

  /// PlanKey::speed_split (speed_split_stage.h): per stage whose replicas sit on several node
  /// types, each replica's node type in dp order; empty for a stage on one type (it runs at
  /// stage_node_type's pace) and for every stage without the split.
  std::vector<std::vector<int>> split_replica_types;
  /// Per node type that such a stage uses, its units' times at every sample count n from 0 to
  /// the pipeline micro-batch (mbs x dp), as prefix sums: [type][n][u] is units [0, u) on n
  /// samples (forward + backward; and the tensor-parallel communication in it).
  std::vector<std::vector<std::vector<double>>> split_compute_prefix_s, split_layer_comm_prefix_s;
  /// Per split stage, per unit: a floor under the unit's time in any split (the partitioners' floors).
  std::vector<std::vector<double>> split_floor_unit_s;
  /// Per split stage: the samples of its busiest replica in its split of the whole model's units
  /// (the memory model's activations).
  std::vector<int> split_memory_samples;

  int pp() const { return key.pp; }
  /// True where stage `stage` splits its micro-batch by speed.
  bool splits_stage(int stage) const {
    return size_t(stage) < split_replica_types.size() && !split_replica_types[stage].empty();
  }
  /// Each unit's time on stage `stage` as the partitioners' floors take it: its node type's, or
  /// for a split stage split_floor_unit_s.
  const std::vector<double>& stage_floor_unit_s(int stage) const {
    return splits_stage(stage) ? split_floor_unit_s[stage] : unit_compute_s[stage_node_type[stage]];
  }
  /// Data-parallel replicas of stage `stage` (key.stage_dp, or dp).
  int stage_dp(int stage) const { return key.dp_of_stage(stage); }
  /// Tensor-parallel degree of stage `stage` (key.stage_tp, or tp).
  int stage_tp(int stage) const { return key.tp_of_stage(stage); }
  /// Samples one GPU of stage `stage` runs per micro-batch (the most any of its replicas runs).
  int stage_mbs(int stage) const { return replica_micro_batch(key, stage_dp(stage)); }
  /// The first rank of stage `stage`: stages take contiguous ranks, its tp x its dp each.
  int stage_first_rank(int stage) const;
  /// GPUs of stage `stage`: tp x cp x dp.
  int stage_gpus(int stage) const { return key.stage_gpus(stage); }
  /// GPUs that hold the same dense weights of stage `stage` and reduce their gradients: its
  /// replicas' cp x dp.
  int stage_grad_ranks(int stage) const { return key.cp * stage_dp(stage); }
  /// The rank of replica `dp_index`, tensor-parallel lane `tp_index` of stage `stage`, at
  /// context-parallel rank `cp_index` (Megatron's order: tp fastest, then cp, then dp).
  int stage_rank(int stage, int dp_index, int tp_index, int cp_index = 0) const {
    return stage_first_rank(stage) + (dp_index * key.cp + cp_index) * stage_tp(stage) + tp_index;
  }
  int num_units() const { return model->num_units(); }
  /// The node type of stage `stage` with the least GPU memory (whose runtime constants and
  /// capacity its memory prediction takes).
  const NodeType& stage_smallest_memory_type(int stage) const;
  /// Node holding `rank`: ranks fill the nodes in order, each node's GPUs in turn.
  int node_of(int rank) const;
  /// The first rank after node `node`'s.
  int node_end_rank(int node) const {
    return node_rank_end.empty() ? (node + 1) * gpus_per_node : node_rank_end[node];
  }
  /// Where each node's ranks end (only where node types differ in GPUs per node).
  std::vector<int> node_rank_end;
  /// GPUs of every node where node types agree (the cluster's gpus_per_node(), kept here
  /// because node_of runs in the cost model's inner loops).
  int gpus_per_node = 1;
  /// The NVLink domain of each node of the plan (specs/nvlink_domain.h); empty where no node
  /// type spans nodes with NVLink (then only a node's own GPUs share NVLink).
  std::vector<int> node_domain;
  /// Nodes of each NVLink domain of the plan (indexed by node_domain's ids).
  std::vector<int> domain_nodes;
  /// True when nodes `a` and `b` (two different nodes) share an NVLink fabric.
  bool same_nvlink_domain(int a, int b) const { return !node_domain.empty() && node_domain[a] == node_domain[b]; }
  /// The cluster's multi_zone(): links may cross between zones, and the analytic policy looks
  /// at zones only then (kept here for the inner loops; false in contexts made by hand).
  bool multi_zone = false;
  /// Where multi_zone: each node type's zone as its place among the cluster's zone names in
  /// name order (ints, as the egress loops compare zones for every rank pair).
  std::vector<int> type_zone;
  /// The zone of the node holding `rank`, as type_zone numbers it.
  int zone_of(int rank) const { return type_zone[key.node_order[node_of(rank)]]; }
};

/// A context of `key` on `cluster`'s nodes with only its rank layout (stage_rank, node_of, the
/// stages' dp and tp): what to ask where a rank sits, without profiles or a model.
PlanContext rank_layout_context(const ClusterSpec& cluster, const PlanKey& key);

}  // namespace fasop
