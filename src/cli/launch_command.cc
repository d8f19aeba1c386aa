#include "cli/launch_command.h"

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/saved_plan.h"
#include "launch/launch.h"
#include "report/atomic_file.h"
#include "specs/spec_error.h"

namespace fasop {
namespace {

namespace fs = std::filesystem;

struct LaunchOptions {
  std::string plan;
  std::string backend = "local";
  bool dry_run = false;
  bool force = false;
  std::string trainer_cmd;
  std::string megatron_script = "pretrain_gpt.py";
  std::string runs_dir = "main_logs/runs";
  std::string cluster;
  int master_port = 29500;
  // docker
  std::string image;
  std::string master_addr;
  std::vector<std::string> mounts;
  std::string runtime = "docker";
  bool no_gpus = false;
  std::string container_args;
  // status / logs
  std::string job;
  int node = -1;
  int tail = 10;
};

std::string absolute(const std::string& path) {
  std::string normal = fs::absolute(path).lexically_normal().string();
  if (normal.size() > 1 && normal.back() == '/') normal.pop_back();
  return normal;
}

/// Refuses plans that cannot run as planned, unless --force.
void check_launchable(const LaunchOptions& options, const LoadedPlan& loaded) {
  const MemoryVerdict& memory = loaded.result.estimate.memory;
  if (memory.is_oom && !options.force)
    throw SpecError(options.plan + " is estimated not to fit in GPU memory (" + std::to_string(memory.oom_gpumem_gib) +
                    " GiB a GPU); plan again, or --force to launch it anyway");
}

void launch(const LaunchOptions& options) {
  PlanOverrides overrides;
  overrides.cluster = options.cluster;
  LoadedPlan loaded = load_plan(options.plan, overrides);
  check_launchable(options, loaded);
  const PlanFile& plan = loaded.file;
  const ClusterSpec& cluster = loaded.setup->cluster;
  LaunchLayout layout = make_launch_layout(plan, cluster);
  LaunchSettings settings;
  settings.plan_path = absolute(options.plan);
  settings.workdir = absolute(".");
  settings.master_port = options.master_port;
  settings.trainer_command = options.trainer_cmd.empty()
                                 ? megatron_trainer_command(plan, loaded.setup->model, options.megatron_script)
                                 : options.trainer_cmd;
  const std::string runs_dir = absolute(options.runs_dir);
  if (options.backend == "docker") {
    if (options.image.empty()) throw SpecError("--backend docker needs --image IMAGE");
    if (options.master_addr.empty())
      throw SpecError("--backend docker needs --master-addr ADDRESS (node rank 0's address as the other nodes reach it)");
    DockerSettings docker{options.image, options.master_addr, options.mounts, options.runtime, !options.no_gpus,
                          options.container_args};
    std::cout << docker_commands(plan, layout, settings, docker);
    return;
  }
  if (options.backend == "slurm") {
    const std::string job_name = "fasop-" + loaded.setup->model.name;
    std::string script = slurm_batch_script(plan, cluster, layout, settings, runs_dir, job_name);
    if (options.dry_run) {
      std::cout << script;
      return;
    }
    SlurmSubmission submitted = submit_slurm_job(script, runs_dir, settings.plan_path, layout);
    const std::string& job = submitted.job;
    const std::string& run_dir = submitted.run_dir;
    std::cout << "submitted Slurm job " << job << " (" << layout.components.size() << " component"
              << (layout.components.size() > 1 ? "s" : "") << ", " << layout.nodes.size() << " nodes)\n"
              << "run directory " << run_dir << "\n"
              << "fasop-cpp launch status " << job << "\n";
    return;
  }
  // local
  std::string node_sh = node_script(plan, layout, settings);
  if (options.dry_run) {
    std::cout << "# " << layout.nodes.size() << " local processes: FASOP_RUN_DIR=" << runs_dir << "/"
              << next_local_job(runs_dir) << " MASTER_ADDR=127.0.0.1 bash node.sh NODE_RANK, with node.sh:\n"
              << node_sh;
    return;
  }
  LocalRun run = run_local_job(runs_dir, settings.plan_path, layout, node_sh);
  std::cout << "local job " << run.job << ": " << layout.nodes.size() << " nodes, " << run.failed() << " failed\n"
            << "run directory " << run.run_dir << "\n";
  if (run.failed())
    throw SpecError("local job " + run.job + ": " + std::to_string(run.failed()) +
                    " node(s) failed; fasop-cpp launch status " + run.job);
}

/// The run directory of `job`, which must exist.
std::string run_directory(const LaunchOptions& options) {
  std::string dir = options.runs_dir + "/" + options.job;
  if (!fs::is_directory(dir))
    throw SpecError("no run directory " + dir + " for job " + options.job + "; give --runs-dir where it was launched");
  return dir;
}

int status(const LaunchOptions& options) {
  RunStatus run = read_run_status(run_directory(options));
  std::cout << "job " << run.job << " (" << run.backend << ")";
  if (run.backend == "slurm") {
    std::vector<SlurmJobState> states = parse_scontrol_jobs(scontrol_show_job(run.job));
    if (states.empty()) std::cout << ": unknown to scontrol (ended long ago, or no Slurm here)";
    for (size_t i = 0; i < states.size(); ++i)
      std::cout << (i ? ", " : ": ") << "component " << i << " " << states[i].state << " (exit " << states[i].exit_code
                << ")";
  }
  std::cout << "\n";
  std::printf("%-5s %-20s %-12s %s\n", "node", "type", "host", "exit");
  for (const NodeStatus& n : run.nodes)
    std::printf("%-5d %-20s %-12s %s\n", n.node_rank, n.node_type.c_str(), n.host.empty() ? "-" : n.host.c_str(),
                n.exit_code ? std::to_string(*n.exit_code).c_str() : "running or not started");
  for (const NodeStatus& n : run.nodes)
    if (n.exit_code && *n.exit_code != 0)
      std::cout << "\nnode rank " << n.node_rank << " (" << n.node_type << (n.host.empty() ? "" : " on " + n.host)
                << ") failed with exit code " << *n.exit_code << "; the last lines of " << n.log_path << ":\n"
                << file_tail(n.log_path, options.tail);
  std::cout << (run.failed() ? "\nthe job failed\n" : run.finished() ? "\nevery node exited with 0\n" : "");
  return run.failed() ? 1 : 0;
}

void logs(const LaunchOptions& options) {
  RunStatus run = read_run_status(run_directory(options));
  for (const NodeStatus& n : run.nodes) {
    if (options.node >= 0 && n.node_rank != options.node) continue;
    std::cout << "== node rank " << n.node_rank << " (" << n.node_type << (n.host.empty() ? "" : " on " + n.host)
              << "), exit " << (n.exit_code ? std::to_string(*n.exit_code) : "-") << ": " << n.log_path << "\n"
              << file_tail(n.log_path, 1 << 30);
  }
}

}  // namespace

void add_launch_command(CLI::App& app) {
  auto options = std::make_shared<LaunchOptions>();
  CLI::App* command = app.add_subcommand(
      "launch", "start a saved plan: one Slurm heterogeneous job, docker commands, or local processes; "
                "`launch status JOB` and `launch logs JOB` tell what became of it");
  command->require_subcommand(0, 1);
  command->add_option("--plan", options->plan, "plan file (search --save-plan)");
  command->add_option("--backend", options->backend, "slurm, docker or local (default local)")
      ->check(CLI::IsMember({"slurm", "docker", "local"}));
  command->add_flag("--dry-run", options->dry_run, "print the batch script (slurm) or node script (local); start nothing");
  command->add_flag("--force", options->force, "launch a plan estimated not to fit in GPU memory");
  command->add_option("--trainer-cmd", options->trainer_cmd,
                      "shell command each node runs (default: torchrun of Megatron-LM's --megatron-script with the "
                      "plan's arguments); it sees NNODES, NODE_RANK, GPUS_PER_NODE, WORLD_SIZE, MASTER_ADDR, "
                      "MASTER_PORT and FASOP_* (plan, degrees, first rank, run directory)");
  command->add_option("--megatron-script", options->megatron_script, "Megatron-LM's training script (default pretrain_gpt.py)");
  command->add_option("--runs-dir", options->runs_dir,
                      "where run directories go (default main_logs/runs; on a filesystem all nodes share)");
  command->add_option("--cluster", options->cluster, "launch on this cluster file instead of the plan's");
  command->add_option("--master-port", options->master_port, "rendezvous port (default 29500)")->check(CLI::Range(1, 65535));
  command->add_option("--image", options->image, "docker: the container image");
  command->add_option("--master-addr", options->master_addr, "docker: node rank 0's address");
  command->add_option("--mount", options->mounts, "docker: -v SRC:DST, repeatable");
  command->add_option("--runtime", options->runtime, "docker: docker or podman (default docker)")
      ->check(CLI::IsMember({"docker", "podman"}));
  command->add_flag("--no-gpus", options->no_gpus, "docker: leave out --gpus all (CPU-only containers)");
  command->add_option("--container-args", options->container_args,
                      "docker: flags written as given after `run`, e.g. '--ulimit nofile=20000:20000'");

  CLI::App* status_command = command->add_subcommand("status", "a launched job's state, each node's exit code, failures' logs");
  status_command->add_option("job", options->job, "job id (Slurm's, or local-N)")->required();
  status_command->add_option("--tail", options->tail, "log lines shown for a failed node (default 10)");
  CLI::App* logs_command = command->add_subcommand("logs", "each node's output of a launched job");
  logs_command->add_option("job", options->job, "job id (Slurm's, or local-N)")->required();
  logs_command->add_option("--node", options->node, "only this node rank");
  for (CLI::App* sub : {status_command, logs_command})
    sub->add_option("--runs-dir", options->runs_dir, "where the run directories are (default main_logs/runs)");

  status_command->callback([options] {
    if (int code = status(*options); code != 0) throw CLI::RuntimeError(code);
  });
  logs_command->callback([options] { logs(*options); });
  command->callback([options, command, status_command, logs_command] {
    if (status_command->parsed() || logs_command->parsed()) return;
    if (options->plan.empty()) throw SpecError("launch needs --plan PLAN (or: launch status JOB, launch logs JOB)");
    launch(*options);
  });
}

}  // namespace fasop
