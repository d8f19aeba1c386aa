#include "report/pareto_report.h"

#include <algorithm>

#include "report/fasop_csv.h"

#include "search/parallel_evaluate.h"

namespace fasop {

ParetoReport::ParetoReport(const ClusterSpec& inventory, ParetoReportOptions options)
    : inventory_(inventory), options_(std::move(options)), front_(options_.constraints) {
  if (!options_.table_path.empty() && options_.stream_table) {
    streamed_table_ = std::make_unique<AtomicFileWriter>(options_.table_path);
    streamed_table_->write(fasop_csv_header(inventory_, options_.csv));
  }
}

void ParetoReport::consume(std::vector<CandidateResult>& chunk, const std::vector<EnumerationIndex>& index) {
  candidates_ += chunk.size();
  front_.consume(chunk, index);
  plot_.consume(chunk, index);
  if (streamed_table_) {
    std::string rows;
    for (const CandidateResult& r : chunk) append_fasop_csv_row(rows, inventory_, r, options_.csv);
    streamed_table_->write(rows);
  } else if (!options_.table_path.empty()) {
    all_.consume(chunk, index);
  }
}

void ParetoReport::finish() {
  // Write everything to temporary files first; rename only when all are written.
  std::vector<std::unique_ptr<AtomicFileWriter>> files;
  if (!options_.table_path.empty() && !streamed_table_) {
    // FASOP's order: by step time, ties in enumeration order.
    std::vector<size_t> order(all_.all().size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    const std::vector<CandidateResult>& held = all_.all();
    const std::vector<EnumerationIndex>& index = all_.index();
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const double ta = held[a].estimate.step_time_s, tb = held[b].estimate.step_time_s;
      return ta < tb || (!(tb < ta) && index[a] < index[b]);
    });
    std::vector<CandidateResult> all;
    all.reserve(order.size());
    for (size_t i : order) all.push_back(std::move(all_.all()[i]));
    // Formatting tens of thousands of rows is worth the threads: each formats a contiguous
    // block into one string, and the blocks are written in order.
    std::vector<std::string> blocks(resolve_threads(options_.threads));
    run_in_blocks(all.size(), static_cast<int>(blocks.size()), [&](int block, size_t first, size_t end) {
      blocks[block].reserve((end - first) * 420);
      for (size_t i = first; i < end; ++i) append_fasop_csv_row(blocks[block], inventory_, all[i], options_.csv);
    });
    files.push_back(std::make_unique<AtomicFileWriter>(options_.table_path));
    files.back()->write(fasop_csv_header(inventory_, options_.csv));
    for (const std::string& block : blocks) files.back()->write(block);
  }
  files.push_back(std::make_unique<AtomicFileWriter>(options_.front_csv_path));
  files.back()->write(fasop_csv(inventory_, front_.front(), options_.csv));
  files.push_back(std::make_unique<AtomicFileWriter>(options_.front_svg_path));
  files.back()->write(plot_.svg(inventory_, front_.front(), options_.title, options_.constraints));
  if (streamed_table_) streamed_table_->commit();
  for (auto& file : files) file->commit();
}

}  // namespace fasop
