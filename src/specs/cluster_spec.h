#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "specs/gpu_spec.h"
#include "specs/zone_spec.h"

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
  // The GPU as the cluster file gives it (optional; FASOP's clusters time layers from
  // measured profiles and give none): a file that gives peak_tflops plans with the analytic
  // policy by default.
  std::map<std::string, double> peak_tflops;  ///< dense peak per precision: fp32, tf32, fp16, bf16, fp8
  double memory_bandwidth_bytes_per_s = 0;     ///< GPU memory (HBM/GDDR) bandwidth
  /// The GPU's data for analytic profiles and the analytic policy: the shipped data of `gpu`
  /// (configs/gpus/), with what the node type gives itself (peaks, bandwidth, and the
  /// overrides compute_efficiency, memory_efficiency, gemm_half_dim, *_collective_efficiency)
  /// written over it.
  GpuSpec gpu_data;
  /// True when `gpu` has no shipped data and the file gives peaks but no efficiencies
  /// (compute_efficiency or gpu_data): the analytic model's default shares of peak stand in.
  bool gpu_data_assumed = false;
  double intra_node_latency_s = 5e-6;  ///< per message, alpha of the alpha-beta model
  double inter_node_latency_s = 20e-6;
  /// Field `nvlink_domain_nodes`: how many of these nodes one NVLink fabric joins (GB200 /
  /// GB300 NVL72: 18 compute trays of 4 GPUs; 1, the default, for a node whose NVLink stops at
  /// its edge). Inside a domain a GPU reaches every other over its NVLink ports at
  /// intra_node_bandwidth_bits_per_s and intra_node_latency_s; inter_node_* is the network
  /// between domains (specs/nvlink_domain.h).
  int nvlink_domain_nodes = 1;
  SlurmMapping slurm;  ///< field `slurm: {partition, gres, constraint, account}`
  /// Field `env:`: variables a launch exports on this type's nodes, e.g. the fabric's NCCL
  /// settings (NCCL_SOCKET_IFNAME, NCCL_IB_HCA) or EFA's FI_PROVIDER.
  std::vector<std::pair<std::string, std::string>> env;
  /// Field `zone:`: the zone its nodes are in (e.g. "us-central1-a"); "" where the file names
  /// none. Links between nodes of different zones follow ClusterSpec::zones.
  std::string zone;

  /// GPUs one NVLink fabric joins: the node's, or its domain's.
  int nvlink_gpus() const { return nvlink_domain_nodes * gpus_per_node; }
  /// True when the cluster file gives the GPU's peaks itself.
  bool has_gpu_spec() const { return !peak_tflops.empty() && memory_bandwidth_bytes_per_s > 0; }
  /// True when analytic profiles can time this GPU: its data is shipped or the file gives it.
  bool has_gpu_data() const { return !gpu_data.peak_tflops.empty() && gpu_data.memory_bandwidth_bytes_per_s > 0; }
};

/// A set of nodes: the node types and, in order, the nodes available.
struct ClusterSpec {
  std::string name;
  std::string source;  ///< file (or preset) it was loaded from, for messages
  std::vector<NodeType> node_types;
  std::vector<int> nodes;  ///< node type index of each node, in the file's order
  /// Field `zones:`: links between nodes of different zones and their egress price. A copy
  /// of the cluster that keeps node_types must keep it too (search/cluster_shapes.cc).
  ZoneSpec zones;

  int num_nodes() const { return static_cast<int>(nodes.size()); }
  /// The fewest GPUs a node of this cluster has: the bound on tensor parallelism, and every
  /// node's count where all node types agree (FASOP's clusters).
  int gpus_per_node() const;
  /// True when every node type has the same number of GPUs.
  bool uniform_gpus_per_node() const;
  int num_gpus() const;
  /// USD per second of all its nodes.
  double price_usd_per_s() const;
  int node_count(int node_type) const;
  /// Index of the node type called `name`, or -1.
  int find_node_type(const std::string& name) const;
  /// True when the nodes are of more than one node type.
  bool is_heterogeneous() const;
  /// The zones the node types name, each once, in the order of node_types ("" for those
  /// that name none).
  std::vector<std::string> zone_names() const;
  /// True when the node types name two zones or more: links between them follow `zones`.
  bool multi_zone() const;
};

}  // namespace fasop
