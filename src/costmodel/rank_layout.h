#pragma once

namespace fasop {

/// Megatron/DeepSpeed rank order: tensor-parallel index fastest, then data-parallel, then stage.
inline int rank_of(int stage, int dp_index, int tp_index, int tp, int dp) {
  return tp_index + tp * dp_index + tp * dp * stage;
}

/// Ranks fill nodes in order, `gpus_per_node` at a time.
inline int node_of_rank(int rank, int gpus_per_node) { return rank / gpus_per_node; }

}  // namespace fasop
