#pragma once
// The memory a plan leaves free on every GPU (--memory-headroom): a share of the GPU's memory
// ("5%") or GiB ("4"). The default, 5%, covers the memory model's error (docs/memory.md gives
// it per validation set) and what a run may allocate beyond a step (checkpointing, evaluation).
#include <optional>
#include <string>

namespace fasop {

/// The headroom: a share of each GPU's memory, or a fixed amount.
struct MemoryHeadroom {
  double share = 0.05;  ///< of the GPU's memory (used when gib is 0)
  double gib = 0;       ///< GiB, when given so
  double bytes(double capacity_bytes) const { return gib > 0 ? gib * 1024 * 1024 * 1024 : share * capacity_bytes; }
  /// As the option writes it: "5%", "4 GiB".
  std::string text() const;
};

/// A headroom as `--memory-headroom` takes it: "PCT%" (0 to under 100) or GiB (0 or more, below
/// `smallest_gpu_gib`, the least memory of the cluster's GPUs; 0 for no such bound). On a bad
/// value none, and `problem` says what is wrong.
std::optional<MemoryHeadroom> parse_memory_headroom(const std::string& text, double smallest_gpu_gib, std::string* problem);

}  // namespace fasop
