#pragma once
// launch: a saved plan started on nodes, and what became of it.
//   make_launch_layout   node ranks and components; coordinates_of_rank (launch_layout.h)
//   node_script          node.sh, what every node runs (node_script.h)
//   slurm_batch_script   one heterogeneous Slurm job (slurm_script.h)
//   docker_commands      a `docker run` per node (docker_commands.h)
//   run_local_nodes      the nodes as local processes (local_launcher.h)
//   read_run_status      exit codes and logs of a run directory (run_status.h)
//   sbatch_submit        sbatch and scontrol (slurm_client.h)
//   submit_slurm_job     a batch script submitted, or run_local_job: the nodes run here (launch_run.h)
//   torchrun_script_command   Megatron-LM's or Megatron-Bridge's script under torchrun (trainer_command.h)
//   torchtitan_trainer_command  torchtitan's trainer with the plan's module (stack_trainer.h)
//   merge_trainer_args   the plan's Megatron-LM arguments with a trainer config's (trainer_args.h)
//   launch_environment   what the nodes export: node type's, trainer config's, plan's (launch_environment.h)
//   apply_partition_options, check_sbatch_args  --partition and --sbatch-arg (slurm_options.h)
#include "launch/docker_commands.h"
#include "launch/launch_environment.h"
#include "launch/launch_layout.h"
#include "launch/launch_run.h"
#include "launch/local_launcher.h"
#include "launch/node_script.h"
#include "launch/run_directory.h"
#include "launch/run_status.h"
#include "launch/slurm_client.h"
#include "launch/slurm_options.h"
#include "launch/slurm_script.h"
#include "launch/stack_trainer.h"
#include "launch/trainer_args.h"
#include "launch/trainer_command.h"
