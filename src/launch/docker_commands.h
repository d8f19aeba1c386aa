#pragma once
// A plan as `docker run` commands, one per node: the same node environment and trainer as a
// Slurm node gets, in a container on the host's network with all its GPUs.
#include <string>
#include <vector>

#include "launch/launch_layout.h"
#include "launch/node_script.h"
#include "specs/plan_file.h"

namespace fasop {

/// How the containers are made.
struct DockerSettings {
  std::string image;                ///< e.g. nvcr.io/nvidia/pytorch:24.05-py3
  std::string master_addr;          ///< node rank 0's address as the others reach it
  std::vector<std::string> mounts;  ///< -v SRC:DST[:ro] each
  std::string runtime = "docker";   ///< or podman
  bool gpus = true;                 ///< --gpus all (off for CPU-only tests)
  /// Written as given right after `run`: flags a host needs, e.g. podman's "--ulimit nofile=..."
  /// where root may not raise its limits.
  std::string extra_args;
};

/// A shell script: per node rank, a comment naming the node and its `docker run` line. The
/// trainer's output goes to the container's stdout; FASOP_RUN_DIR is /tmp in the container.
std::string docker_commands(const PlanFile& plan, const LaunchLayout& layout, const LaunchSettings& settings,
                            const DockerSettings& docker);

}  // namespace fasop
