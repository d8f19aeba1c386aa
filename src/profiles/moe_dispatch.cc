#include "profiles/moe_dispatch.h"

#include <algorithm>

namespace fasop {
namespace {

/// C(n - b, k) / C(n, k): the chance that k of n items drawn without replacement miss b of them.
double miss_probability(int n, int b, int k) {
  if (n - b < k) return 0;
  double p = 1;
  for (int i = 0; i < k; ++i) p *= double(n - b - i) / double(n - i);
  return p;
}

// The bandwidth DeepEP's and HybridEP's kernels reach, as a share of the link's, from their
// published figures (docs/moe-dispatch-sources.md section 3; "GB/s" as the READMEs count it):
// - RDMA: DeepEP's internode normal kernels 43-58 GB/s (dispatch and combine, EP 16-64, mean
//   50.3) and HybridEP's on H100 41.5-57.7 GB/s (mean 50.6), both on 400 Gb/s ConnectX-7 NICs
//   of 50 GB/s: the line rate.
// - NVLink: HybridEP's Torch-API dispatch and combine, B200 NVL8 at 16 SMs (536, 531 GB/s) and
//   GB200 MNNVL at 8-36 ranks (418-550): mean 487 GB/s of NVLink 5's 900, 0.54. DeepEP's on B200
//   NVL8, 348 / 302 GB/s at 16 SMs and 619 / 524 at 32: at Megatron-Core's default 20 SMs,
//   interpolated, 387 GB/s of 900, 0.43.
constexpr double kFlexNetworkShare = 1.0;
constexpr double kHybridepNvlinkShare = 0.54;
constexpr double kDeepepNvlinkShare = 0.43;

}  // namespace

Link dispatch_link(Link link, MoeDispatcher dispatcher, bool network) {
  if (!is_flex(dispatcher)) return link;
  link.collective.half_bytes = 0;  // measured at a micro-batch's size (4096 tokens)
  link.collective.bus_share = network ? kFlexNetworkShare
                              : dispatcher == MoeDispatcher::kHybridep ? kHybridepNvlinkShare : kDeepepNvlinkShare;
  return link;
}

double block_hit_probability(const MoeSpec& moe, int block_experts) {
  const int e = moe.experts, k = moe.top_k, b = std::min(block_experts, e);
  if (moe.group_limited()) {
    const int groups = moe.router_groups, chosen = moe.router_group_topk, group = e / groups;
    if (b % group == 0) return 1 - miss_probability(groups, b / group, chosen);
    if (group % b == 0) return double(chosen) / groups * (1 - miss_probability(group, b, k / chosen));
  }
  return 1 - miss_probability(e, b, k);
}

DispatchCopies dispatch_copies(const MoeSpec& moe, MoeDispatcher dispatcher, int ep, int ranks_per_domain) {
  const int on_domain = std::clamp(ranks_per_domain, 1, ep);
  const double off_domain = ep - on_domain;
  switch (dispatcher) {
    case MoeDispatcher::kAlltoall:
      return {.nvlink = double(moe.top_k) * (on_domain - 1) / ep, .network = moe.top_k * off_domain / ep};
    case MoeDispatcher::kAllgather:
      return {.nvlink = double(on_domain - 1), .network = off_domain};
    case MoeDispatcher::kDeepep:
    case MoeDispatcher::kHybridep: {
      const double gpu_hit = block_hit_probability(moe, moe.experts / ep);
      const double domain_hit = block_hit_probability(moe, moe.experts / ep * on_domain);
      const double remote_domains = double(ep / on_domain - 1);
      // The far domain's receiving GPU forwards the token to each other GPU there it is bound for.
      const double forwarded = off_domain * gpu_hit * (on_domain - 1) / on_domain;
      return {.nvlink = (on_domain - 1) * gpu_hit + forwarded, .network = remote_domains * domain_hit};
    }
  }
  return {};
}

}  // namespace fasop
