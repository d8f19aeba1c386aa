#pragma once
#include <string>
#include <utility>
#include <vector>

#include "specs/plan.h"
#include "specs/yaml_field.h"

namespace fasop {

/// A parallel degree beyond tp, dp and pp (context, expert, expert tensor): 1 where a plan
/// leaves it out. Plan files, validation cases and `estimate` read and write every one through
/// this row, so a new degree is a PlanKey field and a row (docs/adding-a-dimension.md).
struct PlanDegree {
  const char* name;     ///< its key in plan files and validation cases' plan blocks; estimate's --NAME
  int PlanKey::*value;  ///< where a plan holds it
  int most;             ///< the largest a file may give
  const char* comment;  ///< what plan files say beside it
  const char* help;     ///< estimate --help
};

/// Every such degree, in the order files list them.
const std::vector<PlanDegree>& plan_degrees();

/// Their names, for a reader's only_keys.
std::vector<std::string> plan_degree_names();

/// Reads each degree `block` gives into `key` (the others stay as they are).
void read_plan_degrees(const Field& block, PlanKey& key);

/// "cp: 2    # context parallelism: each sequence over cp GPUs\n" for each degree above 1.
std::string plan_degrees_yaml(const PlanKey& key);

/// The degrees above 1, by name, in plan_degrees()' order. What prints a plan's layout shows
/// these, so that a plan without them reads as before.
std::vector<std::pair<std::string, int>> context_expert_degrees(const PlanKey& key);

/// Those degrees as text, each after `separator`, the precision a search chose (PlanKey::
/// precision) and a token dispatcher other than alltoall: with ", ", ", cp 2, ep 8, etp 2, fp8,
/// hybridep"; "" for none.
std::string context_expert_text(const PlanKey& key, const std::string& separator);

}  // namespace fasop
