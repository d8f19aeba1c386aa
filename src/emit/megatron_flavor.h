#pragma once
// Which Megatron-LM a plan's arguments are written for.
#include <string>

namespace fasop {

/// Which Megatron-LM the arguments are for; they differ in how an uneven partition is written.
enum class MegatronFlavor {
  /// NVIDIA/Megatron-LM as of 2025-2026 (megatron/training/arguments.py): the partition as
  /// --pipeline-model-parallel-layout, e.g. "Et*17|t*15|t*16L"; no T5 pipelines.
  kUpstream,
  /// FASOP's fork (AvatarHwang/FASOP, Megatron-LM-2/): the partition as --balance "17-15-16",
  /// transformer layers per stage, T5's with --pipeline-model-parallel-split-rank. The fork
  /// predates --swiglu, RMSNorm, GQA, untied heads, context and expert parallelism, top-k
  /// mixtures of experts and the fp8 recipes (--fp8-format/--fp8-recipe).
  kFasop,
};

/// Which sharding Megatron-LM runs a ZeRO-3 plan with; both gather each layer's parameters
/// before its forward and backward and reduce-scatter its gradients, as the cost model prices.
enum class FsdpImpl {
  /// Megatron-FSDP (--use-megatron-fsdp, its optim_grads_params strategy): any pp, experts
  /// sharded over their own group.
  kMegatron,
  /// PyTorch's FSDP2 (--use-torch-fsdp2: fully_shard on every transformer layer); Megatron-LM
  /// runs it without pipeline or expert parallelism and with an untied output layer.
  kTorch,
};

/// The FSDP implementation the command line names: "torch" or "megatron" (checked by the option).
inline FsdpImpl fsdp_impl_named(const std::string& name) { return name == "torch" ? FsdpImpl::kTorch : FsdpImpl::kMegatron; }

}  // namespace fasop
