#pragma once
// What `launch --backend slurm` takes besides the plan: node types mapped to partitions on the
// command line (over the cluster file's `slurm:`), sbatch options for every component, and a
// container for the nodes (pyxis/enroot, as NVIDIA's clusters run NGC images).
#include <string>
#include <vector>

#include "specs/cluster_spec.h"

namespace fasop {

/// The Slurm options of a launch, from the command line.
struct SlurmOptions {
  std::vector<std::string> sbatch_args;       ///< --sbatch-arg, e.g. --time=02:00:00, --exclusive
  std::string container_image;                ///< pyxis's --container-image ("" for none)
  std::vector<std::string> container_mounts;  ///< pyxis's --container-mounts entries, SRC:DST[:FLAGS]
};

/// `cluster` with the node types that `partitions` name mapped anew: each entry is
/// TYPE=PARTITION[,gres=G][,constraint=C][,account=A] and replaces that type's `slurm:`.
/// Throws SpecError naming --partition and the fix for a malformed entry or a TYPE that names no
/// node type of `cluster`.
void apply_partition_options(ClusterSpec& cluster, const std::vector<std::string>& partitions);

/// Throws SpecError naming --sbatch-arg when an argument is not an sbatch option or sets what
/// the batch script writes itself (partition, nodes, tasks, gres, constraint, output, job name).
void check_sbatch_args(const std::vector<std::string>& sbatch_args);

}  // namespace fasop
