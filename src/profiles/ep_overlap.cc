#include "profiles/ep_overlap.h"

#include <algorithm>

namespace fasop {
namespace {

/// Sets each pass's exposed dispatch seconds to its share of `exposed_s`.
void expose(LayerTime& t, double exposed_s) {
  const double dispatches_s = t.forward.ep_comm_s + t.backward.ep_comm_s;
  for (PassTime* pass : {&t.forward, &t.backward}) {
    const double share = pass->ep_comm_s / dispatches_s;
    pass->seconds += share * exposed_s - pass->ep_comm_s;
    pass->ep_comm_s = share * exposed_s;
  }
}

}  // namespace

double combined_layer_s(const CombinedLayer& l) {
  double host = 0, compute = 0, comm = 0;  // when the host and each stream are next free
  double a = 0, b = 0;                     // when micro-batch A's and B's last node ended
  auto run_compute = [&](const ScheduleNode& node, double after) {
    const double issued_from = host;
    host += node.host_s;
    compute = std::max(std::max(issued_from, compute), after) + node.gpu_s;
    compute = std::max(compute, host);
    return compute;
  };
  auto run_comm = [&](double seconds, double after) {
    comm = std::max(std::max(host, comm), after) + seconds;
    return comm;
  };
  b = run_comm(l.combine_bwd_s, b);
  a = run_compute(l.attention_fwd, a);
  b = run_compute(l.mlp_bwd, b);
  if (l.host_waits) host = std::max(host, a);
  a = run_comm(l.dispatch_fwd_s, a);
  run_compute(l.mlp_bwd_dw, 0);  // needs nothing beyond mlp_bwd, before it on the stream
  b = run_comm(l.dispatch_bwd_s, b);
  a = run_compute(l.mlp_fwd, a);
  a = run_comm(l.combine_fwd_s, a);
  b = run_compute(l.attention_bwd, b);
  return std::max(compute, comm);
}

void overlap_ep_comm(LayerTime& t, double combined_s, double overlap_slowdown) {
  const double dispatches_s = t.forward.ep_comm_s + t.backward.ep_comm_s;
  if (dispatches_s <= 0) return;
  double compute_s = 0;
  for (const PassTime* pass : {&t.forward, &t.backward})
    compute_s += pass->seconds - pass->tp_comm_s - pass->cp_comm_s - pass->ep_comm_s;
  const double exposed_s = std::min(dispatches_s, std::max(0.0, combined_s - compute_s));
  expose(t, exposed_s + overlap_slowdown * (dispatches_s - exposed_s));
}

void overlap_ep_comm(LayerTime& t, double overlap_slowdown) {
  const double dispatches_s = t.forward.ep_comm_s + t.backward.ep_comm_s;
  if (dispatches_s <= 0) return;
  const double compute_s = std::max(t.forward.gpu_s, t.forward.host_s) + std::max(t.backward.gpu_s, t.backward.host_s);
  const double hidden_s = std::min(dispatches_s, compute_s);
  expose(t, dispatches_s - hidden_s + overlap_slowdown * hidden_s);
}

}  // namespace fasop
