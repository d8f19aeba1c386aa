#include "report/pareto_report.h"

#include <algorithm>

#include "report/fasop_csv.h"

#include "search/parallel_evaluate.h"

namespace fasop {

ParetoReport::ParetoReport(const ClusterSpec& inventory, ParetoReportOptions options)
    : inventory_(inventory), options_(std::move(options)), front_(options_.constraints) {
  if (!options_.table_path.empty() && options_.stream_table) {
    streamed_table_ = std::make_unique<AtomicFileWriter>(options_.table_path);
    streamed_table_->write(fasop_csv_header(inventory_, options_.plan_dims));
  }
}

void ParetoReport::consume(std::vector<CandidateResult>& chunk, size_t first_index) {
  candidates_ += chunk.size();
  front_.consume(chunk, first_index);
  plot_.consume(chunk, first_index);
  if (streamed_table_) {
    std::string rows;
    for (const CandidateResult& r : chunk) append_fasop_csv_row(rows, inventory_, r, options_.plan_dims);
    streamed_table_->write(rows);
  } else if (!options_.table_path.empty()) {
    all_.consume(chunk, first_index);
  }
}

void ParetoReport::finish() {
  // Write everything to temporary files first; rename only when all are written.
  std::vector<std::unique_ptr<AtomicFileWriter>> files;
  if (!options_.table_path.empty() && !streamed_table_) {
    std::vector<CandidateResult>& all = all_.all();
    // FASOP's order: by step time, ties in enumeration order.
    std::stable_sort(all.begin(), all.end(), [](const CandidateResult& a, const CandidateResult& b) {
      return a.estimate.step_time_s < b.estimate.step_time_s;
    });
    // Formatting tens of thousands of rows is worth the threads: each formats a contiguous
    // block into one string, and the blocks are written in order.
    std::vector<std::string> blocks(resolve_threads(options_.threads));
    run_in_blocks(all.size(), static_cast<int>(blocks.size()), [&](int block, size_t first, size_t end) {
      blocks[block].reserve((end - first) * 420);
      for (size_t i = first; i < end; ++i) append_fasop_csv_row(blocks[block], inventory_, all[i], options_.plan_dims);
    });
    files.push_back(std::make_unique<AtomicFileWriter>(options_.table_path));
    files.back()->write(fasop_csv_header(inventory_, options_.plan_dims));
    for (const std::string& block : blocks) files.back()->write(block);
  }
  files.push_back(std::make_unique<AtomicFileWriter>(options_.front_csv_path));
  files.back()->write(fasop_csv(inventory_, front_.front(), options_.plan_dims));
  files.push_back(std::make_unique<AtomicFileWriter>(options_.front_svg_path));
  files.back()->write(plot_.svg(inventory_, front_.front(), options_.title));
  if (streamed_table_) streamed_table_->commit();
  for (auto& file : files) file->commit();
}

}  // namespace fasop
