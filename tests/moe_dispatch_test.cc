// Token dispatch against hand calculations: the chance a token is bound for a GPU or a node under
// top-k routing with and without group-limited routing, the copies each dispatcher sends (alltoall
// one per expert, DeepEP and HybridEP one per GPU and one RDMA copy per node), their seconds on a
// made-up node, the dispatcher read from plan files, and the plans Megatron-Core refuses.
#include <catch2/catch.hpp>

#include "costmodel/parallel_dims_checks.h"
#include "profiles/analytic_profile.h"
#include "profiles/ep_overlap.h"
#include "profiles/moe_dispatch.h"
#include "specs/moe_dispatcher.h"
#include "specs/spec_loader.h"
#include "test_support.h"

using namespace fasop;
using fasop::testing::made_up_node;

namespace {

/// `key` with `dispatcher`.
PlanKey with(PlanKey key, MoeDispatcher dispatcher) {
  key.moe_dispatcher = dispatcher;
  return key;
}

/// DeepSeek-V3's routing: 256 experts, top 8, in 8 groups of 32 of which a token uses 4.
MoeSpec deepseek_routing(bool groups) {
  MoeSpec moe{.experts = 256, .top_k = 8, .expert_ffn_hidden = 2048};
  if (groups) {
    moe.router_groups = 8;
    moe.router_group_topk = 4;
  }
  return moe;
}

}  // namespace

TEST_CASE("top-k routing: the chance a token is bound for a block of experts", "[moe][dispatch]") {
  // Without groups, a block of 32 of 256 experts is missed by all 8 choices with
  // C(224, 8) / C(256, 8) = prod_{i<8} (224 - i) / (256 - i) = 0.33817; hit 0.66183.
  double miss = 1;
  for (int i = 0; i < 8; ++i) miss *= (224.0 - i) / (256.0 - i);
  CHECK(block_hit_probability(deepseek_routing(false), 32) == Approx(1 - miss).epsilon(1e-12));
  CHECK(block_hit_probability(deepseek_routing(false), 32) == Approx(0.66183).epsilon(1e-4));
  // With 8 groups, top 4: a block that is one group is chosen with 1 - C(7, 4) / C(8, 4) = 1/2.
  CHECK(block_hit_probability(deepseek_routing(true), 32) == Approx(0.5).epsilon(1e-12));
  // Two groups (a node of 64 experts): 1 - C(6, 4) / C(8, 4) = 1 - 15/70.
  CHECK(block_hit_probability(deepseek_routing(true), 64) == Approx(55.0 / 70).epsilon(1e-12));
  // A GPU's 4 experts inside a group of 32: the group is chosen with 4/8, and then its 2 experts
  // miss the GPU's 4 with C(28, 2) / C(32, 2) = 378/496: 0.5 x 118/496.
  CHECK(block_hit_probability(deepseek_routing(true), 4) == Approx(0.5 * 118 / 496).epsilon(1e-12));
  // A block of every expert is always hit.
  CHECK(block_hit_probability(deepseek_routing(false), 256) == 1);
}

