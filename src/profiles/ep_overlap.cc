#include "profiles/ep_overlap.h"

#include <algorithm>

namespace fasop {

void overlap_ep_comm(LayerTime& t, double overlap_slowdown) {
  const double alltoalls_s = t.forward.ep_comm_s + t.backward.ep_comm_s;
  if (alltoalls_s <= 0) return;
  const double compute_s = std::max(t.forward.gpu_s, t.forward.host_s) + std::max(t.backward.gpu_s, t.backward.host_s);
  const double hidden_s = std::min(alltoalls_s, compute_s);
  const double exposed_s = alltoalls_s - hidden_s + overlap_slowdown * hidden_s;
  for (PassTime* pass : {&t.forward, &t.backward}) {
    const double share = pass->ep_comm_s / alltoalls_s;
    pass->seconds += share * exposed_s - pass->ep_comm_s;
    pass->ep_comm_s = share * exposed_s;
  }
}

}  // namespace fasop
