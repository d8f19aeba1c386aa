#pragma once
// Megatron-Core's EP all-to-all overlap (--overlap-moe-expert-parallel-comm): what of a MoE
// layer's token dispatches stays exposed when another micro-batch's compute runs beside them.
#include "profiles/analytic_profile.h"

namespace fasop {

/// One node of the combined schedule: its GPU seconds and the host's seconds to issue it.
struct ScheduleNode {
  double gpu_s = 0;
  double host_s = 0;
};

/// A MoE layer as Megatron-Core's combined 1F1B schedule runs it in the steady phase
/// (TransformerLayerSchedulePlan.run): micro-batch A's forward beside micro-batch B's backward,
///   communication: combine_bwd | dispatch_fwd -> dispatch_bwd       | combine_fwd
///   computation:   attention_fwd | mlp_bwd -> mlp_bwd_dw -> mlp_fwd | attention_bwd
/// each node after its own micro-batch's previous one, each stream in the host's order.
struct CombinedLayer {
  ScheduleNode attention_fwd;  ///< A: attention, router and the dispatch's preprocessing
  ScheduleNode mlp_fwd;        ///< A: the experts (and a shared expert)
  ScheduleNode mlp_bwd;        ///< B: the experts' input gradients
  ScheduleNode mlp_bwd_dw;     ///< B: their weight gradients (--delay-wgrad-compute)
  ScheduleNode attention_bwd;  ///< B: the attention's and router's gradients
  double dispatch_fwd_s = 0, combine_fwd_s = 0, dispatch_bwd_s = 0, combine_bwd_s = 0;
  /// Dropless routing: the host waits for A's routing (its split sizes) before dispatch_fwd, so
  /// it issues nothing more until the GPU has run attention_fwd.
  bool host_waits = false;
};

/// Seconds from the first node's issue to the last node's end: the host issues the nodes in
/// the schedule's order, one after another; a node starts once issued, once its stream is free
/// and once its micro-batch's previous node has ended; a compute node ends no sooner than the
/// host has issued it. Each layer pair is timed alone (the next pair's first node waits).
double combined_layer_s(const CombinedLayer& layer);

/// Prices `t`'s dispatches as overlapped, given the two passes' combined time `combined_s`
/// (combined_layer_s of their nodes): what the combined time adds to the passes' own compute
/// (seconds less their tp, cp and ep communication) is exposed; the rest of the dispatches is
/// hidden and slows the compute by `overlap_slowdown` of itself, as overlapped tensor-parallel
/// collectives do. The exposed part is split over the passes as their dispatches are.
/// ASSUMPTION: every micro-batch overlaps; the fill and drain, where no partner pass runs, are
/// not told apart.
void overlap_ep_comm(LayerTime& t, double combined_s, double overlap_slowdown);

/// The same where the passes are not split into nodes (a multi-token-prediction module beside
/// the loss): together the two passes hide up to their compute (max of GPU and host time) of the
/// dispatches of both.
void overlap_ep_comm(LayerTime& t, double overlap_slowdown);

}  // namespace fasop
