#include "cli/launch_command.h"

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/planner_options.h"
#include "cli/run_report.h"
#include "cli/saved_plan.h"
#include "emit/megatron_args.h"
#include "emit/megatron_bridge_args.h"
#include "emit/plan_checks.h"
#include "emit/torchtitan_config.h"
#include "launch/launch.h"
#include "report/atomic_file.h"
#include "specs/preset_catalog.h"
#include "specs/spec_error.h"
#include "specs/spec_store.h"

namespace fasop {
namespace {

namespace fs = std::filesystem;

struct LaunchOptions {
  std::string plan;
  std::string backend = "local";
  bool dry_run = false;
  bool force = false;
  std::string trainer_cmd;
  std::string trainer_config;
  std::string megatron_script;
  std::string stack = "megatron";
  std::string bridge_script = "scripts/training/run_recipe.py";
  std::string fsdp = "megatron";
  std::string runs_dir = "main_logs/runs";
  std::string cluster;
  int master_port = 29500;
  // slurm
  std::vector<std::string> partitions;
  SlurmOptions slurm;
  // docker
  std::string image;
  std::string master_addr;
  std::vector<std::string> mounts;
  std::string runtime = "docker";
  bool no_gpus = false;
  std::string container_args;
  // status / logs / report
  std::string job;
  int node = -1;
  int tail = 10;
  int warmup = 5;
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

/// Refuses options the backend does not take.
void check_backend_options(const LaunchOptions& options) {
  if (options.backend == "slurm") return;
  if (!options.partitions.empty() || !options.slurm.sbatch_args.empty())
    throw SpecError("--partition and --sbatch-arg are for --backend slurm");
  if (!options.slurm.container_image.empty() || !options.slurm.container_mounts.empty())
    throw SpecError("--container-image and --container-mounts are pyxis's, for --backend slurm; docker takes --image and --mount");
}

/// The trainer config a stack's launch takes when given none.
std::string default_trainer_config(const std::string& stack) {
  return stack == "torchtitan" ? "torchtitan-short" : stack == "megatron-bridge" ? "megatron-bridge-mock" : "megatron-mock";
}

/// The trainer config: the file given, else the stack's shipped default; none for --trainer-cmd.
TrainerConfig trainer_config(const LaunchOptions& options) {
  DiskSource disk;
  SpecStore store(disk, embedded_presets());
  const bool megatron = options.trainer_cmd.empty();
  if (options.trainer_config.empty())
    return megatron ? store.load_trainer_config(default_trainer_config(options.stack)) : TrainerConfig{};
  TrainerConfig config = store.load_trainer_config(options.trainer_config);
  if (!megatron && !config.args.empty())
    throw SpecError(config.source + ": field 'args': the stack's arguments, but --trainer-cmd runs another trainer; "
                    "give its arguments in the command and keep only env: here");
  return config;
}

/// What every node runs and exports: the trainer command (Megatron-LM's with the plan's
/// arguments merged with the trainer config's, unless --trainer-cmd) and the environment.
LaunchSettings launch_settings(const LaunchOptions& options, const LoadedPlan& loaded, const ClusterSpec& cluster) {
  const PlanFile& plan = loaded.file;
  TrainerConfig config = trainer_config(options);
  LaunchSettings settings;
  settings.plan_path = absolute(options.plan);
  settings.workdir = absolute(".");
  settings.master_port = options.master_port;
  const ModelSpec& model = loaded.setup->model;
  if (!options.trainer_cmd.empty()) {
    settings.trainer_command = options.trainer_cmd;
  } else if (options.stack == "torchtitan") {
    settings.trainer_command =
        torchtitan_trainer_command(torchtitan_config_py(plan, model, cluster), stack_config_args(config, options.stack));
    if (std::string note = priced_stack_note(plan, "torchtitan"); !note.empty()) {
      std::cerr << "fasop-cpp: warning: " << note << "\n";
      settings.notes.push_back(note);
    }
  } else if (options.stack == "megatron-bridge") {
    std::vector<std::string> args = megatron_bridge_args(plan, model, cluster);
    const std::vector<std::string> extra = stack_config_args(config, options.stack);
    args.insert(args.end(), extra.begin(), extra.end());
    settings.trainer_command = torchrun_script_command(args, options.bridge_script);
  } else {
    MergedTrainerArgs merged =
        merge_trainer_args(megatron_args(plan, model, MegatronFlavor::kUpstream, fsdp_impl_named(options.fsdp)), config,
                           plan, model);
    const std::string script = !options.megatron_script.empty() ? options.megatron_script
                               : !config.megatron_script.empty() ? config.megatron_script
                                                                 : "pretrain_gpt.py";
    settings.trainer_command = torchrun_script_command(merged.tokens, script);
    settings.notes = merged.notes;
  }
  if (options.trainer_cmd.empty() && options.trainer_config.empty())
    settings.notes.push_back("trainer config " + config.source + ", the default for --stack " + options.stack +
                             " (--trainer-config to give another)");
  LaunchEnvironment environment = launch_environment(plan, cluster, config);
  settings.env_by_node_type = environment.by_node_type;
  settings.notes.insert(settings.notes.end(), environment.notes.begin(), environment.notes.end());
  return settings;
}

/// The options that belong to one stack's trainer.
void check_stack_options(const LaunchOptions& options, const CLI::App& command) {
  if (options.stack != "megatron" && (command.count("--megatron-script") || command.count("--fsdp")))
    throw SpecError("--megatron-script and --fsdp are Megatron-LM's; --stack " + options.stack + " runs its own trainer");
  if (options.stack != "megatron-bridge" && command.count("--bridge-script"))
    throw SpecError("--bridge-script is Megatron-Bridge's, for --stack megatron-bridge");
  if (options.stack != "megatron" && !options.trainer_cmd.empty())
    throw SpecError("--trainer-cmd runs your own trainer: leave out --stack " + options.stack);
}

void launch(const LaunchOptions& options) {
  check_backend_options(options);
  PlanOverrides overrides;
  overrides.cluster = options.cluster;
  LoadedPlan loaded = load_plan(options.plan, overrides);
  check_launchable(options, loaded);
  const PlanFile& plan = loaded.file;
  ClusterSpec cluster = loaded.setup->cluster;
  apply_partition_options(cluster, options.partitions);
  check_sbatch_args(options.slurm.sbatch_args);
  LaunchLayout layout = make_launch_layout(plan, cluster);
  const LaunchSettings settings = launch_settings(options, loaded, cluster);
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
    std::string script = slurm_batch_script(plan, cluster, layout, settings, runs_dir, job_name, options.slurm);
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
  if (run.failed()) {
    // The job ran and failed: exit 1, not an input error's 2.
    std::cerr << "fasop-cpp: local job " << run.job << ": " << run.failed() << " node(s) failed; fasop-cpp launch status "
              << run.job << "\n";
    throw CLI::RuntimeError(1);
  }
}

/// The run directory of the job named on the command line.
std::string run_directory(const LaunchOptions& options) { return find_run_directory(options.job, options.runs_dir); }

/// The run's one-line summary for `launch status`, or why there is none yet ("" before the
/// first iteration past the warm-up).
std::string status_summary(const RunStatus& run, const std::string& dir, int warmup) {
  try {
    IterationLog log = read_run_logs(run, dir);
    if (std::optional<RunReport> report = report_of_run(run, log, warmup)) return run_summary_line(*report);
    if (!log.iterations.empty()) {
      const IterationRecord& last = log.iterations.back();  // torchtitan's lines name no planned steps
      return "iteration " + std::to_string(last.iteration) +
             (last.train_iters > 0 ? "/" + std::to_string(last.train_iters) : "") + ": still in the warm-up (" +
             std::to_string(warmup) + " iterations)";
    }
  } catch (const SpecError& e) {
    return std::string("no report: ") + e.what();
  }
  return "";
}

void report(const LaunchOptions& options) {
  const std::string dir = run_directory(options);
  RunStatus run = read_run_status(dir);
  IterationLog log = read_run_logs(run, dir);
  if (log.iterations.empty())
    throw SpecError(dir + ": no iteration lines in the node logs; the trainer must print Megatron-LM's "
                    "\"iteration I/N | ... | elapsed time per iteration (ms): T |\" or torchtitan's \"step: S ... tps: T\" "
                    "(docs/launching.md, \"Run reports\")");
  std::optional<RunReport> result = report_of_run(run, log, options.warmup);
  if (!result)
    throw SpecError(dir + ": the logs reach iteration " + std::to_string(log.iterations.back().iteration) +
                    " and no logged interval lies past the warm-up of " + std::to_string(options.warmup) +
                    " iterations; lower --warmup");
  std::cout << "job " << run.job << " (" << run.backend << "), plan " << run.plan << "\n" << run_report_text(*result);
  write_file_atomically(dir + "/report.csv", run_report_csv(*result, run.job));
  std::cout << "wrote " << dir << "/report.csv\n";
}

int status(const LaunchOptions& options) {
  const std::string dir = run_directory(options);
  RunStatus run = read_run_status(dir);
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
  if (std::string summary = status_summary(run, dir, options.warmup); !summary.empty())
    std::cout << summary << "\n";
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
  command->add_option("--stack", options->stack,
                      "the training stack each node runs under torchrun: megatron (Megatron-LM's --megatron-script "
                      "with the plan's arguments, default), torchtitan (torchtitan.train with the plan's "
                      "configuration module; launch from torchtitan's root) or megatron-bridge (its --bridge-script "
                      "with the plan's recipe and overrides; launch from Megatron-Bridge's root)")
      ->check(CLI::IsMember({"megatron", "torchtitan", "megatron-bridge"}));
  command->add_option("--bridge-script", options->bridge_script,
                      "Megatron-Bridge's entry point (default scripts/training/run_recipe.py)");
  command->add_option("--trainer-cmd", options->trainer_cmd,
                      "shell command each node runs instead of the stack's trainer; it sees NNODES, NODE_RANK, "
                      "GPUS_PER_NODE, WORLD_SIZE, MASTER_ADDR, MASTER_PORT and FASOP_* (plan, degrees, first rank, "
                      "run directory)");
  command->add_option("--trainer-config", options->trainer_config,
                      "the stack's own arguments and the nodes' environment (YAML: args, env, megatron_script), "
                      "added to the plan's, a flag that sets what the plan fixes refused; a preset or a file (default "
                      "by --stack: megatron-mock, torchtitan-short or megatron-bridge-mock, mock data or short runs; "
                      "`presets show NAME` to start one)");
  command->add_option("--megatron-script", options->megatron_script,
                      "Megatron-LM's training script (default: the trainer config's, else pretrain_gpt.py)");
  command->add_option("--fsdp", options->fsdp,
                      "Megatron-LM: how a ZeRO-3 plan shards, megatron (Megatron-FSDP, default) or torch (PyTorch "
                      "FSDP2), as schedule --fsdp")
      ->check(CLI::IsMember({"megatron", "torch"}));
  command->add_option("--runs-dir", options->runs_dir,
                      "where run directories go (default main_logs/runs; on a filesystem all nodes share)");
  command->add_option("--cluster", options->cluster, "launch on this cluster file instead of the plan's");
  command->add_option("--master-port", options->master_port, "rendezvous port (default 29500)")->check(CLI::Range(1, 65535));
  command->add_option("--partition", options->partitions,
                      "slurm: TYPE=PARTITION[,gres=G][,constraint=C][,account=A], repeatable: where node type TYPE's "
                      "nodes come from (replaces its slurm: in the cluster file)");
  command->add_option("--sbatch-arg", options->slurm.sbatch_args,
                      "slurm: an sbatch option for every component, repeatable, e.g. --sbatch-arg=--time=02:00:00 "
                      "--sbatch-arg=--exclusive");
  command->add_option("--container-image", options->slurm.container_image,
                      "slurm: run the nodes in this image through pyxis (srun --container-image), e.g. "
                      "nvcr.io#nvidia/pytorch:25.01-py3; the run, work and plan directories are mounted");
  command->add_option("--container-mounts", options->slurm.container_mounts,
                      "slurm: more pyxis mounts SRC:DST[:FLAGS], repeatable");
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
  CLI::App* report_command = command->add_subcommand(
      "report", "a run's measured step time against the plan's prediction, tokens/s/GPU, MFU and memory, from "
                "the trainer's logs; writes report.csv into the run directory");
  report_command->add_option("job", options->job, "job id (Slurm's, or local-N) or run directory")->required();
  report_command->add_option("--warmup", options->warmup, "iterations not measured at the start (default 5)")
      ->check(whole_number("iterations", 0));
  status_command->add_option("--warmup", options->warmup, "iterations the summary skips (default 5)")
      ->check(whole_number("iterations", 0));
  CLI::App* logs_command = command->add_subcommand("logs", "each node's output of a launched job");
  logs_command->add_option("job", options->job, "job id (Slurm's, or local-N)")->required();
  logs_command->add_option("--node", options->node, "only this node rank");
  for (CLI::App* sub : {status_command, logs_command, report_command})
    sub->add_option("--runs-dir", options->runs_dir, "where the run directories are (default main_logs/runs)");

  status_command->callback([options] {
    if (int code = status(*options); code != 0) throw CLI::RuntimeError(code);
  });
  logs_command->callback([options] { logs(*options); });
  report_command->callback([options] { report(*options); });
  command->callback([options, command, status_command, logs_command, report_command] {
    if (status_command->parsed() || logs_command->parsed() || report_command->parsed()) return;
    if (options->plan.empty()) throw SpecError("launch needs --plan PLAN (or: launch status JOB, launch logs JOB, launch report JOB)");
    if (command->count("--fsdp") && !options->trainer_cmd.empty())
      throw SpecError("--fsdp picks Megatron-LM's sharding; --trainer-cmd runs another trainer: drop one of them");
    check_stack_options(*options, *command);
    launch(*options);
  });
}

}  // namespace fasop