TEST_CASE("dispatch copies: alltoall sends each choice, DeepEP each GPU and each node once", "[moe][dispatch]") {
  const MoeSpec grouped = deepseek_routing(true);
  // ep 64 over nodes of 8 GPUs (DeepSeek-V3 on H100): alltoall sends 8 choices, 7/64 of them to
  // the own node's other GPUs and 56/64 across: 0.875 and 7 copies a token.
  const DispatchCopies a2a = dispatch_copies(grouped, MoeDispatcher::kAlltoall, 64, 8);
  CHECK(a2a.nvlink == Approx(0.875).epsilon(1e-12));
  CHECK(a2a.network == Approx(7).epsilon(1e-12));
  // DeepEP: a node is one group, so each of the 7 other nodes gets one RDMA copy with 1/2: 3.5.
  // A GPU (4 experts) is bound for with p = 0.5 x 118/496; the own node's 7 other GPUs get 7p
  // over NVLink, and the far nodes forward to 7 of 8 GPUs of theirs: 56 p x 7/8 = 49 p.
  const double p = 0.5 * 118 / 496;
  const DispatchCopies deepep = dispatch_copies(grouped, MoeDispatcher::kDeepep, 64, 8);
  CHECK(deepep.network == Approx(3.5).epsilon(1e-12));
  CHECK(deepep.nvlink == Approx(56 * p).epsilon(1e-12));
  // HybridEP moves the same copies.
  CHECK(dispatch_copies(grouped, MoeDispatcher::kHybridep, 64, 8).network == deepep.network);
  // Without groups a node's 32 experts are hit with 0.66183: 7 x 0.66183 = 4.633 RDMA copies.
  CHECK(dispatch_copies(deepseek_routing(false), MoeDispatcher::kDeepep, 64, 8).network == Approx(4.6328).epsilon(1e-4));
  // ep 8 in one node (B200): no network; each other GPU (one group of 32 experts) with 1/2.
  const DispatchCopies in_node = dispatch_copies(grouped, MoeDispatcher::kDeepep, 8, 8);
  CHECK(in_node.network == 0);
  CHECK(in_node.nvlink == Approx(3.5).epsilon(1e-12));
  // alltoall in one node: 8 x 7/8 copies, whatever the groups.
  CHECK(dispatch_copies(grouped, MoeDispatcher::kAlltoall, 8, 8).nvlink == Approx(7).epsilon(1e-12));
  // allgather: every token to the 15 others of ep 16 on 8-GPU nodes, 7 on NVLink, 8 across.
  const DispatchCopies gather = dispatch_copies(grouped, MoeDispatcher::kAllgather, 16, 8);
  CHECK(gather.nvlink == 7);
  CHECK(gather.network == 8);
}

TEST_CASE("dispatch seconds: the network's copies against NVLink's, at once", "[moe][dispatch]") {
  // 1 MiB of a GPU's tokens, one dispatch; the made-up node: 8 GPUs, NVLink 1e12 bit/s at 1 us,
  // the network 1e11 bit/s a GPU at 10 us.
  const NodeType node = made_up_node();
  PassWork work;
  work.ep_dispatch = {.count = 1, .token_bytes = 1048576.0, .moe = deepseek_routing(true),
                      .dispatcher = MoeDispatcher::kAlltoall};
  const double mib_bits = 1048576.0 * 8;
  // alltoall, ep 64: 7 copies over the network (0.875 on NVLink is faster).
  CHECK(ep_comm_s(work, 64, 1, node) == Approx(1e-5 + 7 * mib_bits / 1e11).epsilon(1e-12));
  // DeepEP: half as many copies cross the network, 3.5, at its kernels' line rate (the made-up
  // network's share is 1 too).
  work.ep_dispatch.dispatcher = MoeDispatcher::kDeepep;
  CHECK(ep_comm_s(work, 64, 1, node) == Approx(1e-5 + 3.5 * mib_bits / 1e11).epsilon(1e-12));
  // In one node (ep 8): 3.5 copies on NVLink at 1 us, at the 0.43 of it DeepEP's kernels reach
  // on 20 SMs; HybridEP's reach 0.54.
  CHECK(ep_comm_s(work, 8, 1, node) == Approx(1e-6 + 3.5 * mib_bits / (0.43 * 1e12)).epsilon(1e-12));
  work.ep_dispatch.dispatcher = MoeDispatcher::kHybridep;
  CHECK(ep_comm_s(work, 8, 1, node) == Approx(1e-6 + 3.5 * mib_bits / (0.54 * 1e12)).epsilon(1e-12));
  // alltoall keeps NCCL's share of the GPU's data.
  NodeType slower = node;
  slower.gpu_data.nvlink.bus_share = 0.8;
  work.ep_dispatch.dispatcher = MoeDispatcher::kAlltoall;
  CHECK(ep_comm_s(work, 8, 1, slower) == Approx(1e-6 + 7 * mib_bits / (0.8 * 1e12)).epsilon(1e-12));
}

