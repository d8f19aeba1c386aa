#pragma once
#include <CLI/CLI.hpp>

#include "specs/execution.h"
#include "cli/fasop_flags.h"

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "costmodel/fasop_policy.h"
#include "costmodel/run_length.h"
#include "search/search.h"
#include "specs/cluster_spec.h"
#include "specs/model_spec.h"
#include "specs/profile_spec.h"

namespace fasop {

/// The options `search` and `estimate` share: which model, cluster and profiles.
struct PlannerOptions {
  std::string model;
  std::string cluster;
  std::string profile_dir;
  bool heterogeneous = false;
  bool pareto = false;  ///< set by `search --pareto`: the default cluster is the model's inventory
  double iterations = 0;  ///< --steps: steps of the training run; 0: from --train-tokens or the model
  double train_tokens = 0;  ///< --train-tokens: tokens of the training run; 0: the model's
  std::string deadline;     ///< --deadline: wall-clock budget of the whole run ("14d"); empty: none
  int global_batch = 0;     ///< --global-batch: sequences a step, over the model's; 0: the model's
  int seq_length = 0;       ///< --seq-length: tokens a sequence, over the model's; 0: the model's
  bool quiet = false;
  // The cost model and the space beyond FASOP's.
  std::string policy = "auto";          ///< fasop, analytic, or auto: fasop unless the cluster specifies its GPUs
  std::vector<int> zero_stages;         ///< ZeRO stages to search (analytic); empty: 0-3
  std::vector<std::string> recompute;   ///< none, selective and/or full (analytic); empty: none and full
  std::vector<std::string> recompute_modules;  ///< what selective recomputes (Megatron-Core's names); empty: core_attn
  bool sequence_parallel = false;       ///< also try sequence parallelism (analytic)
  std::vector<int> virtual_stages;      ///< interleaved 1F1B's virtual stages to try (analytic); empty: 1
  int max_tp = 0;                       ///< 0: FASOP's 4 (fasop) or the GPUs in a node (analytic)
  std::string placements;               ///< cyclic or blocks; empty: the policy's default
  bool no_overlap = false;              ///< the DP all-reduce does not overlap the backward pass
  bool tp_comm_overlap = false;         ///< tensor-parallel communication overlaps the GEMMs (analytic profiles)
  bool ep_comm_overlap = false;         ///< MoE all-to-alls overlap another micro-batch's compute (analytic profiles)
  bool cuda_graphs = false;             ///< each layer's passes replayed as CUDA graphs (Megatron's --cuda-graph-impl local)
  std::vector<std::string> moe_dispatchers;  ///< MoE token dispatchers to try (specs/moe_dispatcher.h's names; none: alltoall)
  bool grad_reduce_in_bf16 = false;     ///< gradients kept and reduced in bf16 (Megatron's --grad-reduce-in-bf16)
  bool analytic_profiles = false;       ///< time layers analytically even where a measured profile exists
  bool assume_defaults = false;         ///< plan GPUs without data with default shares of peak (stated)
  bool overlap_param_gather = false;    ///< the distributed optimizer's all-gather overlaps the next forward
  std::string stack;                    ///< analytic: the training stack memory is priced for; empty: megatron
  std::string memory_headroom;          ///< analytic: what each GPU keeps free ("5%" or GiB); empty: 5%
  std::vector<std::string> fix;         ///< search --fix: KEY=VALUE degrees the search keeps
  FasopFlags fasop;                     ///< FASOP.py's --gpu_per_node and --precision

  /// Adds the options; `model_required` false where another option (estimate --plan) may name it.
  void add_to(CLI::App& command, bool model_required = true);
};

/// Specs loaded for one run; keeps what SearchInput points into alive.
struct PlannerSetup {
  ModelSpec model;
  ClusterSpec cluster;
  std::string cluster_ref;   ///< the cluster preset or file, as given or as the model's default
  std::string policy_name;   ///< fasop or analytic, as resolved from the options
  std::vector<ProfileSpec> profile_storage;
  std::deque<ProfileSpec> parallel_profile_storage;  ///< input.parallel_profiles' (stable addresses)
  std::deque<ModelSpec> precision_model_storage;     ///< input.precision_models'
  /// The precisions `--precision NAME,...` asks the search to try (empty: the model's own).
  std::vector<std::string> search_precisions;
  std::unique_ptr<CostPolicy> policy;
  SearchInput input;
  RunLength run;               ///< the training run's steps (input.iterations) and their source
  double deadline_s = 0;       ///< --deadline in seconds; 0: none
  int model_file_sequence = 0; ///< the sequence the model file gives, at which measured profiles time
  std::string profile_notes;   ///< lines on layers timed otherwise than the options say (--seq-length)

