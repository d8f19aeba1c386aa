#pragma once
// Where a MoE layer's token dispatch sends one GPU's tokens: copies over NVLink and over the
// network per token, for each of Megatron-Core's dispatchers, under top-k routing with or without
// group-limited (node-limited) routing. Closed forms, checked against a simulation in
// docs/moe-dispatch-sources.md; ep_comm_s (analytic_profile.h) turns them into seconds.
#include "specs/link.h"
#include "specs/moe_dispatcher.h"
#include "specs/moe_spec.h"

namespace fasop {

/// Copies of one token that one GPU sends in one dispatch (the combine returns as many), beyond
/// its own: to GPUs of its NVLink domain, and across the network.
struct DispatchCopies {
  double nvlink = 0;   ///< over NVLink (DeepEP and HybridEP: also what the far node forwards for it)
  double network = 0;  ///< over the network (DeepEP and HybridEP: one a destination node)
};

/// The chance that a token sends at least one of its top_k choices into a given block of
/// `block_experts` contiguous experts (a GPU's or a node's): 1 - C(E - b, k) / C(E, k) without
/// groups. With group-limited routing each token takes top_k / group_topk experts in each of
/// group_topk groups (the groups' scores are their top experts' sums, so a chosen group is
/// nearly always used): a block of m whole groups is hit with 1 - C(G - m, g) / C(G, g); a block
/// inside a group with g / G x (1 - C(s - b, k / g) / C(s, k / g)) for groups of s experts. A
/// block that neither holds whole groups nor divides one is priced as without groups.
double block_hit_probability(const MoeSpec& moe, int block_experts);

/// The copies of one token that `dispatcher` sends from a GPU of an expert group of `ep` GPUs
/// laid out `ranks_per_domain` to an NVLink domain (ep / ranks_per_domain domains):
/// - alltoall: one per chosen expert off the GPU: top_k x (ranks_per_domain - 1) / ep over
///   NVLink and top_k x (ep - ranks_per_domain) / ep over the network;
/// - allgather: the token to every other GPU of the group;
/// - DeepEP, HybridEP: one per distinct destination GPU; one network copy per distinct remote
///   domain, which its receiving GPU forwards over NVLink to the others it is bound for.
DispatchCopies dispatch_copies(const MoeSpec& moe, MoeDispatcher dispatcher, int ep, int ranks_per_domain);

/// `link` as `dispatcher`'s kernels use it (`network`: the link between NVLink domains): NCCL's
/// collective share (the GPU's data) for alltoall and allgather; for DeepEP and HybridEP the
/// share of the link their authors measured their kernels reach (moe_dispatch.cc).
Link dispatch_link(Link link, MoeDispatcher dispatcher, bool network);

}  // namespace fasop
