// parallel_for (search/worker_pool.h) and the loops built on it: every index once, nesting,
// exceptions, index order.
#include <catch2/catch.hpp>

#include <atomic>
#include <mutex>
#include <string>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "search/parallel_evaluate.h"
#include "search/worker_pool.h"

using namespace fasop;

TEST_CASE("parallel_for calls each index once, on as many threads as asked, whatever the count", "[pool]") {
  for (int threads : {1, 2, 3, 8}) {
    for (size_t count : {size_t{0}, size_t{1}, size_t{2}, size_t{7}, size_t{1000}}) {
      std::vector<std::atomic<int>> calls(count);
      parallel_for(count, threads, [&](size_t i) { ++calls[i]; });
      for (size_t i = 0; i < count; ++i) CHECK(calls[i] == 1);
    }
  }
  // Three threads on a loop whose bodies wait for each other: only three can meet.
  std::atomic<int> arrived{0};
  std::set<std::thread::id> ids;
  std::mutex ids_mutex;
  parallel_for(3, 3, [&](size_t) {
    ++arrived;
    while (arrived < 3) std::this_thread::yield();
    std::lock_guard<std::mutex> lock(ids_mutex);
    ids.insert(std::this_thread::get_id());
  });
  CHECK(ids.size() == 3);
}

TEST_CASE("parallel_for: a loop inside a body runs serially, and the lowest index's exception is rethrown", "[pool]") {
  std::atomic<int> inner{0};
  parallel_for(4, 2, [&](size_t) { parallel_for(5, 2, [&](size_t) { ++inner; }); });
  CHECK(inner == 20);
  try {
    parallel_for(100, 2, [](size_t i) {
      if (i == 37 || i == 90) throw std::runtime_error("index " + std::to_string(i));
    });
    FAIL("no exception");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()) == "index 37");
  }
  // The pool serves the next loop after one that threw.
  std::atomic<int> after{0};
  parallel_for(10, 2, [&](size_t) { ++after; });
  CHECK(after == 10);
}

TEST_CASE("evaluate_in_parallel and run_in_blocks keep index order and cover every index", "[pool]") {
  std::vector<CandidateResult> results = evaluate_in_parallel(50, 3, [](size_t i) {
    CandidateResult r;
    r.estimate.step_time_s = static_cast<double>(i);
    return r;
  });
  REQUIRE(results.size() == 50);
  for (size_t i = 0; i < results.size(); ++i) CHECK(results[i].estimate.step_time_s == static_cast<double>(i));
  std::vector<int> owner(10, -1);
  run_in_blocks(10, 3, [&](int block, size_t first, size_t end) {
    for (size_t i = first; i < end; ++i) owner[i] = block;
  });
  CHECK(owner == std::vector<int>{0, 0, 0, 1, 1, 1, 2, 2, 2, 2});
  CHECK(resolve_threads(5) == 5);
  CHECK(resolve_threads(0) == available_cpus());
  CHECK(available_cpus() >= 1);
}
