#include "cli/planner_options.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "costmodel/analytic_policy.h"
#include "costmodel/parallel_dims_checks.h"
#include "profiles/analytic_profile.h"
#include "search/cluster_shapes.h"
#include "search/search_space.h"
#include "specs/assumed_gpu_data.h"
#include "specs/precision.h"
#include "specs/preset_catalog.h"
#include "specs/spec_error.h"
#include "specs/spec_store.h"

namespace fasop {

static std::string lower_case(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

namespace {

/// A CLI11 check: the whole value is a number that `accepts`; else "must be <what>, got '...'".
template <typename Accepts>
CLI::Validator number_check(const std::string& what, const std::string& name, Accepts accepts) {
  return CLI::Validator(
      [what, accepts](std::string& value) {
        try {
          size_t used = 0;
          const double v = std::stod(value, &used);
          if (used == value.size() && accepts(v)) return std::string();
        } catch (const std::exception&) {
        }
        return "must be " + what + ", got '" + value + "'";
      },
      name);
}

}  // namespace

CLI::Validator positive_number(const std::string& what) {
  return number_check("a positive number of " + what, "POSITIVE", [](double v) { return v > 0 && std::isfinite(v); });
}

CLI::Validator whole_number(const std::string& what, long long least) {
  return number_check("a whole number" + (what.empty() ? "" : " of " + what) + ", " + std::to_string(least) + " or more", "N",
                      [least](double v) { return v >= double(least) && v == std::floor(v) && v < 9e15; });
}

CLI::Validator non_negative_number(const std::string& what) {
  return number_check("a number of " + what + ", 0 or more", "NUMBER", [](double v) { return v >= 0 && std::isfinite(v); });
}

CLI::Validator percentage_below_100() {
  return number_check("a percentage from 0 to under 100, e.g. 5", "PCT", [](double v) { return v >= 0 && v < 100; });
}

namespace {

/// The shipped presets of `kind`, "bert, deepseek-v3, ...", for the options' help.
std::string preset_names_text(const std::string& kind) {
  std::string names;
  for (const PresetEntry& entry : preset_catalog(embedded_presets()))
    if (entry.kind == kind) names += (names.empty() ? "" : ", ") + entry.name;
  return names;
}

}  // namespace

void PlannerOptions::add_to(CLI::App& command, bool model_required) {
  auto* model_option = command.add_option("--model,--type", model,
                                          "model preset (" + preset_names_text("model") +
                                              "; FASOP's gpt2XL, T5 too) or YAML file");
  if (model_required) model_option->required();
  command.add_option("--cluster", cluster,
                     "cluster preset (" + preset_names_text("cluster") +
                         ") or YAML file; default: the model's (FASOP's cluster for FASOP's models)");
  command.add_flag("--heterogeneous", heterogeneous,
                   "use FASOP's heterogeneous cluster (1 A100 node, the rest A10) and name the report so");
  command.add_option("--profile-dir", profile_dir,
                     "directory of profiles <model>_<gpu>.yaml that override the shipped ones");
  command.add_option("--iterations,--iter,--steps", iterations,
                     "training steps of the whole run, as priced (default: the model's train_tokens or train_steps, "
                     "else 20 tokens a parameter; the report says which)")
      ->check(positive_number("steps"));
  command.add_option("--train-tokens", train_tokens, "tokens of the whole run, e.g. 15e12 (the steps follow the batch)")
      ->check(positive_number("tokens"));
  command.add_option("--deadline", deadline,
                     "wall-clock budget of the whole run, e.g. 14d, 336h, 2w: keeps plans whose steps all finish in "
                     "it (search) or says whether the plan does (estimate)")
      ->type_name("DURATION");
  command.add_option("--global-batch", global_batch, "sequences a step, over the model file's global_batch")
      ->check(whole_number("sequences", 1));
  command.add_option("--seq-length", seq_length, "tokens a sequence, over the model file's sequence")
      ->check(whole_number("tokens", 1));
  command.add_flag("--quiet,-q", quiet, "no progress on stderr");
  command.add_option("--policy", policy,
                     "cost model: fasop (FASOP's formulas and space), analytic (alpha-beta network, per-stage GPU "
                     "types, ZeRO, recomputation, memory-feasible partitions), auto (default: fasop unless the "
                     "cluster gives its GPUs' specs)")
      ->check(CLI::IsMember({"auto", "fasop", "analytic"}));
  command.add_option("--zero", zero_stages, "analytic: ZeRO stages to search, e.g. 0,1 (default 0,1,2,3)")
      ->delimiter(',')->check(CLI::Range(0, 3));
  command.add_option("--recompute", recompute,
                     "analytic: activation recomputation to search: none,selective,full (default none,full)")
      ->delimiter(',')->check(CLI::IsMember({"none", "selective", "full"}));
  command.add_option("--recompute-modules", recompute_modules,
                     "analytic: what selective recomputation recomputes, Megatron-Core's --recompute-modules, e.g. "
                     "mla_up_proj,moe_act (of " + std::string(recompute_module_choices()) +
                         "; default core_attn); the search tries selective recomputation with them")
      ->delimiter(',')->check(CLI::IsMember(recompute_module_names(~0u)));
  command.add_flag("--sequence-parallel", sequence_parallel,
                   "analytic: also try Megatron-LM's sequence parallelism where tp > 1");
  command.add_option("--virtual-stages", virtual_stages,
                     "analytic: interleaved 1F1B's virtual stages a rank to search, e.g. 1,2 (default 1)")
      ->delimiter(',')->check(whole_number("virtual stages", 1));
  command.add_option("--max-tp", max_tp, "largest tensor-parallel degree (default: FASOP's 4, analytic: a node)")
      ->check(whole_number("GPUs", 1));
  command.add_option("--placements", placements,
                     "node orders: cyclic (FASOP's rotations) or blocks (each order of node types; analytic default)")
      ->check(CLI::IsMember({"cyclic", "blocks"}));
  command.add_flag("--no-overlap", no_overlap, "analytic: the DP all-reduce does not overlap the last backward pass");
  command.add_flag("--overlap-param-gather", overlap_param_gather,
                   "analytic: the distributed optimizer's parameter all-gather overlaps the next step's forward "
                   "pass (Megatron-LM's --overlap-param-gather)");
  command.add_flag("--tp-comm-overlap", tp_comm_overlap,
                   "analytic: tensor-parallel communication overlaps the GEMMs (Megatron-LM's --tp-comm-overlap)");
  command.add_flag("--ep-comm-overlap", ep_comm_overlap,
                   "analytic: MoE all-to-alls run beside another micro-batch's compute (Megatron-Core's "
                   "--overlap-moe-expert-parallel-comm); with ep > 1 it needs virtual stages where pp > 1 and no "
                   "full recomputation, and the search keeps only such layouts");
  command.add_option("--moe-dispatcher", moe_dispatchers,
                     "analytic: Megatron-Core's MoE token dispatchers to try where ep > 1, of " + moe_dispatcher_choices() +
                         ", e.g. alltoall,hybridep (default alltoall; deepep and hybridep are --moe-token-dispatcher-type "
                         "flex with that --moe-flex-dispatcher-backend): DeepEP and HybridEP send a token once per "
                         "destination GPU and once per destination node over the network, alltoall once per chosen "
                         "expert (docs/cost-model.md#moe-token-dispatch); the search tries each where Megatron-Core "
                         "and DeepEP run it, estimate takes one")
      ->delimiter(',')
      ->check(CLI::IsMember(moe_dispatcher_names()));
  command.add_flag("--cuda-graphs", cuda_graphs,
                   "analytic: each transformer layer's forward and backward replayed as a CUDA graph, the host "
                   "launching one graph a pass instead of its kernels (Megatron-LM's --cuda-graph-impl local); a "
                   "MoE model needs token dropping padded to capacity");
  command.add_flag("--grad-reduce-in-bf16", grad_reduce_in_bf16,
                   "analytic: bf16 and fp8 training keep and reduce their gradients in bf16, 2 bytes a parameter "
                   "instead of fp32's 4 (Megatron-LM's --grad-reduce-in-bf16, as Megatron-Bridge's recipes run)");
  command.add_option("--stack", stack,
                     "analytic: the framework that runs the plan, as its memory and layers are priced: megatron "
                     "(Megatron-Core: Megatron-LM, NeMo; default), torchtitan (PyTorch FSDP2, eager blocks, per-op "
                     "selective checkpointing, PyTorch SDPA attention and ring attention; the search then shards "
                     "with ZeRO-3 alone) or deepspeed (ZeRO 0-3)");
  command.add_option("--memory-headroom", memory_headroom,
                     "analytic: memory every GPU keeps free beyond the plan's predicted peak, a share of it (5%) or "
                     "GiB (4); default 5%, which covers the memory model's error (docs/memory.md)");
  command.add_flag("--analytic-profiles", analytic_profiles,
                   "time the layers with the analytic model from the GPU's data even where a measured profile "
                   "exists (which context and expert parallelism need)");
  command.add_flag("--assume-defaults", assume_defaults,
                   "plan GPUs that have no shipped data (configs/gpus/) and whose cluster file gives only their peaks "
                   "with default shares of peak, which the report then states (without it they are refused)");
  fasop.add_to(command);
}

std::vector<int> apply_node_counts(const ClusterSpec& cluster, const std::string& option,
                                   const std::vector<std::string>& specs, std::vector<int> counts) {
  for (const std::string& spec : specs) {
    size_t eq = spec.find('=');
    std::string type_name = spec.substr(0, eq);
    int type = cluster.find_node_type(type_name);
    for (size_t t = 0; type < 0 && t < cluster.node_types.size(); ++t)
      if (cluster.node_types[t].gpu == type_name) type = static_cast<int>(t);
    if (type < 0) {
      std::string known;
      for (const NodeType& t : cluster.node_types) known += (known.empty() ? "" : ", ") + t.name + " (" + t.gpu + ")";
      throw SpecError(option + " " + spec + ": cluster '" + cluster.name + "' (" + cluster.source +
                      ") has no node type '" + type_name + "'; its node types: " + known);
    }
    size_t used = 0;
    int count = -1;
    try {
      count = eq == std::string::npos ? -1 : std::stoi(spec.substr(eq + 1), &used);
    } catch (const std::exception&) {
    }
    if (count < 0 || used != spec.size() - eq - 1)
      throw SpecError(option + " " + spec + ": expected TYPE=N with N a whole number >= 0, e.g. " +
                      cluster.node_types[type].gpu + "=4");
    counts[type] = count;
  }
  bool any = false;
  for (int c : counts) any = any || c > 0;
  if (!any) throw SpecError(option + ": every node type has 0 nodes; give at least one a node");
  return counts;
}


namespace {

bool cluster_gives_gpu_specs(const ClusterSpec& cluster) {
  for (const NodeType& type : cluster.node_types)
    if (type.has_gpu_spec()) return true;
  return false;
}


/// --fix KEY=VALUE,...: the degrees the search keeps (tp, dp, pp, mbs) and the ZeRO stage and
/// recomputation it tries.
void apply_fixed_dims(const std::vector<std::string>& fix, SearchSpaceOptions& space) {
  std::map<std::string, std::string> given;  // key -> the item that fixed it
  for (const std::string& item : fix) {
    size_t eq = item.find('=');
    std::string key = item.substr(0, eq), value = eq == std::string::npos ? "" : item.substr(eq + 1);
    if (auto [at, fresh] = given.emplace(key, item); !fresh)
      throw SpecError("--fix " + item + ": " + key + " is fixed twice (also " + at->second + "); keep one");
    if (key == "recompute") {
      std::optional<RecomputeMode> mode = recompute_mode_named(value);
      if (!mode) throw SpecError("--fix " + item + ": recompute is none, selective or full");
      space.recompute = {*mode};
      continue;
    }
    if (key == "sp") {
      if (value != "on" && value != "off") throw SpecError("--fix " + item + ": sp is on or off");
      space.sequence_parallel = {value == "on"};
      continue;
    }
    int number = -1;
    try {
      size_t used = 0;
      number = std::stoi(value, &used);
      if (used != value.size()) number = -1;
    } catch (const std::exception&) {
    }
    if (key == "zero") {
      if (number < 0 || number > 3) throw SpecError("--fix " + item + ": zero is 0, 1, 2 or 3");
      space.zero_stages = {number};
      continue;
    }
    if (key == "vpp") {
      if (number < 1) throw SpecError("--fix " + item + ": vpp is a whole number of virtual stages, 1 or more");
      space.virtual_stages = {number};
      continue;
    }
    int* slot = nullptr;
    std::string names;
    for (const FixedDimField& field : fixed_dim_fields()) {
      if (key == field.name) slot = &(space.fixed.*field.value);
      names += std::string(field.name) + ", ";
    }
    if (!slot)
      throw SpecError("--fix " + item + ": unknown degree '" + key + "'; use " + names + "zero, recompute, sp or vpp");
    if (number <= 0) throw SpecError("--fix " + item + ": expected " + key + "=N with N a positive whole number");
    *slot = number;
  }
}

/// The training stack --stack names (Megatron-Core where none).
MemorySettings memory_settings_of(const PlannerOptions& options) {
  MemorySettings settings;
  if (options.stack.empty()) return settings;
  const std::optional<TrainingStack> stack = training_stack_named(options.stack);
  if (!stack)
    throw SpecError("--stack " + options.stack + ": unknown training stack; use " + training_stack_choices());
  settings.stack = *stack;
  return settings;
}

/// The headroom --memory-headroom asks for (5% where none), checked against the cluster's GPUs.
MemoryHeadroom memory_headroom_of(const PlannerOptions& options, const ClusterSpec& cluster) {
  if (options.memory_headroom.empty()) return MemoryHeadroom{};
  double smallest_gib = 0;
  for (const NodeType& type : cluster.node_types)
    if (smallest_gib == 0 || type.gpu_memory_gib < smallest_gib) smallest_gib = type.gpu_memory_gib;
  std::string problem;
  const std::optional<MemoryHeadroom> headroom = parse_memory_headroom(options.memory_headroom, smallest_gib, &problem);
  if (!headroom) throw SpecError("--memory-headroom " + options.memory_headroom + ": " + problem);
  return *headroom;
}

/// The cost policy and search space the options ask for.
void choose_policy(const PlannerOptions& options, PlannerSetup& setup) {
  std::string policy = options.policy;
  if (policy == "auto") policy = cluster_gives_gpu_specs(setup.cluster) ? "analytic" : "fasop";
  setup.policy_name = policy;
  if (policy == "fasop") {
    if (!options.recompute_modules.empty())
      throw SpecError("--recompute-modules: the fasop policy prices no selective recomputation; use --policy analytic");
    if (options.grad_reduce_in_bf16)
      throw SpecError("--grad-reduce-in-bf16: the fasop policy prices FASOP's fixed gradient bytes; use --policy analytic");
    if (!options.stack.empty() || !options.memory_headroom.empty())
      throw SpecError(std::string(options.stack.empty() ? "--memory-headroom" : "--stack") +
                      ": the fasop policy checks memory as FASOP does (its 18 bytes a parameter and margin); use "
                      "--policy analytic");
    if (!setup.cluster.uniform_gpus_per_node())
      throw SpecError(setup.cluster.source + ": field 'node_types': the fasop policy needs one GPUs-per-node count "
                      "for every node type; use --policy analytic (and give the GPUs' specs)");
    setup.policy = std::make_unique<FasopPolicy>();
    setup.input.space = SearchSpaceOptions();
  } else {
    AnalyticOptions analytic;
    analytic.execution = execution_of(options);
    analytic.memory = memory_settings_of(options);
    analytic.headroom = memory_headroom_of(options, setup.cluster);
    setup.policy = std::make_unique<AnalyticPolicy>(analytic);
    setup.input.space = SearchSpaceOptions::beyond_fasop();
    setup.input.memory_aware = true;
    setup.input.refine_top = 5;
    if (!options.zero_stages.empty()) setup.input.space.zero_stages = options.zero_stages;
    if (analytic.memory.stack == TrainingStack::kTorchtitan) {
      // torchtitan shards with FSDP2, ZeRO-3's parameters, gradients and optimizer state.
      if (std::any_of(options.zero_stages.begin(), options.zero_stages.end(), [](int zero) { return zero != 3; }))
        throw SpecError("--zero: torchtitan shards everything with FSDP (ZeRO-3); pass --zero 3 or drop it");
      if (!options.recompute_modules.empty())
        throw SpecError("--recompute-modules: torchtitan's selective recomputation is per op, not Megatron-Core's "
                        "modules; drop it (--recompute selective is torchtitan's)");
      // Its asynchronous tp runs only compiled (compile.enable_async_tensor_parallel), and the
      // search prices its eager blocks.
      if (options.tp_comm_overlap)
        throw SpecError("--tp-comm-overlap: torchtitan overlaps tp only with torch.compile (its async tp), and "
                        "--stack torchtitan prices its eager blocks; drop the flag");
      setup.input.space.zero_stages = {3};
    }
    if (!options.recompute.empty()) {
      setup.input.space.recompute.clear();
      // CLI11 admits only none, selective and full.
      for (const std::string& r : options.recompute) setup.input.space.recompute.push_back(*recompute_mode_named(r));
    }
    if (!options.recompute_modules.empty()) {
      // CLI11 admits only the modules' names.
      setup.input.space.recompute_modules = *recompute_modules_named(options.recompute_modules, nullptr);
      std::vector<RecomputeMode>& modes = setup.input.space.recompute;
      if (std::find(modes.begin(), modes.end(), RecomputeMode::kSelective) == modes.end()) {
        if (!options.recompute.empty())
          throw SpecError("--recompute-modules: names what selective recomputation recomputes, but --recompute "
                          "leaves selective out; pass selective in --recompute");
        modes.push_back(RecomputeMode::kSelective);
      }
      if (const std::string fault = recompute_modules_fault(setup.model, setup.input.space.recompute_modules);
          !fault.empty())
        throw SpecError("--recompute-modules: " + fault);
    }
    if (options.sequence_parallel) setup.input.space.sequence_parallel = {false, true};
    if (!options.virtual_stages.empty()) setup.input.space.virtual_stages = options.virtual_stages;
    setup.input.space.ep_comm_overlap = options.ep_comm_overlap;
    setup.input.space.moe_dispatchers = moe_dispatchers_named(options.moe_dispatchers);
    if (options.cuda_graphs)
      if (std::string fault = cuda_graph_fault(setup.model); !fault.empty()) throw SpecError(fault);
    // A dense model's layouts all have ep 1, where the search tries alltoall alone: refuse the
    // others here, as moe_dispatcher_fault words it, rather than drop them unsaid.
    for (MoeDispatcher dispatcher : setup.input.space.moe_dispatchers) {
      PlanKey probe;
      probe.moe_dispatcher = dispatcher;
      if (std::string fault = moe_dispatcher_fault(setup.model, setup.cluster, probe);
          !fault.empty() && !setup.model.moe.enabled())
        throw SpecError(fault);
    }
    if (options.grad_reduce_in_bf16) {
      const std::vector<std::string>& named = options.fasop.precision_names;
      const std::vector<std::string> trained = named.empty() ? std::vector<std::string>{setup.model.dtype} : named;
      if (std::none_of(trained.begin(), trained.end(), has_bf16_gradients))
        throw SpecError("--grad-reduce-in-bf16: model '" + setup.model.name + "' " + no_bf16_gradients_text(trained.front()) +
                        "; pass --precision bf16 (or fp8), or drop the flag");
      setup.model.grad_reduce_in_bf16 = true;
    }
  }
  if (options.max_tp > 0) setup.input.space.max_tp = options.max_tp;
  apply_fixed_dims(options.fix, setup.input.space);
  if (options.placements == "cyclic") setup.input.space.placements = PlacementKind::kCyclic;
  if (options.placements == "blocks") setup.input.space.placements = PlacementKind::kTypeBlocks;
  setup.input.policy = setup.policy.get();
}


}  // namespace

std::string memory_assumptions_line(const PlannerOptions& options, const PlannerSetup& setup) {
  if (setup.policy_name != "analytic") return "";
  const MemorySettings settings = memory_settings_of(options);
  const char* stack = settings.stack == TrainingStack::kTorchtitan
                          ? "PyTorch FSDP2 as torchtitan allocates and runs it (blocks eager, selective per op, PyTorch SDPA "
                            "attention, PyTorch's ring for cp)"
                      : settings.stack == TrainingStack::kDeepSpeed ? "DeepSpeed's ZeRO as it allocates"
                                                                      : "Megatron-Core as it allocates";
  return std::string("memory: ") + stack + ", " + memory_headroom_of(options, setup.cluster).text() +
         " of each GPU kept free (--stack, --memory-headroom)\n";
}

std::vector<MoeDispatcher> moe_dispatchers_named(const std::vector<std::string>& names) {
  std::vector<MoeDispatcher> chosen;
  for (MoeDispatcher dispatcher : moe_dispatchers())
    if (std::find(names.begin(), names.end(), moe_dispatcher_name(dispatcher)) != names.end()) chosen.push_back(dispatcher);
  return chosen.empty() ? std::vector<MoeDispatcher>{MoeDispatcher::kAlltoall} : chosen;
}

std::string moe_dispatch_line(const PlannerSetup& setup, const PlanKey& chosen) {
  if (setup.policy_name != "analytic" || !setup.model.moe.enabled()) return "";
  const MoeDispatcher dispatcher = chosen.ep > 1 ? chosen.moe_dispatcher : MoeDispatcher::kAlltoall;
  const std::vector<MoeDispatcher>& searched = setup.input.space.moe_dispatchers;
  std::string tried;  // named only where the search had a choice
  if (searched.size() > 1)
    for (MoeDispatcher other : searched) tried += std::string(tried.empty() ? "" : ", ") + moe_dispatcher_name(other);
  const MoeSpec& moe = setup.model.moe;
  return std::string("MoE: tokens dispatched by ") + moe_dispatcher_name(dispatcher) +
         (is_flex(dispatcher) ? " (once per destination GPU, once per destination node over the network)"
          : dispatcher == MoeDispatcher::kAlltoall ? " (once per chosen expert; deepep or hybridep send fewer copies)"
                                                   : " (every token to every GPU of the group)") +
         (tried.empty() ? "" : "; tried " + tried) +
         (moe.group_limited() ? "; routing limited to " + std::to_string(moe.router_group_topk) + " of " +
                                    std::to_string(moe.router_groups) + " expert groups"
                              : "") +
         " (--moe-dispatcher)\n";
}

namespace {

/// --global-batch and --seq-length over the model file's.
void apply_what_ifs(const PlannerOptions& options, PlannerSetup& setup) {
  setup.model_file_sequence = setup.model.sequence;
  if (options.global_batch > 0) setup.model.global_batch = options.global_batch;
  if (options.seq_length > 0) setup.model.sequence = options.seq_length;
}

}  // namespace

std::string run_header_lines(const PlannerSetup& setup) {
  const ModelSpec& model = setup.model;
  const ClusterSpec& cluster = setup.cluster;
  std::string gpus;
  for (size_t type = 0; type < cluster.node_types.size(); ++type) {
    const int nodes = cluster.node_count(int(type));
    if (nodes == 0) continue;
    const NodeType& node = cluster.node_types[type];
    gpus += std::string(gpus.empty() ? "" : ", ") + std::to_string(nodes) + " x " + node.name + " (" +
            std::to_string(node.gpus_per_node) + " x " + node.gpu + ")";
  }
  char price[64];
  std::snprintf(price, sizeof price, "$%.2f/h", cluster.price_usd_per_s() * 3600);
  std::string text = "model " + model.name + ": " + short_count(model_parameters(model)) + " parameters, " +
                     std::to_string(model.num_transformer_layers()) + " layers, sequence " + std::to_string(model.sequence) +
                     ", global batch " + std::to_string(model.global_batch) + ", " + model.dtype +
                     " (--seq-length, --global-batch, --precision)\n";
  text += "cluster " + cluster.name + ": " + std::to_string(cluster.num_gpus()) + " GPUs on " + gpus + ", " + price +
          " (--cluster, --nodes)\n";
  text += "run: " + run_length_text(model, setup.run);
  if (setup.deadline_s > 0) {
    char limit[96];
    std::snprintf(limit, sizeof limit, "; deadline %.4g days: steps of at most %.4g s", setup.deadline_s / 86400,
                  deadline_step_limit_s(setup));
    text += limit;
  }
  return text + "\n" + setup.profile_notes;
}

double deadline_step_limit_s(const PlannerSetup& setup) {
  return setup.deadline_s > 0 ? setup.deadline_s / setup.run.steps : std::numeric_limits<double>::infinity();
}

std::unique_ptr<PlannerSetup> PlannerSetup::load_specs(const PlannerOptions& options) {
  auto setup = std::make_unique<PlannerSetup>();
  DiskSource disk;
  SpecStore store(disk, embedded_presets());
  setup->model = store.load_model(options.model);
  std::string cluster = options.cluster;
  if (cluster.empty()) {
    const char* kind = options.pareto ? "pareto" : options.heterogeneous ? "heterogeneous" : "homogeneous";
    auto preset = setup->model.default_clusters.find(kind);
    if (preset == setup->model.default_clusters.end())
      throw SpecError(setup->model.source + ": field 'default_clusters." + kind +
                      "': missing; pass --cluster");
    cluster = preset->second;
  }
  setup->cluster = store.load_cluster(cluster);
  setup->cluster_ref = cluster;
  if (!options.assume_defaults)
    if (std::string fault = assumed_gpu_data_fault(setup->cluster, "--assume-defaults"); !fault.empty())
      throw SpecError(fault);
  options.fasop.apply(setup->model, setup->cluster, options.pareto);
  setup->input.model = &setup->model;
  setup->input.cluster = &setup->cluster;
  apply_what_ifs(options, *setup);
  setup->run = run_length(setup->model, options.iterations, options.train_tokens);
  setup->input.iterations = setup->run.steps;
  if (!options.deadline.empty()) setup->deadline_s = parse_duration_s(options.deadline, "--deadline");
  choose_policy(options, *setup);
  return setup;
}

namespace {

/// How analytic profiles time a plan's layers: --stack's layers (Megatron-LM's where none),
/// --tp-comm-overlap, and the plan's context and expert parallelism.
LayerOptions profile_layers(const PlannerOptions& options, const PlanKey& split) {
  const LayerOptions megatron{.stack = Stack::kMegatron, .sequence_parallel = false, .execution = execution_of(options)};
  return split_as(with_training_stack(megatron, memory_settings_of(options)), split);
}

/// An analytic profile of `model` on `node` at every tp a node takes and every micro-batch that
/// divides the global batch.
ProfileSpec node_analytic_profile(const ModelSpec& model, const NodeType& node, const LayerOptions& layers) {
  return analytic_profile(model, node, divisors(node.gpus_per_node), divisors(model.global_batch), layers);
}

}  // namespace

std::vector<int> PlannerSetup::shape_to_nodes(const std::vector<std::string>& nodes) {
  std::vector<int> counts = inventory_limits(cluster);
  if (nodes.empty()) return counts;
  counts = apply_node_counts(cluster, "--nodes", nodes, std::vector<int>(counts.size(), 0));
  cluster = shape_cluster(cluster, counts);
  return counts;
}

void PlannerSetup::load_profiles(const PlannerOptions& options, const std::vector<int>& counts, const PlanKey* key) {
  const LayerOptions layers = profile_layers(options, key ? *key : PlanKey{});
  const bool parallel_layers = key && needs_analytic_layers(*key);
  DiskSource disk;
  SpecStore store(disk, embedded_presets());
  // Profiles of node types without nodes are never consulted, and need not exist.
  profile_storage.clear();
  profile_notes.clear();
  profile_storage.reserve(cluster.node_types.size());
  input.profiles.assign(cluster.node_types.size(), nullptr);
  for (size_t type = 0; type < cluster.node_types.size(); ++type) {
    if (counts[type] == 0) continue;
    const NodeType& node = cluster.node_types[type];
    const bool has_measured = store.has_profile(model, node.gpu, options.profile_dir);
    if (!has_measured && !node.has_gpu_spec())
      throw SpecError(cluster.source + ": field 'node_types[" + std::to_string(type) + "].gpu': no layer times for GPU '" +
                      node.gpu + "': no profile " + model.name + "_" + lower_case(node.gpu) +
                      ".yaml (shipped or in --profile-dir) and no peak_tflops and memory_bandwidth_bytes_per_s on "
                      "node type '" + node.name + "'; give those (the analytic model then times the layers), or "
                      "measure a profile with `fasop-cpp profile layers`");
    const bool other_sequence = model.sequence != model_file_sequence;
    const bool measured = uses_measured_profile(options, node, has_measured);
    if (!measured && other_sequence && has_measured)
      profile_notes += "layers on " + node.gpu + ": timed from the GPU's data at sequence " +
                       std::to_string(model.sequence) + ", as the measured profile is at " +
                       std::to_string(model_file_sequence) + " (--seq-length)\n";
    else if (!measured && has_measured && !options.analytic_profiles)
      profile_notes += "layers on " + node.gpu + ": timed from the GPU's data as torchtitan runs them, not by the "
                       "measured profile of fasop-cpp's own layers (--stack torchtitan)\n";
    if (measured && parallel_layers)
      throw SpecError("--cp/--ep/--etp/--precision: the measured profile " + model.name + "_" + lower_case(node.gpu) +
                      ".yaml times layers in the model's precision without context or expert parallelism; pass "
                      "--analytic-profiles to time them from the GPU's data, or use cp, ep and etp 1 and its precision");
    if (measured && other_sequence)
      throw SpecError("--seq-length " + std::to_string(model.sequence) + ": the measured profile " + model.name + "_" +
                      lower_case(node.gpu) + ".yaml times layers at sequence " + std::to_string(model_file_sequence) +
                      "; pass --analytic-profiles (where the cluster gives the GPUs' peaks) or measure a profile at " +
                      std::to_string(model.sequence) + " with `fasop-cpp profile layers`");
    if (measured)
      profile_storage.push_back(store.load_profile(model, node.gpu, options.profile_dir));
    else
      profile_storage.push_back(node_analytic_profile(model, node, layers));
    input.profiles[type] = &profile_storage.back();
  }
}

bool PlannerSetup::uses_measured_profile(const PlannerOptions& options, const NodeType& node, bool has_measured) const {
  // A measured profile times layers at the model file's sequence: at another (--seq-length)
  // the GPU's data times them, where the cluster gives it, and the header says so. It times
  // fasop-cpp's own layers, which torchtitan's blocks (compiled, checkpointed per op, with
  // PyTorch's attention kernels) are not: that stack's layers come from the GPU's data too.
  const bool other_sequence = model.sequence != model_file_sequence;
  const bool torchtitan = memory_settings_of(options).stack == TrainingStack::kTorchtitan;
  return has_measured && !((options.analytic_profiles || other_sequence || torchtitan) && node.has_gpu_spec());
}

bool PlannerSetup::all_analytic(const PlannerOptions& options, const std::vector<int>& counts) const {
  DiskSource disk;
  SpecStore store(disk, embedded_presets());
  for (size_t type = 0; type < cluster.node_types.size(); ++type) {
    const NodeType& node = cluster.node_types[type];
    if (counts[type] == 0) continue;
    if (!node.has_gpu_spec()) return false;
    if (uses_measured_profile(options, node, store.has_profile(model, node.gpu, options.profile_dir))) return false;
  }
  return true;
}

const NodeType* PlannerSetup::node_type_without(const std::vector<int>& counts, const std::string& dtype) const {
  for (size_t type = 0; type < counts.size(); ++type)
    if (counts[type] > 0 && !cluster.node_types[type].gpu_data.runs_precision(dtype)) return &cluster.node_types[type];
  return nullptr;
}

std::string missing_precision_text(const std::string& dtype) {
  return "its data lists no dense " + peak_precision(dtype) + " peak" +
         (dtype == "mxfp8" ? " or MXFP8 efficiency" : dtype == "nvfp4" ? " or NVFP4 efficiency" : "");
}

void PlannerSetup::load_parallel_profiles(const PlannerOptions& options, const std::vector<int>& counts) {
  input.parallel_profiles.clear();
  input.precision_models.clear();
  parallel_profile_storage.clear();
  precision_model_storage.clear();
  for (const std::string& precision : input.space.precisions) {
    const ModelSpec* trained = &model;
    if (!precision.empty()) {
      precision_model_storage.push_back(model);
      precision_model_storage.back().dtype = precision;
      trained = input.precision_models[precision] = &precision_model_storage.back();
    }
    for (int cp : input.space.cp)
      for (int ep : input.space.ep) {
        for (MoeDispatcher dispatcher : input.space.moe_dispatchers) {
          if (!tried_at_ep(dispatcher, ep)) continue;  // as the search space skips them
          if (precision.empty() && cp == 1 && ep == 1) continue;
          PlanKey split{.cp = cp, .ep = ep};
          split.moe_dispatcher = dispatcher;
          NodeTypeProfiles& profiles = input.parallel_profiles[{precision, cp, ep, 1, dispatcher}];
          profiles.assign(cluster.node_types.size(), nullptr);
          for (size_t type = 0; type < cluster.node_types.size(); ++type) {
            if (counts[type] == 0) continue;
            const NodeType& node = cluster.node_types[type];
            parallel_profile_storage.push_back(node_analytic_profile(*trained, node, profile_layers(options, split)));
            profiles[type] = &parallel_profile_storage.back();
          }
        }
      }
  }
}

std::unique_ptr<PlannerSetup> PlannerSetup::load(const PlannerOptions& options) {
  std::unique_ptr<PlannerSetup> setup = load_specs(options);
  std::vector<int> counts(setup->cluster.node_types.size());
  for (size_t type = 0; type < counts.size(); ++type) counts[type] = setup->cluster.node_count(int(type));
  setup->load_profiles(options, counts);
  return setup;
}

Execution execution_of(const PlannerOptions& options) {
  return Execution{.overlap_grad_reduce = !options.no_overlap,
                   .overlap_param_gather = options.overlap_param_gather,
                   .tp_comm_overlap = options.tp_comm_overlap,
                   .overlap_moe_expert_parallel_comm = options.ep_comm_overlap,
                   .grad_reduce_in_bf16 = options.grad_reduce_in_bf16,
                   .cuda_graphs = options.cuda_graphs};
}

void set_execution_flags(PlannerOptions& options, const Execution& execution) {
  options.no_overlap = !execution.overlap_grad_reduce;
  options.overlap_param_gather = execution.overlap_param_gather;
  options.tp_comm_overlap = execution.tp_comm_overlap;
  options.ep_comm_overlap = execution.overlap_moe_expert_parallel_comm;
  options.grad_reduce_in_bf16 = execution.grad_reduce_in_bf16;
  options.cuda_graphs = execution.cuda_graphs;
}

}  // namespace fasop