  /// Loads the model, the cluster and a profile for every node type that has nodes.
  static std::unique_ptr<PlannerSetup> load(const PlannerOptions& options);
  /// Loads the model and cluster only; load_profiles() must follow.
  static std::unique_ptr<PlannerSetup> load_specs(const PlannerOptions& options);
  /// --nodes TYPE=N: the cluster cut to that shape, the types not named given none; the counts
  /// of each node type the cluster then has (its own where `nodes` is empty).
  std::vector<int> shape_to_nodes(const std::vector<std::string>& nodes);
  /// Loads a profile for every node type whose count in `counts` is positive: a measured one
  /// where there is one, else (for a node type that gives its GPU's specs) an analytic one.
  /// `key`, where given, sets the layers' context and expert parallelism (PlanKey::cp, ep, etp),
  /// which only analytic profiles time.
  void load_profiles(const PlannerOptions& options, const std::vector<int>& counts, const PlanKey* key = nullptr);
  /// Loads input.parallel_profiles (and input.precision_models): for every precision, cp and ep
  /// of the search space but the model's own at (1, 1), an analytic profile per node type whose
  /// count in `counts` is positive.
  void load_parallel_profiles(const PlannerOptions& options, const std::vector<int>& counts);
  /// Whether every node type with nodes in `counts` is timed analytically (no measured profile,
  /// or --analytic-profiles), as context and expert parallelism need.
  bool all_analytic(const PlannerOptions& options, const std::vector<int>& counts) const;
  /// Whether `node`'s layers are timed by its measured profile (where it has one) rather than
  /// from its GPU's data (--analytic-profiles, --seq-length, --stack torchtitan).
  bool uses_measured_profile(const PlannerOptions& options, const NodeType& node, bool has_measured) const;
  /// The first node type with nodes in `counts` whose GPU does not train in `dtype`
  /// (GpuSpec::runs_precision); null where every one does.
  const NodeType* node_type_without(const std::vector<int>& counts, const std::string& dtype) const;
};

/// The run's facts as the report's header lines: the model (parameters, sequence, global batch),
/// the cluster (nodes, GPUs, price) and the run's length and deadline, each with the flag that
/// changes it.
std::string run_header_lines(const PlannerSetup& setup);

/// The step-time limit a --deadline sets: the deadline over the run's steps (infinity: none).
double deadline_step_limit_s(const PlannerSetup& setup);

/// The memory model's assumptions as one line of output, "memory: Megatron-Core as it allocates, 5%
/// of each GPU kept free (--stack, --memory-headroom)"; "" under the fasop policy.
std::string memory_assumptions_line(const PlannerOptions& options, const PlannerSetup& setup);

/// For a MoE model under the analytic policy, `chosen`'s token dispatcher, the others the search
/// tried and the routing's group limit as one line, "MoE: tokens dispatched by alltoall (...)
/// (--moe-dispatcher)"; "" otherwise.
std::string moe_dispatch_line(const PlannerSetup& setup, const PlanKey& chosen);

/// The dispatchers `names` gives (--moe-dispatcher; CLI11 checked them), each once in
/// moe_dispatchers()' order; alltoall where none is given.
std::vector<MoeDispatcher> moe_dispatchers_named(const std::vector<std::string>& names);

/// The communication switches the options' flags ask for (--no-overlap, --overlap-param-gather,
/// --tp-comm-overlap, --ep-comm-overlap, --grad-reduce-in-bf16); the others at their defaults.
Execution execution_of(const PlannerOptions& options);
/// The flags that ask for `execution` (a saved plan's, re-estimated).
void set_execution_flags(PlannerOptions& options, const Execution& execution);

/// Whether `key`'s layers need analytic layer times: context or expert parallelism, or a
/// precision of its own, which no measured profile has.
inline bool needs_analytic_layers(const PlanKey& key) {
  return key.cp > 1 || key.ep > 1 || key.etp > 1 || !key.precision.empty() ||
         key.moe_dispatcher != MoeDispatcher::kAlltoall;
}

/// Why a GPU does not train in `dtype`, for messages: "its data lists no dense fp8 peak" (and for
/// mxfp8 "or MXFP8 efficiency", nvfp4 "or NVFP4 efficiency").
std::string missing_precision_text(const std::string& dtype);

/// `counts` with each TYPE=N of `specs` applied (TYPE: a node type's name or its GPU), for
/// --max-nodes and --nodes; `option` names the option in messages. At least one count must
/// stay positive.
std::vector<int> apply_node_counts(const ClusterSpec& cluster, const std::string& option,
                                   const std::vector<std::string>& specs, std::vector<int> counts);

/// A CLI11 check: a finite positive number (NaN and infinity refused, as CLI's PositiveNumber
/// lets NaN through), its unit named in the message.
CLI::Validator positive_number(const std::string& what);
/// A CLI11 check: a whole number of `what` (empty: a whole number), `least` or more ("must be
/// a whole number of plans, 0 or more, got 'abc'"), where CLI11's own checks print a range up
/// to 1.8e308.
CLI::Validator whole_number(const std::string& what, long long least);
/// A CLI11 check: a number of `what`, 0 or more (NaN and infinity refused).
CLI::Validator non_negative_number(const std::string& what);
/// A CLI11 check: a percentage from 0 to under 100 (NaN refused).
CLI::Validator percentage_below_100();

}  // namespace fasop
