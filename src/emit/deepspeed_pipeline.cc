#include "emit/deepspeed_pipeline.h"

#include <sstream>
#include <vector>

#include "emit/deepspeed_checks.h"
#include "emit/plan_checks.h"
#include "emit/python_literal.h"
#include "emit/unit_names.h"
#include "specs/spec_error.h"

namespace fasop {
namespace {

/// Throws SpecError for ZeRO 2 or 3: a PipelineModule always runs under DeepSpeed's
/// PipelineEngine, which asserts ZeRO 0 or 1 whatever pp is (pp > 1 is refused before this).
void require_pipeline_engine_zero(const PlanFile& plan) {
  if (plan.key.zero_stage >= 2)
    throw SpecError(plan_where(plan) + "ZeRO stage " + std::to_string(plan.key.zero_stage) +
                    ": a PipelineModule runs under DeepSpeed's pipeline engine, which allows ZeRO 0 or 1 only; "
                    "with pp 1 pass your model to deepspeed.initialize with the --format deepspeed config alone");
}

/// "units 0-17 (embedding to transformer 16)": a stage's units by number and by name.
std::string stage_text(const std::vector<UnitName>& names, int first, int stop) {
  std::string text = "units " + std::to_string(first) + "-" + std::to_string(stop - 1) + " (" + names[first].text();
  if (stop - first > 1) text += " to " + names[stop - 1].text();
  return text + ")";
}

/// The module's docstring: what the plan is, why the module exists and how to use it.
std::string docstring(const PlanFile& plan, const ModelSpec& model, const std::vector<int>& parts) {
  const PlanKey& key = plan.key;
  const int ranks = key.tp * key.pp * key.dp;
  const std::vector<UnitName> names = unit_names(model);
  std::ostringstream d;
  d << "\"\"\"DeepSpeed PipelineModule for fasop-cpp's plan of " << python_docstring_text(model.name)
    << ": its stages, topology and recomputation.\n\n"
    << "Written by `fasop-cpp schedule --format deepspeed-pipeline`"
    << (plan.source.empty() ? std::string() : " from " + python_docstring_text(plan.source)) << ".\n"
    << "Layout: tp " << key.tp << ", pp " << key.pp << ", dp " << key.dp << " (" << ranks << " ranks), micro-batch "
    << key.mbs << ",\nglobal batch " << plan.global_batch << ", ZeRO " << key.zero_stage << ", "
    << (key.recompute ? "full recomputation" : "no recomputation") << ". Stages:\n";
  for (size_t s = 0; s + 1 < parts.size(); ++s)
    d << "  stage " << s << ": " << python_docstring_text(stage_text(names, parts[s], parts[s + 1])) << "\n";
  d << "\n"
       "DeepSpeed's PipelineModule divides its layer list by 'uniform', 'parameters' or 'type:<regex>'\n"
       "and reads no partition from its config; PlanPipelineModule sets the plan's. The batch, ZeRO\n"
       "and precision are in the config that `--format deepspeed` writes (ds_config.json).\n\n"
       "Use, saved as pipeline_module.py, on "
    << ranks << " ranks (stage-major, the tensor-parallel lane fastest, as\nthe plan's node order):\n\n"
    << "    import deepspeed\n"
       "    from pipeline_module import PlanPipelineModule, UNITS\n"
       "    deepspeed.init_distributed()\n"
       "    layers = [...]  # one entry per name in UNITS, in that order\n"
       "    model = PlanPipelineModule(layers, loss_fn=...)\n"
       "    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(),\n"
       "                                           config=\"ds_config.json\")\n\n"
       "An entry of `layers` is what PipelineModule takes (a LayerSpec, TiedLayerSpec, nn.Module or\n"
       "callable), or a list of them when a unit is several (an embedding and a transpose): a stage\n"
       "starts at its first unit's first entry.\n";
  if (key.tp > 1)
    d << "With tp " << key.tp << " the layers split their own weights (Megatron-style tensor parallelism):\n"
         "model.mpu().get_slice_parallel_group() is the tensor-parallel group of a rank.\n";
  d << "Importing this file needs no DeepSpeed: PlanPipelineModule and plan_topology() import it.\n\"\"\"\n";
  return d.str();
}

/// `UNITS = [...]`: one name per unit, a run of transformer units of one type as a generator
/// so that an 80-layer model stays a few lines.
std::string units_py(const ModelSpec& model) {
  const std::vector<UnitName> names = unit_names(model);
  std::string py = "# The plan's units in order: what each entry of PlanPipelineModule's `layers` computes.\nUNITS = [\n";
  for (size_t u = 0; u < names.size();) {
    size_t v = u + 1;
    while (names[u].index >= 0 && v < names.size() && names[v].type == names[u].type &&
           names[v].index == names[v - 1].index + 1)
      ++v;
    if (v - u > 1)
      py += "    *(" + python_string(names[u].type + " ") + " + str(i) for i in range(" + std::to_string(names[u].index) +
            ", " + std::to_string(names[v - 1].index + 1) + ")),\n";
    else
      py += "    " + python_string(names[u].text()) + ",\n";
    u = v;
  }
  return py + "]\n";
}

/// The degrees, the partition and the checkpoint interval as module constants.
std::string constants_py(const PlanFile& plan, const std::vector<int>& parts) {
  const PlanKey& key = plan.key;
  std::string list;
  for (size_t i = 0; i < parts.size(); ++i) list += (i ? ", " : "") + std::to_string(parts[i]);
  return "TP, PP, DP = " + std::to_string(key.tp) + ", " + std::to_string(key.pp) + ", " + std::to_string(key.dp) +
         "\n# Stage s runs UNITS[UNIT_PARTS[s]:UNIT_PARTS[s + 1]].\nUNIT_PARTS = [" + list +
         "]\n# PipelineModule checkpoints every this many layers: 1 recomputes each (the plan's full\n"
         "# recomputation), 0 none.\nACTIVATION_CHECKPOINT_INTERVAL = " +
         (key.recompute ? "1" : "0") + "\nPARTITION_METHOD = \"fasop-plan\"\n";
}

/// plan_topology(): DeepSpeed's topology classes order ranks stage-major with the last axis
/// fastest, which is the plan's order (launch_layout.h): data-parallel replicas of tp lanes.
std::string topology_py(const PlanKey& key) {
  std::string py =
      "\n\ndef plan_topology():\n"
      "    \"\"\"The plan's ranks as DeepSpeed's topology: stage-major, the tensor-parallel lane fastest.\"\"\"\n";
  if (key.tp > 1)
    return py +
           "    from deepspeed.runtime.pipe.topology import PipeModelDataParallelTopology\n"
           "    return PipeModelDataParallelTopology(num_pp=PP, num_mp=TP, num_dp=DP)\n";
  return py +
         "    from deepspeed.runtime.pipe.topology import PipeDataParallelTopology\n"
         "    return PipeDataParallelTopology(num_pp=PP, num_dp=DP)\n";
}

/// The plan-independent rest: the layer list from one entry per unit, the PipelineModule
/// subclass, and the module __getattr__ (PEP 562) that defines it on first use.
const char* const kModuleBody = R"PY(

def flatten_units(layers):
    """PipelineModule's layer list from one entry (or list of entries) per unit, and `parts`:
    where each stage starts in that list, and its length."""
    layers = list(layers)
    if len(layers) != len(UNITS):
        raise ValueError(f"{len(layers)} layer entries for the plan's {len(UNITS)} units "
                         f"({UNITS[0]!r} to {UNITS[-1]!r}): give one entry, or a list, per unit")
    flat, starts = [], []
    for unit, entry in zip(UNITS, layers):
        group = list(entry) if isinstance(entry, (list, tuple)) else [entry]
        if not group:
            raise ValueError(f"unit {unit!r} has an empty list of layers; give it at least one")
        starts.append(len(flat))
        flat.extend(group)
    starts.append(len(flat))
    return flat, [starts[u] for u in UNIT_PARTS]


def _define_plan_pipeline_module():
    from deepspeed import comm as dist
    from deepspeed.pipe import PipelineModule

