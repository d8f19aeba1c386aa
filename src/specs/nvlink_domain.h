#pragma once
// NVLink domains (GB200 / GB300 NVL72 racks): nodes whose GPUs reach one another over one NVLink
// fabric, not the network. A node type says how many of its nodes one domain holds
// (NodeType::nvlink_domain_nodes); a job's nodes of the type fill domains in Slurm segments.
#include <vector>

namespace fasop {

struct ClusterSpec;

/// The nodes of one domain a job of `job_nodes` nodes gets, on a node type whose domain holds
/// `domain_nodes`: all of them where they fit in one domain, else the largest divisor of
/// `job_nodes` that fits, so that every domain holds as many (Slurm's --segment, as
/// Megatron-Bridge's launcher asks for it on GB200: 32 trays of 18-tray racks -> 2 x 16).
int nvlink_segment_nodes(int domain_nodes, int job_nodes);

/// The NVLink domain of each node of a job whose nodes are of the types `node_order` (indexes
/// into cluster.node_types), in rank order: ids from 0, one per segment; nodes of different
/// types never share one. Empty where no node type has domains of more than one node (every
/// link between nodes is the network).
std::vector<int> nvlink_domains(const ClusterSpec& cluster, const std::vector<int>& node_order);

}  // namespace fasop
