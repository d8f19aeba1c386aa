// fasop-profile: the profilers behind `fasop-cpp profile ...`, a binary of their own so that
// the planner builds and runs without LibTorch and Gloo.
#include <CLI/CLI.hpp>
#include <malloc.h>

#include "profiler/gemm_profiler.h"
#include "profiler/layer_profiler.h"
#include "profiler/net_profiler.h"

int main(int argc, char** argv) {
  // LibTorch's CPU tensors come from malloc; glibc would map each large one afresh and page
  // it in on first touch, so that timings of the same layer swing by several times. Keeping
  // freed memory in the process makes repeats (and whole steps) measure the computation.
  mallopt(M_MMAP_THRESHOLD, 512 * 1024 * 1024);
  mallopt(M_TRIM_THRESHOLD, 1024 * 1024 * 1024);
  CLI::App app{"fasop-cpp profile: measure layer times and GEMMs (LibTorch) and the network (Gloo, NCCL)"};
  app.require_subcommand(1);
  int code = 0;

  fasop::LayerProfileOptions layers;
  CLI::App* layers_command = app.add_subcommand("layers", "time each layer type of a model, forward and backward");
  layers_command->add_option("--model", layers.model, "model preset or YAML file")->required();
  layers_command->add_option("--device", layers.device, "cpu, cuda or cuda:N (default cpu)");
  layers_command->add_option("--tp", layers.tps, "tensor-parallel degrees, e.g. 1,2,4")->delimiter(',');
  layers_command->add_option("--mbs", layers.micro_batches, "micro-batch sizes, e.g. 1,2,4,8")->delimiter(',');
  layers_command->add_option("--dtype", layers.dtype, "fp32, fp16 or bf16 (default fp32)");
  layers_command->add_option("--gpu", layers.gpu, "GPU name to write in the profile (default: the device's)");
  layers_command->add_option("--warmup", layers.warmup, "untimed runs first (default 2)")->check(CLI::NonNegativeNumber);
  layers_command->add_option("--repeats", layers.repeats, "timed runs; the median is kept (default 10)")
      ->check(CLI::PositiveNumber);
  layers_command->add_option("--max-spread", layers.max_spread,
                             "refuse to write when repeats vary by more than this share of the median (default 0.25)");
  layers_command->add_flag("--allow-noisy", layers.allow_noisy, "write even when the repeats vary more");
  layers_command->add_option("-o,--output", layers.output, "profile YAML to write (configs/profiles format)");
  layers_command->add_option("--threads", layers.threads, "CPU threads for LibTorch (default: its own)");
  layers_command->add_option("--vocab-multiple", layers.vocab_multiple,
                             "pad the vocabulary to a multiple of this x tp, as Megatron-LM's "
                             "--make-vocab-size-divisible-by (default 128; 1: to tp only)")
      ->check(CLI::PositiveNumber);
  layers_command->add_flag("--quiet,-q", layers.quiet, "no progress on stderr");
  layers_command->callback([&] { code = fasop::run_layer_profile(layers); });

  fasop::NetProfileOptions net;
  CLI::App* net_command = app.add_subcommand("net", "time all-reduce and send/recv between local processes");
  net_command->add_option("--backend", net.backend, "gloo (CPU, loopback) or nccl (GPUs)");
  net_command->add_option("--ranks", net.ranks, "local processes (default 2)");
  net_command->add_option("--repeats", net.repeats, "timed runs per size (smaller messages more), spread over 5 sweeps; the median is kept (default 20)")
      ->check(CLI::PositiveNumber);
  net_command->add_option("-o,--output", net.output, "YAML to write, in the cluster file's field names");
  net_command->add_flag("--quiet,-q", net.quiet, "no progress on stderr");
  net_command->callback([&] { code = fasop::run_net_profile(net); });

  fasop::StepCheckOptions step;
  CLI::App* step_command = app.add_subcommand(
      "step", "time a whole training step of the model (pp = tp = dp = 1) against the estimate from a profile");
  step_command->add_option("--model", step.model, "model preset or YAML file")->required();
  step_command->add_option("--profile", step.profile, "profile YAML the planner estimates from");
  step_command->add_option("--measure-profile", step.measure_profile,
                           "measure the layers in the same rounds as the steps (a slow spell of the machine then "
                           "touches both alike), write that profile here and estimate from it");
  step_command->add_option("--device", step.device, "cpu, cuda or cuda:N (default cpu)");
  step_command->add_option("--dtype", step.dtype, "fp32, fp16 or bf16: as the profile was measured (default fp32)");
  step_command->add_option("--mbs", step.micro_batch, "micro-batch size (default 1)")->check(CLI::PositiveNumber);
  step_command->add_option("--micro-batches", step.micro_batches, "micro-batches a step (default 4)")
      ->check(CLI::PositiveNumber);
  step_command->add_option("--warmup", step.warmup, "untimed steps first (default 3)")->check(CLI::NonNegativeNumber);
  step_command->add_option("--repeats", step.repeats, "timed steps; the median is kept (default 20)")
      ->check(CLI::PositiveNumber);
  step_command->add_option("--threads", step.threads, "CPU threads for LibTorch (default: its own)");
  step_command->callback([&] { code = fasop::run_step_check(step); });

  fasop::GemmProfileOptions gemm;
  CLI::App* gemm_command = app.add_subcommand(
      "gemm", "time a sweep of GEMM shapes and fit the GPU data's gemm_peak_share and gemm_half_dim");
  gemm_command->add_option("--device", gemm.device, "cpu, cuda or cuda:N (default cpu)");
  gemm_command->add_option("--dtype", gemm.dtypes, "fp32, fp16, bf16, fp8, e.g. fp16,bf16 (default bf16 on cuda, fp32 on cpu)")
      ->delimiter(',');
  gemm_command->add_option("--shapes", gemm.shapes,
                           "MxNxK shapes, e.g. 4096x4096x4096,1024x12288x4096 (default: m 256..16384 by n, k "
                           "256..12288 on cuda; 128..1024 each on cpu)")
      ->delimiter(',');
  gemm_command->add_flag("--quick", gemm.quick, "a tiny grid (64..512) and 1 + 5 rounds, for a CPU test in seconds");
  gemm_command->add_option("--gpu", gemm.gpu,
                           "shipped GPU data (configs/gpus) to take the peaks from; the file's gpu: name "
                           "(default: the device's)");
  gemm_command->add_option("--peak-tflops", gemm.peak_tflops,
                           "dense peaks, e.g. bf16=989.4,fp32=67 (over --gpu's); without a peak the share is fitted "
                           "against the fastest shape measured")
      ->delimiter(',');
  gemm_command->add_option("--warmup", gemm.warmup, "untimed rounds over all shapes (default 3, 1 with --quick)")
      ->check(CLI::NonNegativeNumber);
  gemm_command->add_option("--repeats", gemm.repeats, "timed rounds over all shapes; the median is kept (default 10, 5 with --quick)")
      ->check(CLI::PositiveNumber);
  gemm_command->add_option("-o,--output", gemm.output, "YAML to write: the points and the fit per dtype");
  gemm_command->add_option("--threads", gemm.threads, "CPU threads for LibTorch (default: its own)");
  gemm_command->add_flag("--quiet,-q", gemm.quiet, "no progress on stderr");
  gemm_command->callback([&] { code = fasop::run_gemm_profile(gemm); });

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return code;
}