    class PlanPipelineModule(PipelineModule):
        """A PipelineModule with the plan's stages, topology and activation checkpointing."""

        def __init__(self, layers, **kwargs):
            for fixed in ("num_stages", "topology", "partition_method", "activation_checkpoint_interval"):
                if fixed in kwargs:
                    raise TypeError(f"PlanPipelineModule takes {fixed} from the plan; re-plan to change it")
            if dist.is_initialized() and dist.get_world_size() != TP * PP * DP:
                raise RuntimeError(f"the plan runs on {TP * PP * DP} ranks (tp {TP} x pp {PP} x dp {DP}); "
                                   f"this job has {dist.get_world_size()}")
            # Set before PipelineModule.__init__, which calls _partition_layers.
            flat, self._plan_parts = flatten_units(layers)
            super().__init__(flat, topology=plan_topology(), partition_method=PARTITION_METHOD,
                             activation_checkpoint_interval=ACTIVATION_CHECKPOINT_INTERVAL, **kwargs)

        def _partition_layers(self, method="uniform"):
            # PipelineModule.__init__ calls this to set self.parts and the slice of the layer
            # list this rank builds; the plan's boundaries replace DeepSpeed's balancing.
            if method != PARTITION_METHOD:
                return super()._partition_layers(method)
            stage = self._topo.get_coord(self.global_rank).pipe
            self.parts = list(self._plan_parts)
            self._set_bounds(start=self.parts[stage], stop=self.parts[stage + 1])

    return PlanPipelineModule


def __getattr__(name):
    # The class subclasses DeepSpeed's: made, and DeepSpeed imported, when first asked for.
    if name == "PlanPipelineModule":
        globals()[name] = _define_plan_pipeline_module()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
)PY";

}  // namespace

std::string deepspeed_pipeline_py(const PlanFile& plan, const ModelSpec& model) {
  const std::vector<int> parts = deepspeed_stage_boundaries(plan, model);
  require_pipeline_engine_zero(plan);
  return docstring(plan, model, parts) + "\n" + constants_py(plan, parts) + units_py(model) + topology_py(plan.key) +
         kModuleBody;
}

}  // namespace fasop
