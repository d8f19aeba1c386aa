#include "cli/validate_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>

#include "cli/planner_options.h"
#include "report/atomic_file.h"
#include "specs/spec_store.h"
#include "specs/gpu_spec.h"
#include "specs/spec_error.h"
#include "validate/efficiency_fit.h"
#include "validate/gemm_sweep.h"
#include "validate/layer_validation.h"
#include "validate/layout_rank.h"
#include "validate/validate.h"

namespace fasop {
namespace {

struct ValidateOptions {
  std::vector<std::string> paths;
  std::string csv;
  std::string layer_csv;
  double max_mae = -1;
  bool quiet = false;
  bool rank_layouts = false;            ///< --rank-layouts: search each case's system, rank its layout
  std::vector<std::string> fit;         ///< --fit: cases whose measurements fit the GPU's data
  std::vector<std::string> fit_params;  ///< --fit-params
  std::string fit_precision;            ///< --fit-precision (default: the fitted cases' training precision)
  std::vector<std::string> gemm_fit;    ///< --gemm-fit: GEMM sweeps to fit the GEMM model of their GPU to
};

/// The shipped GPU data a sweep was measured on.
const GpuSpec& sweep_gpu(const GemmSweep& sweep) {
  const GpuSpec* gpu = shipped_gpu_spec(sweep.gpu);
  if (!gpu) throw SpecError(sweep.file + ": field 'gpu': no shipped GPU data named '" + sweep.gpu +
                            "'; name one of configs/gpus (fasop-cpp presets list gpus)");
  return *gpu;
}

/// --gemm-fit: the GEMM model of the sweeps' GPU fitted to them together, reported with its
/// errors on each of them and on the other sweeps given (held out), in the form
/// scripts/sync-gpu-data.py reads.
void gemm_fit(const ValidateOptions& options, const ValidationInputs& inputs, const TextSource& disk) {
  if (options.fit_precision.empty()) throw SpecError("--gemm-fit: give --fit-precision, the dtype to fit (e.g. bf16)");
  std::vector<GemmSweep> fitted;
  for (const std::string& path : options.gemm_fit) {
    std::optional<std::string> text = disk.read(path);
    if (!text) throw SpecError("--gemm-fit: cannot read '" + path + "'; give GEMM sweep files");
    if (!is_gemm_sweep(*text))
      throw SpecError(path + ": field 'kind': not gemm_times; give a sweep `fasop-cpp profile gemm` wrote");
    fitted.push_back(parse_gemm_sweep(*text, path));
    if (fitted.back().gpu != fitted.front().gpu)
      throw SpecError(path + ": field 'gpu': " + fitted.back().gpu + ", where " + fitted.front().file + " has " +
                      fitted.front().gpu + "; fit one GPU's sweeps together");
  }
  std::vector<GemmSweep> held_out;
  for (const GemmSweep& s : inputs.gemm_sweeps)
    if (std::none_of(fitted.begin(), fitted.end(), [&](const GemmSweep& f) { return f.file == s.file; }))
      held_out.push_back(s);
  std::cout << gemm_fit_report(fitted, held_out, sweep_gpu(fitted.front()), options.fit_precision);
}

template <typename Case>
bool named_in(const std::vector<std::string>& names, const Case& c) {
  return std::find(names.begin(), names.end(), c.name) != names.end();
}

/// --fit: the GPU's data fitted to the named cases, every case predicted with it; the cases of
/// that GPU left out measure the fit on runs it has not seen.
void fit(const ValidateOptions& options, ValidationInputs& inputs) {
  std::vector<ValidationCase> cases;
  std::vector<LayerTimeCase> layer_cases;
  std::string gpu, precision = options.fit_precision;
  auto take = [&](const auto& c) {
    if (!gpu.empty() && gpu != c.node_type.gpu_data.name)
      throw SpecError("--fit: cases of GPUs " + gpu + " and " + c.node_type.gpu_data.name + "; fit one GPU at a time");
    gpu = c.node_type.gpu_data.name;
    if (precision.empty()) precision = c.model.dtype;
  };
  for (const ValidationCase& c : inputs.cases)
    if (named_in(options.fit, c)) cases.push_back(c), take(c);
  for (const LayerTimeCase& c : inputs.layer_cases)
    if (named_in(options.fit, c)) layer_cases.push_back(c), take(c);
  for (const std::string& name : options.fit)
    if (std::none_of(inputs.cases.begin(), inputs.cases.end(), [&](const auto& c) { return c.name == name; }) &&
        std::none_of(inputs.layer_cases.begin(), inputs.layer_cases.end(), [&](const auto& c) { return c.name == name; }))
      throw SpecError("--fit: no case '" + name + "' among the cases given");
  std::vector<FitParameter> parameters;
  for (const std::string& name : options.fit_params) parameters.push_back(fit_parameter(name));
  if (parameters.empty()) parameters = {fit_parameter("gemm_peak_share"), fit_parameter("memory_share")};
  GpuFit found = fit_gpu_data(cases, layer_cases, gpu, precision, parameters);
  std::printf("fitted %s (%s) on %zu step cases and %zu layer cases (objective %.2f%%):\n", gpu.c_str(),
              precision.c_str(), cases.size(), layer_cases.size(), found.error);
  for (const auto& [name, value] : found.values) std::printf("  %s: %.4g\n", name.c_str(), value);
  std::printf("\n");
  inputs.cases = with_fit(inputs.cases, found);
  inputs.layer_cases = with_fit(inputs.layer_cases, found);
}

/// --rank-layouts: each case's published layout among a search of its system, and how many rank
/// in the top 5.
void rank_layouts(const std::vector<ValidationCase>& cases) {
  constexpr int kTop = 5;
  constexpr double kClose = 0.05;  // within the model's own error of the fastest
  int ranked = 0, in_top = 0, close = 0;
  std::cout << "\nwhere each published layout ranks in a search of its system (the search's " << kTop
            << " fastest plans that fit below it):\n";
  for (const ValidationCase& c : cases) {
    if (!c.measurement.has_step()) continue;
    const LayoutRank rank = rank_published_layout(c, kTop);
    std::cout << layout_rank_text(rank) << std::flush;
    ++ranked;
    if (rank.rank <= kTop) ++in_top;
    if (rank.rank <= kTop || rank.searched_s <= (1 + kClose) * rank.fastest_s) ++close;
  }
  std::cout << "published layout in its search's top " << kTop << ": " << in_top << " of " << ranked
            << " cases; in the top " << kTop << " or priced within " << int(kClose * 100) << "% of the fastest: "
            << close << "\n";
}

void run(const ValidateOptions& options) {
  DiskSource disk;
  SpecStore store(disk, embedded_presets());
  ValidationInputs inputs = load_validation_inputs(options.paths, store, disk);
  if (!options.gemm_fit.empty()) return gemm_fit(options, inputs, disk);
  if (!options.fit.empty()) fit(options, inputs);
  std::vector<ValidationResult> results;
  for (const ValidationCase& c : inputs.cases) results.push_back(predict_case(c));
  std::vector<LayerPointResult> layer_results;
  for (const LayerTimeCase& c : inputs.layer_cases) {
    std::vector<LayerPointResult> points = predict_layer_case(c);
    layer_results.insert(layer_results.end(), points.begin(), points.end());
  }
  if (!results.empty()) std::cout << validation_text(results, options.quiet);
  if (options.rank_layouts) rank_layouts(inputs.cases);
  if (!results.empty() && !layer_results.empty()) std::cout << "\n";
  if (!layer_results.empty()) std::cout << layer_validation_text(layer_results, options.quiet);
  std::vector<GemmSweepResult> gemm_results;
  for (const GemmSweep& sweep : inputs.gemm_sweeps) {
    std::vector<GemmSweepResult> r = predict_gemm_sweep(sweep, sweep_gpu(sweep));
    gemm_results.insert(gemm_results.end(), r.begin(), r.end());
  }
  if (!gemm_results.empty()) std::cout << (results.empty() && layer_results.empty() ? "" : "\n") << gemm_sweep_text(gemm_results);
  if (!options.csv.empty()) write_file_atomically(options.csv, validation_csv(results));
  if (!options.layer_csv.empty()) write_file_atomically(options.layer_csv, layer_validation_csv(layer_results));
  if (options.max_mae >= 0) {
    bool over = false;
    for (const ValidationSummary& s : summarize(results))
      if (s.mean_abs_error_pct > options.max_mae) {
        std::cerr << "fasop-cpp: validate: set " << s.set << ": mean absolute error " << s.mean_abs_error_pct
                  << "% exceeds --max-mae " << options.max_mae << "%\n";
        over = true;
      }
    for (const LayerSummary& s : summarize_layers(layer_results))
      if (s.median_abs_error_pct > options.max_mae) {
        std::cerr << "fasop-cpp: validate: layer set " << s.set << " on " << s.gpu << ": median absolute error "
                  << s.median_abs_error_pct << "% exceeds --max-mae " << options.max_mae << "%\n";
        over = true;
      }
    if (over) throw CLI::RuntimeError(1);
  }
}

}  // namespace

void add_validate_command(CLI::App& app) {
  auto options = std::make_shared<ValidateOptions>();
  CLI::App* command = app.add_subcommand(
      "validate", "compare predicted step times with published measurements (validation cases)");
  command->add_option("cases", options->paths,
                      "validation case files or directories of them (default: the shipped validation/ sets)");
  command->add_option("--csv", options->csv, "also write the step-time rows as CSV to FILE (a column per term)");
  command->add_option("--layer-csv", options->layer_csv, "also write the layer-time points as CSV to FILE");
  command->add_option("--max-mae", options->max_mae, "exit 1 when a set's mean absolute error exceeds PCT percent")
      ->type_name("PCT")
      ->check(non_negative_number("percent"));
  command->add_flag("--quiet,-q", options->quiet, "print only each set's summary");
  command->add_flag("--rank-layouts", options->rank_layouts,
                    "also search each case's system (its GPUs, batch, precision, recomputation and switches; "
                    "the degrees, micro-batch and virtual stages free; its token dispatcher beside alltoall) and "
                    "print where the published layout ranks, with the search's 5 fastest plans");
  command->add_option("--fit", options->fit,
                      "fit the GPU data of these cases' GPU to them (comma-separated names of step or layer cases), "
                      "then predict every case with it: the others measure the fit on runs it has not seen")
      ->delimiter(',')->type_name("CASE,...");
  command->add_option("--fit-params", options->fit_params,
                      "the GPU data to fit (default gemm_peak_share,memory_share; also gemm_half_dim, "
                      "attention_peak_share, attention_backward_peak_share, attention_shares (both, their ratio kept), "
                      "the same three with an sdpa_ prefix (PyTorch SDPA's kernel), kernel_gap_s, dispatch_s.STACK, "
                      "nvlink.bus_share, network.bus_share, overlap_slowdown)")
      ->delimiter(',')->type_name("NAME,...");
  command->add_option("--fit-precision", options->fit_precision,
                      "the precision whose efficiencies to fit (default: the fitted cases' training precision)");
  command->add_option("--gemm-fit", options->gemm_fit,
                      "fit the GEMM model (gemm_peak_share, gemm_half_dim, gemm_unaligned_share) of --fit-precision "
                      "to these GEMM sweeps (fasop-cpp profile gemm's output, one GPU) and report its errors on them "
                      "and on the sweeps among the cases (held out)")
      ->delimiter(',')->type_name("SWEEP,...");
  command->callback([options] { run(*options); });
}

}  // namespace fasop