TEST_CASE("plan files and cases name the token dispatcher", "[moe][dispatch]") {
  CHECK(moe_dispatcher_yaml(MoeDispatcher::kAlltoall).empty());
  CHECK(moe_dispatcher_yaml(MoeDispatcher::kHybridep) == "moe_token_dispatcher: hybridep\n");
  CHECK(parse_moe_dispatcher("deepep") == MoeDispatcher::kDeepep);
  CHECK(!parse_moe_dispatcher("flex"));
  CHECK(moe_dispatcher_choices() == "alltoall, allgather, deepep or hybridep");
}

TEST_CASE("dispatchers Megatron-Core or DeepEP would refuse are refused with the reason", "[moe][dispatch][specs]") {
  fasop::testing::PresetSpecs specs("deepseek-v3", "dgx-h100");
  const PlanKey key{.mbs = 1, .tp = 1, .dp = 64, .pp = 1, .ep = 64};
  // alltoall runs anything; DeepEP on 8-GPU nodes across 8 of them too.
  CHECK(moe_dispatcher_fault(specs.model, specs.cluster, with(key, MoeDispatcher::kAlltoall)).empty());
  CHECK(moe_dispatcher_fault(specs.model, specs.cluster, with(key, MoeDispatcher::kDeepep)).empty());
  // The flex dispatcher needs tp x ep > 1.
  PlanKey one = key;
  one.ep = 1;
  CHECK_THAT(moe_dispatcher_fault(specs.model, specs.cluster, with(one, MoeDispatcher::kHybridep)),
             Catch::Contains("tp x ep > 1"));
  // DeepEP does not pad to capacity.
  ModelSpec dropping = specs.model;
  dropping.moe.token_drop = true;
  CHECK_THAT(moe_dispatcher_fault(dropping, specs.cluster, with(key, MoeDispatcher::kDeepep)),
             Catch::Contains("moe_pad_expert_input_to_capacity"));
  CHECK(moe_dispatcher_fault(dropping, specs.cluster, with(key, MoeDispatcher::kHybridep)).empty());
  // DeepEP's internode kernels on 4-GPU nodes; within 8 ranks it runs.
  ClusterSpec trays = fasop::testing::PresetSpecs("deepseek-v3", "dgx-gb200").cluster;
  CHECK_THAT(moe_dispatcher_fault(specs.model, trays, with(key, MoeDispatcher::kDeepep)), Catch::Contains("NUM_MAX_NVL_PEERS"));
  PlanKey eight = key;
  eight.ep = 8;
  CHECK(moe_dispatcher_fault(specs.model, trays, with(eight, MoeDispatcher::kDeepep)).empty());
  // A dense model has nothing to dispatch.
  CHECK_THAT(moe_dispatcher_fault(fasop::testing::preset_model("gpt2xl"), specs.cluster, with(one, MoeDispatcher::kDeepep)),
             Catch::Contains("no experts"));
}

TEST_CASE("group-limited routing is read with its checks", "[moe][dispatch][specs]") {
  const std::string head = "name: m\nhidden: 1024\nheads: 16\nffn_hidden: 4096\nsequence: 4096\nvocab: 32000\n"
                           "global_batch: 64\ndtype: bf16\nactivation: swiglu\nnorm: rmsnorm\n";
  const std::string layers = "layers:\n  - {type: moe_layer, role: transformer, moe: true, repeat: 2}\n";
  auto model = [&](const std::string& groups) {
    return parse_model(head + "moe: {experts: 64, top_k: 8, expert_ffn_hidden: 1024" + groups + "}\n" + layers, "m.yaml");
  };
  const ModelSpec grouped = model(", router_groups: 8, router_group_topk: 4");
  CHECK(grouped.moe.router_groups == 8);
  CHECK(grouped.moe.router_group_topk == 4);
  CHECK(grouped.moe.group_limited());
  CHECK(!model("").moe.group_limited());
  CHECK_THAT(fasop::testing::spec_error([&] { model(", router_groups: 8"); }),
             Catch::Contains("router_group_topk") && Catch::Contains("missing"));
  CHECK_THAT(fasop::testing::spec_error([&] { model(", router_groups: 6, router_group_topk: 2"); }),
             Catch::Contains("does not divide the 64 experts"));
  CHECK_THAT(fasop::testing::spec_error([&] { model(", router_groups: 8, router_group_topk: 3"); }),
             Catch::Contains("does not divide top_k 8"));
}

