#pragma once
// A model, a cluster and profiles small enough to price plans by hand (stage_tp_test.cc,
// uneven_dp_test.cc).
#include <catch2/catch.hpp>

#include <string>

#include "costmodel/analytic_policy.h"
#include "costmodel/estimate.h"
#include "specs/cluster_spec.h"
#include "specs/model_spec.h"
#include "specs/profile_spec.h"

namespace fasop::testing::tiny {

/// Two estimates that must be the same plan's, to the bit: a variant that changes nothing.
inline void check_same_estimate(const PlanEstimate& x, const PlanEstimate& y) {
  CHECK(y.step_time_s == x.step_time_s);
  CHECK(y.pipeline_time_s == x.pipeline_time_s);
  CHECK(y.dp_allreduce_s == x.dp_allreduce_s);
  CHECK(y.memory.oom_gpumem_gib == x.memory.oom_gpumem_gib);
  CHECK(y.price_per_step_usd == x.price_per_step_usd);
}

/// A model small enough to price by hand: 4 transformer layers, h 1024, f 4096, s 512, 16
/// heads, bf16, fused attention, global batch 8, no embedding or head.
inline ModelSpec tiny_model() {
  ModelSpec m;
  m.name = "tiny";
  m.hidden = 1024;
  m.heads = m.kv_heads = 16;
  m.ffn_hidden = 4096;
  m.sequence = 512;
  m.vocab = 1000;
  m.global_batch = 8;
  m.dtype = "bf16";
  m.flash_attention = true;
  for (int u = 0; u < 4; ++u) m.units.push_back({"t", LayerRole::kTransformer});
  return m;
}

inline NodeType tiny_node(const std::string& name, const std::string& gpu) {
  NodeType t;
  t.name = name;
  t.gpu = gpu;
  t.gpus_per_node = 4;
  t.gpu_memory_gib = 80;
  t.intra_node_bandwidth_bits_per_s = 8e11;
  t.inter_node_bandwidth_bits_per_s = 1e11;
  t.intra_node_latency_s = 1e-5;
  t.inter_node_latency_s = 1e-4;
  t.price_usd_per_hour = 1;
  // Collectives reach the whole bandwidth (bus share 1); no memory bandwidth: no optimizer term.
  return t;
}

/// One "fast" node (GPU GA) and one "slow" node (GPU GB) of 4 GPUs each.
inline ClusterSpec tiny_cluster() {
  ClusterSpec c;
  c.name = "tiny-two-types";
  c.node_types = {tiny_node("fast", "GA"), tiny_node("slow", "GB")};
  c.nodes = {0, 1};
  return c;
}

/// Forward seconds per layer (backward twice the forward): GA 10 ms at tp 1, 6 ms at tp 2, 5 ms
/// at tp 4 for 1 sample; GB 20, 9 and 6 ms; 2 samples take twice as long.
inline ProfileSpec tiny_profile(const std::string& gpu) {
  ProfileSpec p;
  p.model = "tiny";
  p.gpu = gpu;
  p.source = gpu + ".yaml";
  if (gpu == "GA")
    p.forward_s["t"] = {{1, {{1, 0.010}, {2, 0.020}}}, {2, {{1, 0.006}, {2, 0.012}}}, {4, {{1, 0.005}, {2, 0.010}}}};
  else
    p.forward_s["t"] = {{1, {{1, 0.020}, {2, 0.040}}}, {2, {{1, 0.009}, {2, 0.018}}}, {4, {{1, 0.006}, {2, 0.012}}}};
  return p;
}

inline AnalyticOptions without_overlap() {
  AnalyticOptions o;
  o.execution.overlap_grad_reduce = false;  // one bucket, wholly exposed: an all-reduce to price by hand
  return o;
}

}  // namespace fasop::testing::tiny
