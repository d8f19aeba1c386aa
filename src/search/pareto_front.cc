#include "search/pareto_front.h"

#include <algorithm>
#include <numeric>

namespace fasop {

std::vector<size_t> pareto_front(const std::vector<CostTimePoint>& points) {
  std::vector<size_t> order(points.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // Cheapest first; among equal costs the fastest, then the first listed.
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (points[a].cost_usd != points[b].cost_usd) return points[a].cost_usd < points[b].cost_usd;
    if (points[a].step_time_s != points[b].step_time_s) return points[a].step_time_s < points[b].step_time_s;
    return a < b;
  });
  // A point is on the front iff it is faster than every cheaper (or equally cheap, earlier) one.
  std::vector<size_t> front;
  double fastest_so_far = std::numeric_limits<double>::infinity();
  for (size_t i : order) {
    if (points[i].step_time_s < fastest_so_far) {
      front.push_back(i);
      fastest_so_far = points[i].step_time_s;
    }
  }
  return front;
}

}  // namespace fasop
