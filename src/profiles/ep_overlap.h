#pragma once
// Megatron-Core's EP all-to-all overlap (--overlap-moe-expert-parallel-comm): what of a MoE
// layer's all-to-alls stays exposed when another micro-batch's compute runs beside them.
#include "profiles/analytic_profile.h"

namespace fasop {

/// Prices `t`'s all-to-alls as overlapped. In the steady 1F1B phase Megatron merges one
/// micro-batch's forward with another's backward, layer by layer, and runs each one's
/// all-to-alls while the other computes: together the two passes hide up to their compute
/// (max of GPU and host time) of the all-to-alls of both; the hidden part slows that compute by
/// `overlap_slowdown`, as overlapped tensor-parallel collectives do. The exposed rest is split
/// over the passes as their all-to-alls are. ASSUMPTION: every micro-batch overlaps; the fill and
/// drain, where no partner pass runs, are not told apart.
void overlap_ep_comm(LayerTime& t, double overlap_slowdown);

}  // namespace fasop
