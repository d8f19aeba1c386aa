#pragma once
#include <vector>

#include "specs/cluster_spec.h"

namespace fasop {

/// How many nodes of each node type a cluster shape has (indexed like node_types).
using NodeCounts = std::vector<int>;

/// The most nodes of each type one may rent: the inventory cluster's own counts.
NodeCounts inventory_limits(const ClusterSpec& inventory);

/// Every cluster shape within `limits`: each count from 0 to its limit, not all zero, in
/// lexicographic order of the counts (FASOP's --pareto order: A100 nodes outer, A10 inner).
std::vector<NodeCounts> cluster_shapes(const NodeCounts& limits);

/// How many shapes cluster_shapes(limits) gives: the product of (limit + 1), less the empty one
/// (a double: an inventory of several large node types has more than any integer holds).
double shape_count(const NodeCounts& limits);

/// The cluster of one shape: the inventory's node types, its nodes grouped by type in
/// node-type order (FASOP lists A100 nodes first; placements rotate this list).
ClusterSpec shape_cluster(const ClusterSpec& inventory, const NodeCounts& counts);

/// GPUs of the shape with `counts` nodes of each inventory type (64 bits: counts may be large).
long long shape_gpus(const ClusterSpec& inventory, const NodeCounts& counts);

/// USD per second of the shape's nodes (shape_cluster(...).price_usd_per_s(), without building it).
double shape_price_usd_per_s(const ClusterSpec& inventory, const NodeCounts& counts);

/// "2xA100+3xA10": a shape in words, for labels and messages.
std::string shape_label(const ClusterSpec& inventory, const NodeCounts& counts);

/// The counts of each node type in a node order.
NodeCounts counts_of(const ClusterSpec& inventory, const std::vector<int>& node_order);

}  // namespace fasop
