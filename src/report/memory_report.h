#pragma once
// A plan's memory for people and scripts: the worst stage's terms at its worst moment against
// its GPU's memory, and the room it leaves (docs/memory.md says what each term holds).
#include <string>

#include "costmodel/estimate.h"

namespace fasop {

/// The memory section of `estimate` and `plan show`: each stage's peak against its GPU, then the
/// worst stage's terms by name in GiB, what PyTorch would report (max allocated, max reserved)
/// and what the process takes, against the GPU's memory and the headroom. "" for a policy
/// without a breakdown (FASOP's).
std::string memory_breakdown_text(const PlanEstimate& estimate);

/// The same as a JSON member: `, "memory": {...}` ("" without a breakdown).
std::string memory_breakdown_json(const PlanEstimate& estimate);

/// The worst stage's peak against its GPU, "71.3/80" GiB (the text tables' column); "" without
/// a breakdown.
std::string memory_fraction_text(const MemoryVerdict& verdict);

}  // namespace fasop
