#pragma once
#include <memory>
#include <string>
#include <vector>

#include "report/atomic_file.h"
#include "report/fasop_csv.h"
#include "report/pareto_plot.h"
#include "search/pareto_search.h"

namespace fasop {

/// Where and how the pareto search's reports are written.
struct ParetoReportOptions {
  std::string table_path;      ///< every candidate, FASOP's columns; empty: not written
  bool stream_table = false;   ///< write rows as they come (enumeration order) instead of sorted
  std::string front_csv_path;  ///< the front, cheapest first, FASOP's columns
  std::string front_svg_path;  ///< the front plotted
  std::string title;           ///< heading of the plot
  PlanConstraints constraints;
  int threads = 0;             ///< for formatting the table; 0: every CPU the process may use
  CsvStyle csv;                ///< the tables' columns and cells
};

/// The sink that turns a pareto search into its reports: it keeps the front, the plot's dots
/// and, unless streaming, every candidate; finish() writes every file (all or none appear).
class ParetoReport : public CandidateSink {
 public:
  ParetoReport(const ClusterSpec& inventory, ParetoReportOptions options);
  void consume(std::vector<CandidateResult>& chunk, const std::vector<EnumerationIndex>& index) override;
  /// Sorts and writes the table (unless streamed), the front CSV and the SVG, then commits.
  void finish();

  const std::vector<CandidateResult>& front() const { return front_.front(); }
  size_t candidates() const { return candidates_; }
  size_t admitted() const { return front_.admitted(); }

 private:
  const ClusterSpec& inventory_;
  ParetoReportOptions options_;
  FrontTracker front_;
  ParetoPlot plot_;
  CandidateCollector all_;
  std::unique_ptr<AtomicFileWriter> streamed_table_;
  size_t candidates_ = 0;
};

}  // namespace fasop
