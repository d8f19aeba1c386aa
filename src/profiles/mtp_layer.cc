#include "profiles/mtp_layer.h"

#include <algorithm>

#include "specs/precision.h"

namespace fasop {

void append_pass(PassWork& into, const PassWork& from) {
  into.gemms.insert(into.gemms.end(), from.gemms.begin(), from.gemms.end());
  into.weight_bytes += from.weight_bytes;
  into.attention_flops += from.attention_flops;
  into.memory_bytes += from.memory_bytes;
  into.kernels += from.kernels;
  into.host_ops += from.host_ops;
  // Every collective of a layer moves the same bytes (the hidden state, a key/value chunk, the
  // routed tokens): counts add, sizes are the larger.
  into.tp_collectives += from.tp_collectives;
  into.tp_collective_bytes = std::max(into.tp_collective_bytes, from.tp_collective_bytes);
  into.cp_ring_steps += from.cp_ring_steps;
  into.cp_ring_step_bytes = std::max(into.cp_ring_step_bytes, from.cp_ring_step_bytes);
  into.cp_gather_chunk_bytes = std::max(into.cp_gather_chunk_bytes, from.cp_gather_chunk_bytes);
  into.cp_merge_bytes += from.cp_merge_bytes;
  into.cp_merge_kernels += from.cp_merge_kernels;
  if (from.ep_dispatch.count > 0) {
    const int count = into.ep_dispatch.count + from.ep_dispatch.count;
    const double token_bytes = std::max(into.ep_dispatch.token_bytes, from.ep_dispatch.token_bytes);
    into.ep_dispatch = from.ep_dispatch;
    into.ep_dispatch.count = count;
    into.ep_dispatch.token_bytes = token_bytes;
  }
  into.etp_collective_bytes += from.etp_collective_bytes;
  // Each wait's tail adds to the pass's (its GPU work before a wait, in sum, the rest).
  HostWaitTail& tail = into.after_host_wait;
  tail.gemms.insert(tail.gemms.end(), from.after_host_wait.gemms.begin(), from.after_host_wait.gemms.end());
  tail.memory_bytes += from.after_host_wait.memory_bytes;
  tail.kernels += from.after_host_wait.kernels;
  tail.host_ops += from.after_host_wait.host_ops;
  tail.waits += from.after_host_wait.waits;
}

LayerWork mtp_module_work(const ModelSpec& m, int tp, int mbs, const LayerOptions& options, const LayerWork& head) {
  const double h = m.hidden, tokens = double(mbs) * m.sequence / options.cp, bytes = activation_bytes(m.dtype);
  const double sp = options.sequence_parallel ? tp : 1;
  LayerWork w = layer_work(m, {"embedding", LayerRole::kEmbedding}, tp, mbs, options);
  // The two norms (read, write: 4 passes of h) and the concatenation (2h read, 2h written) on
  // the rank's tokens, then eh_proj's GEMM.
  PassWork projection;
  projection.memory_bytes = 8 * tokens * h * bytes / sp;
  projection.gemms.push_back({tokens, h / tp, 2 * h});
  projection.weight_bytes = 2 * h * h / tp * gemm_input_bytes(m.dtype);
  projection.kernels = projection.host_ops = 4;
  const LayerWork layer = layer_work(m, m.mtp_transformer_unit(), tp, mbs, options);
  append_pass(w.forward, projection);
  append_pass(w.backward, backward_of(projection, m.dtype));
  for (const LayerWork* part : {&layer, &head}) {
    append_pass(w.forward, part->forward);
    append_pass(w.backward, part->backward);
  }
  return w;
}

}  // namespace fasop
