#include "validate/validate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include "costmodel/analytic_policy.h"
#include "costmodel/make_context.h"
#include "costmodel/parallel_dims_checks.h"
#include "profiles/analytic_profile.h"
#include "search/search.h"
#include "search/search_space.h"
#include "specs/spec_error.h"
#include "validate/measurement.h"

namespace fasop {
namespace {

constexpr const char* kShippedDir = "validation";

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string strip_slashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  if (path.rfind("./", 0) == 0) path = path.substr(2);
  return path;
}

std::string fixed(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, value);
  return buffer;
}

std::string signed_fixed(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%+.*f", digits, value);
  return buffer;
}

std::string pad(const std::string& text, size_t width, bool right) {
  if (text.size() >= width) return text;
  std::string space(width - text.size(), ' ');
  return right ? space + text : text + space;
}

}  // namespace

std::vector<std::string> shipped_validation_files() {
  std::vector<std::string> files;
  for (const EmbeddedFile& file : embedded_presets()) {
    std::string path = file.path;
    if (path.rfind(std::string(kShippedDir) + "/", 0) == 0 && ends_with(path, ".yaml")) files.push_back(path);
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<ValidationCase> load_validation_cases(const std::vector<std::string>& paths, const SpecStore& store,
                                                  const TextSource& disk) {
  return load_validation_inputs(paths, store, disk).cases;
}

ValidationInputs load_validation_inputs(const std::vector<std::string>& paths, const SpecStore& store,
                                        const TextSource& disk) {
  namespace fs = std::filesystem;
  std::vector<std::pair<std::string, std::string>> texts;  // source, text
  auto embedded = [](const std::string& path) -> const char* {
    for (const EmbeddedFile& file : embedded_presets())
      if (path == file.path) return file.text;
    return nullptr;
  };
  auto add_shipped_under = [&](const std::string& prefix) {
    bool any = false;
    for (const std::string& file : shipped_validation_files())
      if (prefix == kShippedDir || file.rfind(prefix + "/", 0) == 0 || file == prefix) {
        texts.emplace_back(file, embedded(file));
        any = true;
      }
    return any;
  };
  if (paths.empty()) add_shipped_under(kShippedDir);
  for (const std::string& given : paths) {
    std::error_code error;
    if (fs::is_directory(given, error)) {
      std::vector<std::string> files;
      for (const fs::directory_entry& entry : fs::recursive_directory_iterator(given, error))
        if (entry.is_regular_file() && (ends_with(entry.path().string(), ".yaml") || ends_with(entry.path().string(), ".yml")))
          files.push_back(entry.path().string());
      std::sort(files.begin(), files.end());
      if (files.empty()) throw SpecError(given + ": no validation cases (*.yaml) in this directory");
      for (const std::string& file : files) {
        std::optional<std::string> text = disk.read(file);
        if (!text) throw SpecError(file + ": cannot read it; check its permissions");
        texts.emplace_back(file, *text);
      }
    } else if (std::optional<std::string> text = disk.read(given)) {
      texts.emplace_back(given, *text);
    } else if (!add_shipped_under(strip_slashes(given))) {
      throw SpecError(given + ": cannot read it; give a validation case file, a directory of them, or a shipped set (" +
                      std::string(kShippedDir) + "/...)");
    }
  }
  ValidationInputs inputs;
  std::vector<ValidationCase>& cases = inputs.cases;
  for (const auto& [source, text] : texts) {
    if (is_layer_time_case(text)) {
      inputs.layer_cases.push_back(parse_layer_time_case(text, source, store));
      continue;
    }
    if (is_gemm_sweep(text)) {
      inputs.gemm_sweeps.push_back(parse_gemm_sweep(text, source));
      continue;
    }
    cases.push_back(parse_validation_case(text, source, store));
    if (cases.back().measurement.has_step()) measured_step_s(cases.back());  // an unknown flop_formula fails at load
  }
  std::stable_sort(cases.begin(), cases.end(), [](const ValidationCase& a, const ValidationCase& b) {
    if (a.set != b.set) return a.set < b.set;
    if (a.plan.gpus != b.plan.gpus) return a.plan.gpus < b.plan.gpus;
    return a.file < b.file;
  });
  std::stable_sort(inputs.layer_cases.begin(), inputs.layer_cases.end(), [](const LayerTimeCase& a, const LayerTimeCase& b) {
    return a.set != b.set ? a.set < b.set : a.file < b.file;
  });
  return inputs;
}

std::vector<int> megatron_partition(const ModelSpec& model, int pp) {
  int layers = model.num_transformer_layers();
  std::vector<int> partition(pp, layers / pp);
  for (const LayerUnit& unit : model.units) {
    if (unit.role == LayerRole::kEmbedding) partition.front() += 1;
    if (unit.role == LayerRole::kPostProcess) partition.back() += 1;
  }
  return partition;
}

namespace {

/// The figure a memory measurement reports, of one stage's predicted terms.
double figure_bytes(const MemoryTerms& terms, MemoryFigure figure) {
  return figure == MemoryFigure::kMaxReserved ? terms.reserved_bytes() : terms.allocated_bytes();
}

/// The measured memory against the same figure predicted, on the measured rank's stage.
void compare_memory(ValidationResult& result) {
  const MemoryMeasurement& measured = result.c.measurement.memory;
  const std::vector<StageReport>& stages = result.estimate.stages;
  if (measured.peak_gib <= 0 || stages.empty() || !stages.front().memory.breakdown) return;
  int stage = static_cast<int>(stages.size()) - 1;  // the last rank is on the last stage
  if (measured.rank == MeasuredRank::kMax)
    for (int s = 0; s < int(stages.size()); ++s)
      if (figure_bytes(stages[s].memory.breakdown->terms, measured.figure) >
          figure_bytes(stages[stage].memory.breakdown->terms, measured.figure))
        stage = s;
  result.memory_stage = stage;
  result.memory_breakdown = *stages[stage].memory.breakdown;
  const MemoryTerms& terms = result.memory_breakdown.terms;
  result.predicted_figure_gib = figure_bytes(terms, measured.figure) / kGib;
  result.memory_error_pct = (result.predicted_figure_gib - measured.peak_gib) / measured.peak_gib * 100;
  result.predicted_after_step_gib = result.memory_breakdown.after_step_bytes / kGib;
  if (measured.allocated_after_step_gib > 0)
    result.after_step_error_pct =
        (result.predicted_after_step_gib - measured.allocated_after_step_gib) / measured.allocated_after_step_gib * 100;
}

}  // namespace

ClusterSpec case_cluster(const ValidationCase& c) {
  ClusterSpec cluster;
  cluster.name = c.set + "/" + c.name;
  cluster.source = c.file;
  cluster.node_types = {c.node_type};
  cluster.nodes.assign(c.plan.gpus / c.node_type.gpus_per_node, 0);
  return cluster;
}

AnalyticOptions case_analytic_options(const ValidationCase& c) {
  AnalyticOptions options;
  options.execution = c.plan.execution;
  options.memory = c.plan.memory;
  // Whether a run fit is a question of its GPU's whole memory: no planning headroom here.
  options.headroom = {.share = 0, .gib = 0};
  return options;
}

ValidationResult predict_case(const ValidationCase& c) {
  const NodeType& node = c.node_type;
  if (!node.has_gpu_data())
    throw SpecError(c.file + ": field 'node_type': node type '" + node.name +
                    "' gives no GPU specs (peak_tflops, memory_bandwidth_bytes_per_s); validation predicts with "
                    "analytic profiles: add them");
  const ValidationPlan& plan = c.plan;
  const ClusterSpec cluster = case_cluster(c);
  // Refused as Megatron-Core would refuse them (their rules read no micro-batch size).
  if (std::string fault = moe_dispatcher_fault(c.model, cluster, plan.key); !fault.empty())
    throw SpecError(c.file + ": field 'plan.moe_token_dispatcher': " + fault);
  if (std::string fault = cuda_graph_fault(c.model); !fault.empty() && plan.execution.cuda_graphs)
    throw SpecError(c.file + ": field 'plan.cuda_graphs': " + fault);

  // The micro-batch size stated or assumed, or every size of the case's range that divides
  // the batch (the case then reports the span of predictions).
  std::vector<int> micro_batches;
  if (plan.micro_batch > 0) {
    micro_batches = {plan.micro_batch};
  } else {
    for (int mbs : divisors(plan.global_batch / plan.key.dp))
      if (mbs >= plan.micro_batch_min && mbs <= plan.micro_batch_max) micro_batches.push_back(mbs);
    if (micro_batches.empty())
      throw SpecError(c.file + ": field 'plan.micro_batch_range': no size in it divides global_batch / dp (" +
                      std::to_string(plan.global_batch / plan.key.dp) + ")");
  }
  LayerOptions layers = split_as({}, plan.key);
  layers.sequence_parallel = plan.sequence_parallel && plan.key.tp > 1;
  layers.execution = plan.execution;
  layers = with_training_stack(layers, plan.memory);
  ProfileSpec profile = analytic_profile(c.model, node, {plan.key.tp}, micro_batches, layers);
  AnalyticPolicy policy(case_analytic_options(c));
  SearchInput input;
  input.model = &c.model;
  input.cluster = &cluster;
  input.profiles = {&profile};
  input.policy = &policy;
  input.iterations = 1;
  input.threads = 1;
  input.memory_aware = true;

  ValidationResult result;
  result.c = c;
  result.partition = plan.layout_units.empty() ? megatron_partition(c.model, plan.key.pp) : plan.layout_units;
  result.measured_step_s = c.measurement.has_step() ? measured_step_s(c) : 0;
  result.mbs_chosen = !plan.micro_batch_stated;
  bool have = false;
  for (int mbs : micro_batches) {
    PlanKey key = plan.key;
    key.mbs = mbs;
    key.node_order.assign(cluster.num_nodes(), 0);
    key.zero_stage = plan.fsdp ? 3 : plan.distributed_optimizer ? 1 : 0;
    key.recompute = plan.recompute == RecomputeMode::kFull;
    key.selective_recompute = plan.recompute == RecomputeMode::kSelective;
    key.recompute_modules = plan.recompute_modules;
    key.sequence_parallel = plan.sequence_parallel;
    key.virtual_stages = plan.virtual_stages;
    try {
      validate_plan_key(c.model, cluster, key);
    } catch (const SpecError& e) {
      throw SpecError(c.file + ": field 'plan': " + e.what());
    }
    CandidateResult candidate = evaluate_candidate(input, key, result.partition, PartitionTiming::kExact);
    const double step = candidate.estimate.step_time_s;
    if (!have) {
      result.predicted_min_s = result.predicted_max_s = step;
    } else {
      result.predicted_min_s = std::min(result.predicted_min_s, step);
      result.predicted_max_s = std::max(result.predicted_max_s, step);
    }
    // One size: its prediction. A range: the sizes that fit, and the middle of their span.
    const bool fits = !candidate.estimate.memory.is_oom;
    if (!have || (fits && !result.fits) || mbs == micro_batches[micro_batches.size() / 2]) {
      result.mbs = mbs;
      result.fits = fits;
      result.estimate = candidate.estimate;
      result.predicted_memory_gib = candidate.estimate.memory.oom_gpumem_gib;
    }
    have = true;
  }
  compare_memory(result);
  if (!c.measurement.has_step()) {
    result.predicted_step_s = result.predicted_min_s;
  } else if (micro_batches.size() == 1) {
    result.predicted_step_s = result.predicted_min_s;
    result.error_pct = (result.predicted_step_s - result.measured_step_s) / result.measured_step_s * 100;
  } else {
    // The measurement against the span of predictions: no error inside it, else the distance
    // to its nearer end.
    result.predicted_step_s = (result.predicted_min_s + result.predicted_max_s) / 2;
    const double m = result.measured_step_s;
    const double nearest = m < result.predicted_min_s ? result.predicted_min_s : m > result.predicted_max_s ? result.predicted_max_s : m;
    result.error_pct = (nearest - m) / m * 100;
  }
  return result;
}

std::vector<ValidationSummary> summarize(const std::vector<ValidationResult>& results) {
  std::vector<ValidationSummary> sets;
  for (const ValidationResult& r : results) {
    auto it = std::find_if(sets.begin(), sets.end(), [&](const ValidationSummary& s) { return s.set == r.c.set; });
    if (it == sets.end()) {
      sets.push_back({.set = r.c.set});
      it = sets.end() - 1;
    }
    it->not_fitting += r.fits ? 0 : 1;
    if (r.c.measurement.has_step()) {
      it->cases += 1;
      it->mean_abs_error_pct += std::fabs(r.error_pct);
      if (it->worst_case.empty() || std::fabs(r.error_pct) > std::fabs(it->worst_error_pct)) {
        it->worst_case = r.c.name;
        it->worst_error_pct = r.error_pct;
      }
    }
    if (r.c.measurement.memory.peak_gib > 0) {
      it->memory_cases += 1;
      it->memory_mean_abs_error_pct += std::fabs(r.memory_error_pct);
      if (it->memory_worst_case.empty() || std::fabs(r.memory_error_pct) > std::fabs(it->memory_worst_error_pct)) {
        it->memory_worst_case = r.c.name;
        it->memory_worst_error_pct = r.memory_error_pct;
      }
    }
  }
  for (ValidationSummary& s : sets) {
    if (s.cases > 0) s.mean_abs_error_pct /= s.cases;
    if (s.memory_cases > 0) s.memory_mean_abs_error_pct /= s.memory_cases;
  }
  return sets;
}

std::string validation_text(const std::vector<ValidationResult>& results, bool quiet) {
  std::string out;
  bool memory = false, chosen = false, oom = false, beyond = false;
  for (const ValidationResult& r : results) {
    beyond = beyond || r.c.plan.key.cp > 1 || r.c.plan.key.ep > 1;  // then cp and ep get columns
    memory = memory || r.c.measurement.memory.peak_gib > 0;
    chosen = chosen || r.mbs_chosen;
    oom = oom || !r.fits;
  }
  if (!quiet) {
    size_t set_w = 3, case_w = 4;
    for (const ValidationResult& r : results) {
      set_w = std::max(set_w, r.c.set.size());
      case_w = std::max(case_w, r.c.name.size());
    }
    out += pad("set", set_w, false) + "  " + pad("case", case_w, false) + "  " + pad("gpus", 5, true) +
           pad("tp", 4, true) + pad("pp", 4, true) + (beyond ? pad("cp", 4, true) + pad("ep", 4, true) : "") +
           pad("dp", 4, true) + pad("mbs", 5, true) + "  " +
           pad("measured s/step", 15, true) + pad("predicted s/step", 18, true) + pad("error %", 9, true) +
           pad("pred. GiB/GPU", 15, true);
    if (memory) out += pad("meas. GiB", 11, true) + pad("pred. GiB", 11, true) + pad("mem. err %", 12, true);
    out += "\n";
    for (const ValidationResult& r : results) {
      std::string mbs = std::to_string(r.mbs) + (r.mbs_chosen ? "*" : "");
      std::string gib = fixed(r.predicted_memory_gib, 1) + (r.fits ? "" : "!");
      const bool step = r.c.measurement.has_step();
      out += pad(r.c.set, set_w, false) + "  " + pad(r.c.name, case_w, false) + "  " +
             pad(std::to_string(r.c.plan.gpus), 5, true) + pad(std::to_string(r.c.plan.key.tp), 4, true) +
             pad(std::to_string(r.c.plan.key.pp), 4, true) +
             (beyond ? pad(std::to_string(r.c.plan.key.cp), 4, true) + pad(std::to_string(r.c.plan.key.ep), 4, true) : "") +
             pad(std::to_string(r.c.plan.key.dp), 4, true) + pad(mbs, 5, true) + "  " +
             pad(step ? fixed(r.measured_step_s, 3) : "-", 15, true) + pad(fixed(r.predicted_step_s, 3), 18, true) +
             pad(step ? signed_fixed(r.error_pct, 1) : "-", 9, true) + pad(gib, 15, true);
      if (memory) {
        const MemoryMeasurement& measured = r.c.measurement.memory;
        out += measured.peak_gib > 0 ? pad(fixed(measured.peak_gib, 2), 11, true) + pad(fixed(r.predicted_figure_gib, 2), 11, true) +
                                           pad(signed_fixed(r.memory_error_pct, 1), 12, true)
                                     : pad("-", 11, true) + pad("-", 11, true) + pad("-", 12, true);
      }
      out += "\n";
    }
    if (chosen) out += "* micro-batch not stated by the source: the case's assumption (micro_batch_assumed), or the middle of its range\n";
    if (oom) out += "! predicted not to fit in the GPU's memory (no headroom) at any micro-batch size tried\n";
    if (memory)
      out += "meas. GiB: the case's measured figure (max allocated or max reserved, of the last rank or the largest); "
             "pred. GiB: the same figure predicted\n";
    out += "\n";
  }
  for (const ValidationSummary& s : summarize(results)) {
    if (s.cases > 0)
      out += s.set + ": " + std::to_string(s.cases) + " case" + (s.cases == 1 ? "" : "s") +
             ", mean absolute error " + fixed(s.mean_abs_error_pct, 1) + "%, worst " + s.worst_case + " " +
             signed_fixed(s.worst_error_pct, 1) + "%\n";
    if (s.memory_cases > 0)
      out += s.set + ": memory of " + std::to_string(s.memory_cases) + " case" + (s.memory_cases == 1 ? "" : "s") +
             ", mean absolute error " + fixed(s.memory_mean_abs_error_pct, 1) + "%, worst " + s.memory_worst_case + " " +
             signed_fixed(s.memory_worst_error_pct, 1) + "%\n";
    if (s.not_fitting > 0)
      out += s.set + ": " + std::to_string(s.not_fitting) + " run" + (s.not_fitting == 1 ? "" : "s") +
             " that trained predicted not to fit the GPU's memory\n";
  }
  return out;
}

std::string validation_csv(const std::vector<ValidationResult>& results) {
  std::string out =
      "set,case,gpu,gpus,tp,pp,dp,mbs,mbs_assumed,measured_step_s,predicted_step_s,error_pct,"
      "predicted_memory_gib,fits";
  for (const StepTermField& term : step_term_fields()) out += std::string(",") + term.name + "_s";
  out += ",memory_figure,memory_rank,measured_memory_gib,predicted_figure_gib,memory_error_pct,"
         "measured_after_step_gib,predicted_after_step_gib,memory_stage,memory_moment";
  for (const MemoryTermField& term : memory_term_fields()) out += std::string(",mem_") + term.name + "_gib";
  out += "\n";
  for (const ValidationResult& r : results) {
    const ValidationPlan& p = r.c.plan;
    const bool step = r.c.measurement.has_step();
    out += r.c.set + "," + r.c.name + "," + r.c.node_type.gpu_data.name + "," + std::to_string(p.gpus) + "," + std::to_string(p.key.tp) + "," +
           std::to_string(p.key.pp) + "," + std::to_string(p.key.dp) + "," + std::to_string(r.mbs) + "," +
           (r.mbs_chosen ? "true" : "false") + "," + (step ? fixed(r.measured_step_s, 6) : "") + "," +
           fixed(r.predicted_step_s, 6) + "," + (step ? fixed(r.error_pct, 3) : "") + "," +
           fixed(r.predicted_memory_gib, 3) + "," + (r.fits ? "true" : "false");
    for (const StepTermField& term : step_term_fields()) out += "," + fixed(r.estimate.breakdown.*term.seconds, 6);
    const MemoryMeasurement& measured = r.c.measurement.memory;
    if (measured.peak_gib > 0) {
      out += std::string(",") + (measured.figure == MemoryFigure::kMaxReserved ? "max_reserved" : "max_allocated") + "," +
             (measured.rank == MeasuredRank::kLast ? "last" : "max") + "," + fixed(measured.peak_gib, 4) + "," +
             fixed(r.predicted_figure_gib, 4) + "," + fixed(r.memory_error_pct, 3) + "," +
             (measured.allocated_after_step_gib > 0 ? fixed(measured.allocated_after_step_gib, 4) : "") + "," +
             fixed(r.predicted_after_step_gib, 4) + "," + std::to_string(r.memory_stage) + "," +
             memory_moment_name(r.memory_breakdown.moment);
      for (const MemoryTermField& term : memory_term_fields()) out += "," + fixed(r.memory_breakdown.terms.*term.bytes / kGib, 4);
    } else {
      // The worst stage's terms, where the case measured no memory.
      out += ",,,,,,,";
      const std::vector<StageReport>& stages = r.estimate.stages;
      int worst = 0;
      for (int s = 0; s < int(stages.size()); ++s)
        if (stages[s].memory.gib > stages[worst].memory.gib) worst = s;
      const std::optional<MemoryBreakdown>& breakdown = stages.empty() ? std::nullopt : stages[worst].memory.breakdown;
      out += "," + std::to_string(worst) + "," + (breakdown ? memory_moment_name(breakdown->moment) : "");
      for (const MemoryTermField& term : memory_term_fields())
        out += "," + (breakdown ? fixed(breakdown->terms.*term.bytes / kGib, 4) : std::string());
    }
    out += "\n";
  }
  return out;
}

}  // namespace fasop
