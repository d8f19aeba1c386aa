#include "search/parallel_evaluate.h"

#include <atomic>
#include <string>

#include "specs/spec_error.h"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace fasop {

std::vector<CandidateResult> evaluate_in_parallel(size_t count, int threads,
                                                  const std::function<CandidateResult(size_t)>& evaluate,
                                                  const ProgressFn& progress, size_t done_before, size_t total) {
  if (total == 0) total = done_before + count;
  std::vector<CandidateResult> results(count);
  std::vector<std::string> errors(count);
  std::atomic<size_t> done{0};
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(resolve_threads(threads))
#endif
  for (long i = 0; i < static_cast<long>(count); ++i) {
    try {
      results[i] = evaluate(static_cast<size_t>(i));
    } catch (const SpecError& e) {
      errors[i] = e.what();
    }
    size_t finished = ++done;
    if (progress && (finished % 256 == 0 || finished == count)) {
#ifdef _OPENMP
#pragma omp critical(progress)
#endif
      progress(done_before + finished, total);
    }
  }
  for (const std::string& error : errors)
    if (!error.empty()) throw SpecError(error);
  return results;
}

int resolve_threads(int threads) {
#ifdef _OPENMP
  return threads > 0 ? threads : omp_get_max_threads();
#else
  return 1;
#endif
}

void run_in_blocks(size_t count, int blocks, const std::function<void(int, size_t, size_t)>& work) {
#ifdef _OPENMP
#pragma omp parallel for schedule(static, 1) num_threads(blocks)
#endif
  for (int block = 0; block < blocks; ++block) work(block, count * block / blocks, count * (block + 1) / blocks);
}

}  // namespace fasop
