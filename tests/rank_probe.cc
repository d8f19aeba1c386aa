// rank_probe: the trainer of the launch tests. Started on every node of a launch (in place of
// torchrun), it writes one line per GPU rank of its node: the rank, node rank, the stage,
// data-parallel replica and tensor-parallel lane the plan gives it, and the environment the
// launch set, so that the tests can check every rank against the plan.
// Usage: rank_probe (reads NODE_RANK, GPUS_PER_NODE, FASOP_FIRST_RANK, WORLD_SIZE, NNODES,
// MASTER_ADDR, MASTER_PORT, FASOP_NODE_TYPE, FASOP_PLAN; SLURMD_NODENAME under Slurm).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "launch/launch_layout.h"
#include "specs/plan_file.h"

namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

int env_int(const char* name) {
  std::string value = env(name);
  if (value.empty()) {
    std::fprintf(stderr, "rank_probe: %s is not set\n", name);
    std::exit(3);
  }
  return std::stoi(value);
}

}  // namespace

int main() {
  std::ifstream in(env("FASOP_PLAN"));
  std::stringstream text;
  text << in.rdbuf();
  fasop::PlanFile plan = fasop::parse_plan_file(text.str(), env("FASOP_PLAN"));
  const int node_rank = env_int("NODE_RANK"), gpus = env_int("GPUS_PER_NODE"), first = env_int("FASOP_FIRST_RANK");
  char host[256] = "";
  ::gethostname(host, sizeof host - 1);
  const std::string slurm_node = env("SLURMD_NODENAME");
  for (int local = 0; local < gpus; ++local) {
    fasop::RankCoordinates r = fasop::coordinates_of_rank(plan, first + local);
    std::printf("rank=%d local_rank=%d node_rank=%d stage=%d dp=%d tp=%d world_size=%s nnodes=%s master=%s:%s "
                "node_type=%s node=%s\n",
                r.rank, local, node_rank, r.stage, r.dp_index, r.tp_index, env("WORLD_SIZE").c_str(),
                env("NNODES").c_str(), env("MASTER_ADDR").c_str(), env("MASTER_PORT").c_str(),
                env("FASOP_NODE_TYPE").c_str(), slurm_node.empty() ? host : slurm_node.c_str());
  }
  return 0;
}
