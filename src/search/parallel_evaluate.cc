#include "search/parallel_evaluate.h"

#include <atomic>
#include <mutex>

#include "search/worker_pool.h"

namespace fasop {

void for_each_in_parallel(size_t count, int threads, const std::function<void(size_t)>& body,
                          const ProgressFn& progress, size_t done_before, size_t total) {
  if (total == 0) total = done_before + count;
  std::atomic<size_t> done{0};
  std::mutex progress_mutex;
  parallel_for(count, resolve_threads(threads), [&](size_t i) {
    body(i);
    const size_t finished = ++done;
    if (progress && (finished % 256 == 0 || finished == count)) {
      std::lock_guard<std::mutex> lock(progress_mutex);
      progress(done_before + finished, total);
    }
  });
}

std::vector<CandidateResult> evaluate_in_parallel(size_t count, int threads,
                                                  const std::function<CandidateResult(size_t)>& evaluate,
                                                  const ProgressFn& progress, size_t done_before, size_t total) {
  std::vector<CandidateResult> results(count);
  for_each_in_parallel(count, threads, [&](size_t i) { results[i] = evaluate(i); }, progress, done_before, total);
  return results;
}

int resolve_threads(int threads) { return threads > 0 ? threads : available_cpus(); }

void run_in_blocks(size_t count, int blocks, const std::function<void(int, size_t, size_t)>& work) {
  parallel_for(static_cast<size_t>(blocks), blocks, [&](size_t block) {
    work(static_cast<int>(block), count * block / blocks, count * (block + 1) / blocks);
  });
}

}  // namespace fasop
