#include "emit/interleaved_chunks.h"

namespace fasop {

std::vector<int> interleaved_chunk_units(const PlanFile& plan) {
  const int pp = plan.key.pp, v = plan.key.virtual_stages;
  std::vector<int> chunks(static_cast<size_t>(pp) * v, 0);
  for (int r = 0; r < pp; ++r) {
    const int units = plan.partition[r];
    const bool fill_last = r == pp - 1 && units < v;
    for (int c = 0; c < v; ++c) {
      const int larger = fill_last ? v - 1 - c : c;  // the chunk's place in larger-first order
      chunks[static_cast<size_t>(c) * pp + r] = units / v + (larger < units % v ? 1 : 0);
    }
  }
  return chunks;
}

}  // namespace fasop
