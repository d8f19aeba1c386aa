// sort_by_fit_and_time (search/search.h): run_search's order without a buffer of the results.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <vector>

#include "search/search.h"

using namespace fasop;

TEST_CASE("the search's order: a stable sort by fit, then time, moved along the permutation's cycles", "[search]") {
  std::mt19937 random(7);
  for (bool memory_aware : {false, true}) {
    for (size_t count : {size_t{0}, size_t{1}, size_t{2}, size_t{5}, size_t{1000}}) {
      std::vector<CandidateResult> results(count);
      for (size_t i = 0; i < count; ++i) {
        results[i].plan.partition = {int(i)};  // each result's own mark, to see ties keep their order
        results[i].estimate.step_time_s = double(random() % 7);  // few values: many ties
        results[i].estimate.memory.is_oom = random() % 3 == 0;
      }
      std::vector<CandidateResult> expected = results;
      std::stable_sort(expected.begin(), expected.end(), [&](const CandidateResult& a, const CandidateResult& b) {
        if (memory_aware && a.estimate.memory.is_oom != b.estimate.memory.is_oom) return !a.estimate.memory.is_oom;
        return a.estimate.step_time_s < b.estimate.step_time_s;
      });
      sort_by_fit_and_time(results, memory_aware);
      INFO("memory_aware " << memory_aware << ", " << count << " results");
      REQUIRE(results.size() == expected.size());
      for (size_t i = 0; i < count; ++i) CHECK(results[i].plan.partition == expected[i].plan.partition);
    }
  }
}
