#include "specs/sliding_window.h"

namespace fasop {

double causal_pair_share(int sequence, int window) {
  const double s = sequence, w = window;
  if (window <= 0 || window >= sequence) return 0.5;
  // Queries 0..w-1 meet 1..w keys; the other s - w meet w + 1 each.
  return (w * (w + 1) / 2 + (s - w) * (w + 1)) / (s * s);
}

}  // namespace fasop