TEST_CASE("the combined 1F1B schedule: the dispatches' overlapped and exposed parts", "[moe][dispatch]") {
  // Milliseconds. Micro-batch A's forward: attention 2 (host 1), experts 3 (host 1); B's
  // backward: experts' input gradients 4 (host 1), weight gradients 2 (host 0.5), attention 4
  // (host 1). Each dispatch and combine 1.5.
  CombinedLayer layer{.attention_fwd = {2, 1}, .mlp_fwd = {3, 1}, .mlp_bwd = {4, 1}, .mlp_bwd_dw = {2, 0.5},
                      .attention_bwd = {4, 1}, .dispatch_fwd_s = 1.5, .combine_fwd_s = 1.5,
                      .dispatch_bwd_s = 1.5, .combine_bwd_s = 1.5};
  // combine_bwd 0-1.5 beside attention_fwd 0-2; mlp_bwd 2-6 (after combine_bwd); dispatch_fwd
  // 2-3.5 (after attention_fwd); mlp_bwd_dw 6-8; dispatch_bwd 6-7.5 (after mlp_bwd); mlp_fwd
  // 8-11; combine_fwd 11-12.5 beside attention_bwd 11-15: every dispatch hidden, 15 = compute.
  CHECK(combined_layer_s(layer) == Approx(15));
  // Dispatches of 5: combine_bwd 0-5 holds mlp_bwd back to 5-9, dispatch_fwd 5-10, mlp_bwd_dw
  // 9-11, dispatch_bwd 10-15, mlp_fwd 11-14, combine_fwd 15-20, attention_bwd 15-19: 20.
  CombinedLayer slow = layer;
  slow.dispatch_fwd_s = slow.combine_fwd_s = slow.dispatch_bwd_s = slow.combine_bwd_s = 5;
  CHECK(combined_layer_s(slow) == Approx(20));
  // Host-bound nodes (hosts 3, 4, 2, 1, 2; GPU 1, 1, 2, 1, 2; dispatches 1), the host waiting
  // for A's routing: the GPU keeps up with the host, 12 = the host's time, all hidden.
  CombinedLayer host_bound{.attention_fwd = {1, 3}, .mlp_fwd = {1, 4}, .mlp_bwd = {2, 2}, .mlp_bwd_dw = {1, 1},
                           .attention_bwd = {2, 2}, .dispatch_fwd_s = 1, .combine_fwd_s = 1, .dispatch_bwd_s = 1,
                           .combine_bwd_s = 1, .host_waits = true};
  CHECK(combined_layer_s(host_bound) == Approx(12));
  // The wait costs where the GPU runs behind: with attention_fwd at 6 GPU ms the host, done
  // issuing mlp_bwd at 5, idles until 6, and everything after it issues 1 ms later: 13, where
  // without the wait it would be 12.
  CombinedLayer waiting = host_bound;
  waiting.attention_fwd.gpu_s = 6;
  CHECK(combined_layer_s(waiting) == Approx(13));
  waiting.host_waits = false;
  CHECK(combined_layer_s(waiting) == Approx(12));

  // The passes of the slow layer: forward 5 GPU ms, 10 of dispatches; backward 10 and 10.
  LayerTime t;
  t.forward = {.seconds = 15, .gpu_s = 5, .host_s = 2, .ep_comm_s = 10};
  t.backward = {.seconds = 20, .gpu_s = 10, .host_s = 2.5, .ep_comm_s = 10};
  // Combined 20 against 15 of compute: 5 exposed, the other 15 hidden at 10% (1.5), 6.5 in
  // all, half each pass.
  overlap_ep_comm(t, combined_layer_s(slow), 0.1);
  CHECK(t.forward.ep_comm_s == Approx(3.25));
  CHECK(t.forward.seconds == Approx(8.25));
  CHECK(t.backward.ep_comm_s == Approx(3.25));
  CHECK(t.backward.seconds == Approx(13.25));
}
