#pragma once
// The --pareto search: every layout on every cluster shape one could rent from an inventory,
// streamed in chunks so that memory stays bounded however many candidates there are.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "search/cluster_shapes.h"
#include "search/pareto_front.h"
#include "search/search.h"

namespace fasop {

/// Where a candidate comes in the exhaustive enumeration (shapes in cluster_shapes order, each
/// shape's layouts in the search space's order): ties are broken by it, whatever order the
/// candidates were estimated in.
using EnumerationIndex = uint64_t;

/// Receives the candidates of a pareto search, one chunk at a time.
class CandidateSink {
 public:
  virtual ~CandidateSink() = default;
  /// `index[i]` is chunk[i]'s enumeration index. A sink may move candidates out of the chunk;
  /// one that does must be the last to see it.
  virtual void consume(std::vector<CandidateResult>& chunk, const std::vector<EnumerationIndex>& index) = 0;
};

/// What a search over shapes keeps: the cost-versus-time front, or (--use-subset) only the
/// best plans by one objective under the constraints, which rules out far more: a floor then
/// has to beat one number, not both of a front point's.
enum class Ranking { kFront, kCheapest, kFastest };

/// What the pareto search needs: the search input with the inventory as its cluster (and a
/// profile for every node type), the most nodes of each type to rent, and the constraints the
/// front must respect.
struct ParetoInput {
  SearchInput search;
  NodeCounts limits;
  PlanConstraints constraints;
  Ranking ranking = Ranking::kFront;
  size_t keep = 1;  ///< with an objective: how many of the best plans to keep
  /// Up to this many candidates the first pass's results are held for the second; above, they
  /// are computed again, so that memory does not grow with the candidate count.
  size_t hold_limit = 250000;
  /// Give every candidate the full partitioner, not only those that could reach the front:
  /// the same front, a better table, about twenty times the work.
  bool refine_all = false;
};

/// What a pareto search did.
struct ParetoStats {
  size_t candidates = 0;
  size_t refined = 0;  ///< candidates whose floor left them a chance on the front
  size_t shapes_estimated = 0;  ///< the bounded search's: shapes whose layouts were estimated
};

/// How many shapes and candidates a pareto search has, without estimating any.
struct ParetoSize {
  size_t shapes = 0;
  size_t candidates = 0;
};
ParetoSize count_pareto_candidates(const ParetoInput& input);

/// Called now and then with (pass 1 or 2, done, total): pass 1 counts candidates estimated
/// quickly, pass 2 the candidates refined (held) or handed on (streamed).
using PassProgressFn = std::function<void(int, size_t, size_t)>;

/// Estimates every layout (the search space's order) of every placement of every shape
/// (cluster_shapes order), handing them to `sink` in that order. Three steps: every candidate
/// at FASOP's partition (a memory-aware policy's: exact_fitting_partition) with a coarse floor;
/// the floor partition and exact floor where that floor is not beaten by the front so far;
/// best_partition where the exact floor is still not beaten. No partition beats a floor, so the
/// front is what best_partition on every candidate would give, at a fraction of the work.
/// The output does not depend on the thread count.
ParetoStats run_pareto_search(const ParetoInput& input, CandidateSink& sink, const PassProgressFn& progress = {});

/// Keeps the front of the candidates that `constraints` admit, and nothing else; or, with an
/// objective, the `keep` best of them.
class FrontTracker : public CandidateSink {
 public:
  explicit FrontTracker(PlanConstraints constraints, Ranking ranking = Ranking::kFront, size_t keep = 1)
      : constraints_(constraints), ranking_(ranking), keep_(keep) {}
  /// Of equal points the one with the lowest enumeration index stays (with an objective: ties
  /// on it go to the better other measure, then the lowest index).
  void consume(std::vector<CandidateResult>& chunk, const std::vector<EnumerationIndex>& index) override;
  /// The front, cheapest first; with an objective, the best plans, best first.
  const std::vector<CandidateResult>& front() const { return front_; }
  /// What a floor has to beat to matter, as a front (cheapest first) for cannot_reach_front:
  /// the front itself; with an objective, once `keep` plans are known, one point made of the
  /// last one's objective and nothing of the other measure (cost 0 or time 0).
  const std::vector<CandidateResult>& bound() const { return ranking_ == Ranking::kFront ? front_ : bound_; }
  size_t admitted() const { return admitted_; }

 private:
  void consume_ranked(std::vector<CandidateResult>& chunk, const std::vector<EnumerationIndex>& index);

  PlanConstraints constraints_;
  Ranking ranking_;
  size_t keep_;
  std::vector<CandidateResult> front_;
  std::vector<EnumerationIndex> front_index_;
  std::vector<CandidateResult> bound_;
  size_t admitted_ = 0;
};

/// Keeps every candidate, in the order they come, with their enumeration indices.
class CandidateCollector : public CandidateSink {
 public:
  void consume(std::vector<CandidateResult>& chunk, const std::vector<EnumerationIndex>& index) override {
    all_.insert(all_.end(), std::make_move_iterator(chunk.begin()), std::make_move_iterator(chunk.end()));
    index_.insert(index_.end(), index.begin(), index.end());
  }
  std::vector<CandidateResult>& all() { return all_; }
  const std::vector<EnumerationIndex>& index() const { return index_; }

 private:
  std::vector<CandidateResult> all_;
  std::vector<EnumerationIndex> index_;
};

/// The indices first, first + 1, ... of a chunk of `count` candidates in enumeration order.
std::vector<EnumerationIndex> consecutive_indices(size_t first, size_t count);

}  // namespace fasop
