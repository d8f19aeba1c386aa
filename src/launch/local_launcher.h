#pragma once
// `launch --backend local`: every node of the plan as a local process (bash node.sh RANK), with
// the environment a Slurm node gets and the rendezvous on 127.0.0.1. What tests and
// single-machine runs use.
#include <string>
#include <vector>

namespace fasop {

/// Runs node.sh of `run_dir` for node ranks 0..nodes-1 at once and waits for them all; returns
/// each node's exit code (128 + signal for a killed one).
std::vector<int> run_local_nodes(const std::string& run_dir, int nodes);

}  // namespace fasop
