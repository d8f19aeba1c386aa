#pragma once
// Megatron-Core's MoE token dispatchers: how a plan moves each token to its experts' GPUs and
// back. Plan files, validation cases and the CLI name one; profiles/moe_dispatch.h prices it.
#include <optional>
#include <string>
#include <vector>

#include "specs/yaml_field.h"

namespace fasop {

/// A token dispatcher, as Megatron-LM's --moe-token-dispatcher-type (and, for flex, its
/// --moe-flex-dispatcher-backend) selects it.
enum class MoeDispatcher {
  kAlltoall,   ///< alltoall: one row per (token, expert) sent over NCCL's all-to-all
  kAllgather,  ///< allgather: every token gathered over the ep group, each rank keeps its own
  kDeepep,     ///< flex + DeepEP: one copy per destination GPU, one RDMA copy per destination node
  kHybridep,   ///< flex + HybridEP: DeepEP's copies, permutation fused into the kernels
};

/// Every dispatcher, in the order --help lists them.
const std::vector<MoeDispatcher>& moe_dispatchers();

/// "alltoall", "allgather", "deepep", "hybridep": the spelling of plan files and flags.
const char* moe_dispatcher_name(MoeDispatcher dispatcher);

/// The dispatcher named `name`, or nothing.
std::optional<MoeDispatcher> parse_moe_dispatcher(const std::string& name);

/// Their names, in that order.
std::vector<std::string> moe_dispatcher_names();

/// "alltoall, allgather, deepep or hybridep", for messages and --help.
std::string moe_dispatcher_choices();

/// Its key in plan files and validation cases' plan blocks (Megatron-LM's flag's name):
/// alltoall where left out.
constexpr const char* kMoeDispatcherKey = "moe_token_dispatcher";

/// Reads kMoeDispatcherKey from `block` into `dispatcher` where given; a name it does not know
/// fails naming the choices.
void read_moe_dispatcher(const Field& block, MoeDispatcher& dispatcher);

/// "moe_token_dispatcher: hybridep\n" where `dispatcher` is not alltoall; "" otherwise.
std::string moe_dispatcher_yaml(MoeDispatcher dispatcher);

/// Whether a layout at expert-parallel degree `ep` is tried with `dispatcher`: at ep 1 no token
/// leaves its GPU, and alltoall stands for every dispatcher.
inline bool tried_at_ep(MoeDispatcher dispatcher, int ep) {
  return dispatcher == MoeDispatcher::kAlltoall || ep > 1;
}

/// Whether Megatron-Core runs it as the flex dispatcher (a DeepEP or HybridEP backend).
inline bool is_flex(MoeDispatcher dispatcher) {
  return dispatcher == MoeDispatcher::kDeepep || dispatcher == MoeDispatcher::kHybridep;
}

}  // namespace fasop
