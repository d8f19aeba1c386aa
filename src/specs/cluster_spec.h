#pragma once
#include <map>
#include <string>
#include <vector>

namespace fasop {

/// Where a node type's nodes come from in Slurm (`launch --backend slurm`): its partition,
/// and the generic resources and constraints to ask for.
struct SlurmMapping {
  std::string partition;   ///< empty: the node type has no Slurm mapping
  std::string gres;        ///< e.g. "gpu:8" (empty: none)
  std::string constraint;  ///< e.g. "a100" (empty: none)
  std::string account;     ///< e.g. "ml-team" (empty: the user's default)
};

/// A kind of node one can rent: its GPUs, links and price.
struct NodeType {
  std::string name;  ///< e.g. "p4d.24xlarge"
  std::string gpu;   ///< GPU type, the key of its profile, e.g. "A100"
  int gpus_per_node = 0;
  double gpu_memory_gib = 0;  ///< usable memory per GPU, the out-of-memory limit
  double intra_node_bandwidth_bits_per_s = 0;
  double inter_node_bandwidth_bits_per_s = 0;
  double price_usd_per_hour = 0;  ///< USD per node-hour
  // The GPU as hardware, for analytic profiles and the analytic cost policy (optional for
  // FASOP's clusters, whose layer times are measured):
  std::map<std::string, double> peak_tflops;  ///< dense peak per precision: fp32, tf32, fp16, bf16, fp8
  double memory_bandwidth_bytes_per_s = 0;     ///< GPU memory (HBM/GDDR) bandwidth
  // Defaults: what Megatron-LM's end-to-end A100 runs imply (validate --fit on half of them,
  // 3% error on the other half); calibrate or fit a GPU's own where there are measurements.
  double compute_efficiency = 0.745;  ///< share of peak the model's GEMMs reach; a measured profile calibrates it
  double memory_efficiency = 0.90;    ///< share of memory bandwidth element-wise kernels reach
  /// GEMM efficiency against size: a GEMM of F FLOPs runs at compute_efficiency x F / (F +
  /// gemm_half_flops) (launch and tile losses weigh on small GEMMs); 0: every size alike.
  double gemm_half_flops = 0;
  /// Share of a link's bandwidth collectives (all-reduce rings) reach on it: NCCL's bus
  /// bandwidth against the nominal link. 1 where the bandwidths are measured (profile net).
  double intra_node_collective_efficiency = 1.0;
  double inter_node_collective_efficiency = 1.0;
  double intra_node_latency_s = 5e-6;  ///< per message, alpha of the alpha-beta model
  double inter_node_latency_s = 20e-6;
  SlurmMapping slurm;  ///< field `slurm: {partition, gres, constraint, account}`

  bool has_gpu_spec() const { return !peak_tflops.empty() && memory_bandwidth_bytes_per_s > 0; }
};

/// A set of nodes: the node types and, in order, the nodes available.
struct ClusterSpec {
  std::string name;
  std::string source;  ///< file (or preset) it was loaded from, for messages
  std::vector<NodeType> node_types;
  std::vector<int> nodes;  ///< node type index of each node, in the file's order

  int num_nodes() const { return static_cast<int>(nodes.size()); }
  /// The fewest GPUs a node of this cluster has: the bound on tensor parallelism, and every
  /// node's count where all node types agree (FASOP's clusters).
  int gpus_per_node() const;
  /// True when every node type has the same number of GPUs.
  bool uniform_gpus_per_node() const;
  int num_gpus() const;
  int node_count(int node_type) const;
  /// Index of the node type called `name`, or -1.
  int find_node_type(const std::string& name) const;
  /// True when the nodes are of more than one node type.
  bool is_heterogeneous() const;
};

}  // namespace fasop
