#include "launch/slurm_options.h"

#include <sstream>

#include "specs/spec_error.h"

namespace fasop {
namespace {

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, separator);) parts.push_back(part);
  return parts;
}

std::string node_type_names(const ClusterSpec& cluster) {
  std::string names;
  for (const NodeType& t : cluster.node_types) names += (names.empty() ? "" : ", ") + t.name;
  return names;
}

/// The mapping of one --partition entry; `type` receives the node type's name.
SlurmMapping parse_partition(const std::string& entry, std::string* type) {
  const std::string usage = "; write TYPE=PARTITION[,gres=G][,constraint=C][,account=A]";
  const size_t equals = entry.find('=');
  if (equals == std::string::npos || equals == 0)
    throw SpecError("--partition '" + entry + "': no node type before '='" + usage);
  *type = entry.substr(0, equals);
  std::vector<std::string> fields = split(entry.substr(equals + 1), ',');
  SlurmMapping mapping;
  if (fields.empty() || fields[0].empty() || fields[0].find('=') != std::string::npos)
    throw SpecError("--partition '" + entry + "': no partition name after '" + *type + "='" + usage);
  mapping.partition = fields[0];
  for (size_t i = 1; i < fields.size(); ++i) {
    const size_t at = fields[i].find('=');
    const std::string key = fields[i].substr(0, at), value = at == std::string::npos ? "" : fields[i].substr(at + 1);
    std::string* target = key == "gres" ? &mapping.gres : key == "constraint" ? &mapping.constraint
                        : key == "account" ? &mapping.account : nullptr;
    if (!target || value.empty())
      throw SpecError("--partition '" + entry + "': '" + fields[i] + "' is not gres=G, constraint=C or account=A" + usage);
    *target = value;
  }
  return mapping;
}

}  // namespace

void apply_partition_options(ClusterSpec& cluster, const std::vector<std::string>& partitions) {
  for (const std::string& entry : partitions) {
    std::string type;
    SlurmMapping mapping = parse_partition(entry, &type);
    const int index = cluster.find_node_type(type);
    if (index < 0)
      throw SpecError("--partition '" + entry + "': cluster " + cluster.source + " has no node type '" + type +
                      "'; name one of " + node_type_names(cluster));
    cluster.node_types[index].slurm = mapping;
  }
}

void check_sbatch_args(const std::vector<std::string>& sbatch_args) {
  // What the batch script writes per component from the plan and the node types' mappings.
  static const std::vector<std::string> written = {"--partition", "-p", "--nodes", "-N", "--ntasks", "-n",
                                                   "--ntasks-per-node", "--gres", "--constraint", "-C",
                                                   "--output", "-o", "--job-name", "-J"};
  for (const std::string& arg : sbatch_args) {
    if (arg.empty() || arg[0] != '-' || arg.find('\n') != std::string::npos)
      throw SpecError("--sbatch-arg '" + arg + "': not an sbatch option; give one option a flag, e.g. --sbatch-arg=--time=02:00:00");
    const std::string name = arg.substr(0, arg.find_first_of("= "));
    for (const std::string& w : written)
      if (name == w || (w.size() == 2 && arg.rfind(w, 0) == 0))
        throw SpecError("--sbatch-arg '" + arg + "': the batch script sets " + w +
                        " itself from the plan; map node types with --partition TYPE=NAME[,gres=G][,constraint=C]");
  }
}

}  // namespace fasop
