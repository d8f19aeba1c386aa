#pragma once
#include <cstddef>
#include <functional>
#include <vector>

#include "search/search.h"

namespace fasop {

/// Runs evaluate(0 .. count-1) on `threads` threads (0: every CPU the process may use; the
/// workers sleep between loops, see worker_pool.h) and returns the results in index order,
/// whatever the thread count. An exception thrown by one evaluation (the lowest index's) is
/// rethrown here, after the loop.
/// `progress`, if set, gets (done_before + done, total) now and then.
std::vector<CandidateResult> evaluate_in_parallel(size_t count, int threads,
                                                  const std::function<CandidateResult(size_t)>& evaluate,
                                                  const ProgressFn& progress = {}, size_t done_before = 0,
                                                  size_t total = 0);

/// Runs body(0 .. count-1) on `threads` threads as parallel_for does, and `progress`, if set,
/// gets (done_before + done, total) now and then (total 0: done_before + count), one call at a
/// time. evaluate_in_parallel is this with each result kept.
void for_each_in_parallel(size_t count, int threads, const std::function<void(size_t)>& body,
                          const ProgressFn& progress = {}, size_t done_before = 0, size_t total = 0);

/// The number of threads `threads` means: itself, or for 0 the CPUs the process may use.
int resolve_threads(int threads);

/// Splits [0, count) into `blocks` contiguous blocks and runs work(block, first, end) on each,
/// one thread a block.
void run_in_blocks(size_t count, int blocks, const std::function<void(int, size_t, size_t)>& work);

}  // namespace fasop
