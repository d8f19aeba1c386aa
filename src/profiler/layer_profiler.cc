// The only translation unit of the layer profiler that includes LibTorch (each costs ~20 s and
// 1.2 GB of compiler memory): the layers, their timing, the whole-model step check.
#include "profiler/layer_profiler.h"

#include <torch/torch.h>
#ifdef FASOP_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#endif
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <functional>
#include <limits>
#include <map>
#include <sstream>

#include "costmodel/analytic_policy.h"
#include "costmodel/estimate.h"
#include "costmodel/make_context.h"
#include "profiler/provenance.h"
#include "profiler/reporting_errors.h"
#include "report/atomic_file.h"
#include "specs/spec_error.h"
#include "specs/spec_loader.h"
#include "specs/spec_store.h"

namespace fasop {
namespace {

using Clock = std::chrono::steady_clock;
// Timings shorter than this are mostly timer and scheduling noise, and too small a part of a
// step to matter: their spread is reported but not held against the profile.
constexpr double kMinCheckedSeconds = 50e-6;

torch::Dtype parse_dtype(const std::string& dtype) {
  if (dtype == "fp32") return torch::kFloat32;
  if (dtype == "fp16") return torch::kFloat16;
  if (dtype == "bf16") return torch::kBFloat16;
  throw SpecError("--dtype: unknown '" + dtype + "'; use fp32, fp16 or bf16");
}

torch::Device parse_device(const std::string& device) {
  bool cuda = device == "cuda" || device.rfind("cuda:", 0) == 0;
  if (device != "cpu" && !cuda) throw SpecError("--device: unknown '" + device + "'; use cpu, cuda or cuda:N");
  if (cuda && !torch::cuda::is_available())
    throw SpecError("--device " + device + ": no CUDA device here (or this build of LibTorch has no CUDA); use cpu");
  return torch::Device(device);
}

void synchronize(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index() < 0 ? -1 : device.index());
}

/// One layer type built as one GPU's tensor-parallel shard: its parameters and its forward pass.
struct LayerModule {
  std::vector<torch::Tensor> params;
  std::function<torch::Tensor(const torch::Tensor&)> forward;
  std::function<torch::Tensor(int mbs)> input;  ///< a micro-batch for this layer
  double matmul_flops = 0;                       ///< per sample, counted from the shapes
  bool scalar_output = false;                    ///< the head returns its loss
};

torch::Tensor weight(std::vector<torch::Tensor>& params, std::vector<int64_t> shape, const torch::TensorOptions& o) {
  double scale = 1.0 / std::sqrt(double(shape.front()));
  params.push_back((torch::randn(shape, o) * scale).set_requires_grad(true));
  return params.back();
}

torch::Tensor ones(std::vector<torch::Tensor>& params, int64_t n, const torch::TensorOptions& o) {
  params.push_back(torch::ones({n}, o).set_requires_grad(true));
  return params.back();
}

/// A norm over the last dimension: LayerNorm (scale and bias) or RMSNorm (scale).
std::function<torch::Tensor(const torch::Tensor&)> make_norm(const ModelSpec& m, std::vector<torch::Tensor>& params,
                                                              const torch::TensorOptions& o) {
  const int64_t h = m.hidden;
  torch::Tensor scale = ones(params, h, o);
  if (m.norm == Norm::kRmsNorm)
    return [scale](const torch::Tensor& x) { return x * torch::rsqrt(x.pow(2).mean(-1, true) + 1e-6) * scale; };
  params.push_back(torch::zeros({h}, o).set_requires_grad(true));
  torch::Tensor bias = params.back();
  return [scale, bias, h](const torch::Tensor& x) { return torch::layer_norm(x, {h}, scale, bias); };
}

/// Self- (or cross-) attention on one GPU's heads: QKV and output projections as Megatron
/// shards them (columns, then rows), grouped key/value heads repeated to the query heads.
/// `causal`: each position attends to those before it, as decoders train (the fused kernel
/// then skips the masked half of the scores, which the analytic model counts the same way).
std::function<torch::Tensor(const torch::Tensor&)> make_attention(const ModelSpec& m, int tp, bool causal,
                                                                   std::vector<torch::Tensor>& params,
                                                                   const torch::TensorOptions& o, double* flops) {
  const int64_t h = m.hidden, hd = m.hidden / m.heads, heads = m.heads / tp, kv = std::max(1, m.kv_heads / tp);
  const int64_t s = m.sequence;
  torch::Tensor qkv = weight(params, {h, (heads + 2 * kv) * hd}, o);
  torch::Tensor out = weight(params, {heads * hd, h}, o);
  *flops += 2.0 * s * h * (heads + 2 * kv) * hd + 2.0 * 2.0 * heads * s * s * hd * (causal ? 0.5 : 1) +
            2.0 * s * heads * hd * h;
  return [=](const torch::Tensor& x) {
    const int64_t b = x.size(0);
    torch::Tensor all = x.matmul(qkv);
    torch::Tensor q = all.narrow(-1, 0, heads * hd).view({b, s, heads, hd}).transpose(1, 2);
    torch::Tensor k = all.narrow(-1, heads * hd, kv * hd).view({b, s, kv, hd}).transpose(1, 2);
    torch::Tensor v = all.narrow(-1, (heads + kv) * hd, kv * hd).view({b, s, kv, hd}).transpose(1, 2);
    if (kv < heads) k = k.repeat_interleave(heads / kv, 1), v = v.repeat_interleave(heads / kv, 1);
#if TORCH_VERSION_MAJOR >= 2
    // The fused kernel (FlashAttention where the device has it), as training uses: memory
    // linear in the sequence rather than the score matrix's square.
    torch::Tensor context = at::scaled_dot_product_attention(q, k, v, {}, 0.0, causal);
#else
    torch::Tensor scores = q.matmul(k.transpose(-2, -1)) / std::sqrt(double(hd));
    if (causal)
      scores = scores.masked_fill(torch::ones({s, s}, torch::TensorOptions().dtype(torch::kBool).device(x.device())).triu(1),
                                  -std::numeric_limits<double>::infinity());
    torch::Tensor context = torch::softmax(scores, -1).matmul(v);
#endif
    return context.transpose(1, 2).reshape({b, s, heads * hd}).matmul(out);
  };
}

LayerModule build_layer(const ModelSpec& m, const LayerUnit& unit, int tp, int vocab_multiple,
                        const torch::TensorOptions& o) {
  LayerModule layer;
  // The vocabulary is padded to a multiple of vocab_multiple x tp, as the trainer pads it; the
  // analytic model's libtorch stack counts the same rows (padded_vocab_shard).
  const int64_t h = m.hidden, s = m.sequence, v = padded_vocab_shard(m.vocab, tp, vocab_multiple),
                f = m.ffn_hidden / tp;
  auto activations = [o, h, s](int mbs) { return torch::randn({mbs, s, h}, o).set_requires_grad(true); };
  switch (unit.role) {
    case LayerRole::kEmbedding: {
      torch::Tensor table = weight(layer.params, {v, h}, o);
      layer.forward = [table](const torch::Tensor& ids) { return torch::embedding(table, ids); };
      layer.input = [o, v, s](int mbs) {
        return torch::randint(0, v, {mbs, s}, torch::TensorOptions().dtype(torch::kLong).device(o.device()));
      };
      break;
    }
    case LayerRole::kPostProcess: {
      auto norm = make_norm(m, layer.params, o);
      torch::Tensor head = weight(layer.params, {h, v}, o);
      layer.matmul_flops = 2.0 * s * h * v;
      layer.scalar_output = true;
      layer.forward = [norm, head, v](const torch::Tensor& x) {
        torch::Tensor logits = norm(x).matmul(head).view({-1, v}).to(torch::kFloat32);
        torch::Tensor labels = torch::randint(0, v, {logits.size(0)}, logits.options().dtype(torch::kLong));
        return torch::nn::functional::cross_entropy(logits, labels);
      };
      layer.input = activations;
      break;
    }
    case LayerRole::kTransformer: {
      auto norm1 = make_norm(m, layer.params, o), norm2 = make_norm(m, layer.params, o);
      // Decoders' self-attention is causal (T5's and BERT's encoders attend to everything, and
      // cross-attention to the whole encoder output).
      const bool causal = m.causal && unit.segment != "encoder";
      auto attention = make_attention(m, tp, causal, layer.params, o, &layer.matmul_flops);
      std::function<torch::Tensor(const torch::Tensor&)> cross;
      if (unit.cross_attention) cross = make_attention(m, tp, false, layer.params, o, &layer.matmul_flops);
      // A gated MLP (quick-GELU's GLU timed as SwiGLU's: a sigmoid-based activation and a product).
      const bool swiglu = is_gated(m.activation);
      torch::Tensor up = weight(layer.params, {h, f}, o);
      torch::Tensor gate = swiglu ? weight(layer.params, {h, f}, o) : torch::Tensor();
      torch::Tensor down = weight(layer.params, {f, h}, o);
      layer.matmul_flops += (swiglu ? 3 : 2) * 2.0 * s * h * f;
      layer.forward = [=](const torch::Tensor& x) {
        torch::Tensor y = x + attention(norm1(x));
        if (cross) y = y + cross(norm1(y));
        torch::Tensor z = norm2(y);
        torch::Tensor inner = swiglu ? torch::silu(z.matmul(gate)) * z.matmul(up) : torch::gelu(z.matmul(up));
        return y + inner.matmul(down);
      };
      layer.input = activations;
      break;
    }
  }
  return layer;
}

/// Median and relative spread of repeated timings: the interquartile range over the median,
/// which one stray repeat (a page fault, a context switch) does not move.
struct Timing {
  double median_s = 0, spread = 0;
};

Timing summarise(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  Timing t;
  const size_t n = samples.size();
  t.median_s = samples[n / 2];
  t.spread = t.median_s > 0 ? (samples[(3 * n) / 4 < n ? (3 * n) / 4 : n - 1] - samples[n / 4]) / t.median_s : 0;
  return t;
}

/// Forward and backward times of one layer at one micro-batch, and its peak activation bytes
/// on CUDA (0 on CPU).
struct LayerTiming {
  Timing forward, backward;
  double activation_bytes = 0;
};

/// One forward and backward pass of a layer, timed, with its peak activation bytes on CUDA.
struct LayerSample {
  double forward_s = 0, backward_s = 0, activation_bytes = 0;
};

LayerSample time_once(LayerModule& layer, int mbs, const torch::Device& device) {
  LayerSample sample;
  torch::Tensor x = layer.input(mbs);
  synchronize(device);
#ifdef FASOP_WITH_CUDA
  size_t before = 0;
  const int index = device.index() < 0 ? 0 : device.index();
  if (device.is_cuda()) {
    c10::cuda::CUDACachingAllocator::resetPeakStats(index);
    before = c10::cuda::CUDACachingAllocator::getDeviceStats(index).allocated_bytes[0].current;
  }
#endif
  auto t0 = Clock::now();
  torch::Tensor out = layer.forward(x);
  synchronize(device);
  auto t1 = Clock::now();
#ifdef FASOP_WITH_CUDA
  if (device.is_cuda())
    sample.activation_bytes = double(c10::cuda::CUDACachingAllocator::getDeviceStats(index).allocated_bytes[0].peak - before);
#endif
  torch::Tensor grad = layer.scalar_output ? torch::ones_like(out) : torch::randn_like(out);
  synchronize(device);
  auto t2 = Clock::now();
  out.backward(grad);
  synchronize(device);
  auto t3 = Clock::now();
  sample.forward_s = std::chrono::duration<double>(t1 - t0).count();
  sample.backward_s = std::chrono::duration<double>(t3 - t2).count();
  return sample;
}

/// Times every layer type at every micro-batch size in rounds, each round running every layer
/// at every size one after another, so that each layer meets the caches a step leaves it and a
/// slow spell of the machine touches all layers and sizes alike (the order of times across
/// sizes then holds on a busy machine). Gradients stay between rounds: a step accumulates them
/// over its micro-batches, and the warm-up rounds allocate them. `each_round` (if any) runs
/// once a round, told whether the round is timed: the step check times a whole step there, so
/// that step and layers see the same machine. Returns [size][layer].
std::vector<std::vector<LayerTiming>> time_layers(const std::vector<LayerModule*>& layers,
                                                  const std::vector<int>& micro_batches, const torch::Device& device,
                                                  int warmup, int repeats,
                                                  const std::function<void(int round)>& each_round = {}) {
  const size_t sizes = micro_batches.size(), n = layers.size();
  std::vector<std::vector<double>> forward(sizes * n), backward(sizes * n);
  std::vector<std::vector<LayerTiming>> result(sizes, std::vector<LayerTiming>(n));
  for (int r = 0; r < warmup + repeats; ++r) {
    if (each_round) each_round(r);
    for (size_t m = 0; m < sizes; ++m)
      for (size_t i = 0; i < n; ++i) {
        LayerSample sample = time_once(*layers[i], micro_batches[m], device);
        result[m][i].activation_bytes = sample.activation_bytes;
        if (r < warmup) continue;
        forward[m * n + i].push_back(sample.forward_s);
        backward[m * n + i].push_back(sample.backward_s);
      }
  }
  for (size_t m = 0; m < sizes; ++m)
    for (size_t i = 0; i < n; ++i) {
      result[m][i].forward = summarise(forward[m * n + i]);
      result[m][i].backward = summarise(backward[m * n + i]);
    }
  return result;
}

std::string device_name(const torch::Device& device) {
#ifdef FASOP_WITH_CUDA
  if (device.is_cuda()) return at::cuda::getDeviceProperties(device.index() < 0 ? 0 : device.index())->name;
#endif
  (void)device;
  return "cpu";
}

std::string join(const std::vector<int>& values) {
  std::string text;
  for (int v : values) text += (text.empty() ? "" : ",") + std::to_string(v);
  return text;
}

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

/// layer type -> tp -> mbs -> value, as the profile's YAML maps.
using LayerTable = std::map<std::string, std::map<int, std::map<int, double>>>;

std::string yaml_table(const std::string& key, const LayerTable& table) {
  std::string out = key + ":\n";
  for (const auto& [layer, per_tp] : table) {
    out += "  " + layer + ":\n";
    for (const auto& [tp, points] : per_tp) {
      out += "    " + std::to_string(tp) + ": {";
      bool first = true;
      for (const auto& [mbs, value] : points) {
        out += (first ? "" : ", ") + std::to_string(mbs) + ": " + number(value);
        first = false;
      }
      out += "}\n";
    }
  }
  return out;
}

/// The tables a profile run fills, the largest spread of its repeats, and their YAML.
struct MeasuredProfile {
  LayerTable forward, backward, flops, activation;
  bool cuda = false;
  double worst_spread = 0;
  std::string worst_what;

  void record(const std::string& type, int tp, int mbs, const LayerTiming& t, double matmul_flops) {
    forward[type][tp][mbs] = t.forward.median_s;
    backward[type][tp][mbs] = t.backward.median_s;
    flops[type][tp][mbs] = matmul_flops;
    if (cuda) activation[type][tp][mbs] = t.activation_bytes;
    for (auto [what, timing] : {std::pair{"forward", t.forward}, {"backward", t.backward}})
      if (timing.median_s >= kMinCheckedSeconds && timing.spread > worst_spread)
        worst_spread = timing.spread,
        worst_what = type + " tp " + std::to_string(tp) + " mbs " + std::to_string(mbs) + " " + what;
    std::printf("%-20s tp %2d mbs %4d  forward %.6f s  backward %.6f s  spread %3.0f%% / %3.0f%%\n", type.c_str(), tp,
                mbs, t.forward.median_s, t.backward.median_s, 100 * t.forward.spread, 100 * t.backward.spread);
  }

  /// The profile file: `command` and the repeats in its header, then the tables.
  std::string yaml(const std::string& command, const std::string& model, const std::string& gpu, int warmup,
                   int repeats) const {
    std::ostringstream out;
    out << "# Measured by `" << command << "` on " << host_name() << " (" << gpu << "), " << utc_now() << ", LibTorch "
        << TORCH_VERSION << ":\n"
        << "# median of " << repeats << " repeats after " << warmup << " warm-up runs; largest spread "
        << number(100 * worst_spread) << "%.\n"
        << "# forward_s/backward_s: seconds per unit; matmul_flops: the shard's matrix-multiply FLOPs"
        << (cuda ? "; activation_bytes: peak memory a forward pass adds" : "") << ".\n"
        << "model: " << model << "\ngpu: " << gpu << "\n"
        << yaml_table("forward_s", forward) << yaml_table("backward_s", backward) << yaml_table("matmul_flops", flops);
    if (cuda) out << yaml_table("activation_bytes", activation);
    return out.str();
  }
};

ModelSpec load_model(const std::string& name) {
  DiskSource disk;
  SpecStore store(disk, embedded_presets());
  return store.load_model(name);
}

/// Distinct layer types in order, with a unit of each.
std::vector<const LayerUnit*> distinct_layers(const ModelSpec& model) {
  std::vector<const LayerUnit*> layers;
  for (const LayerUnit& unit : model.units)
    if (std::none_of(layers.begin(), layers.end(), [&](const LayerUnit* l) { return l->type == unit.type; }))
      layers.push_back(&unit);
  return layers;
}

int profile_layers(const LayerProfileOptions& options) {
  ModelSpec model = load_model(options.model);
  if (model.mtp_layers > 0)
    throw SpecError("--model: model '" + model.name + "' has multi-token prediction (mtp_layers), which the LibTorch "
                    "profiler does not build; time its layers from the GPU's data (--analytic-profiles)");
  if (model.sliding_window.enabled())
    throw SpecError("--model: model '" + model.name + "' has sliding-window attention, which the LibTorch profiler "
                    "does not build; time its layers from the GPU's data (--analytic-profiles)");
  if (model.mla.enabled())
    throw SpecError("--model: model '" + model.name + "' has multi-head latent attention (an 'mla' block), which the "
                    "LibTorch profiler does not build; time its layers from the GPU's data (--analytic-profiles)");
  for (int tp : options.tps)
    if (tp <= 0 || model.heads % tp != 0 || model.kv_heads % tp != 0 || model.ffn_hidden % tp != 0)
      throw SpecError("--tp " + std::to_string(tp) + ": must divide model '" + model.name + "''s " +
                      std::to_string(model.heads) + " heads, " + std::to_string(model.kv_heads) +
                      " key/value heads and MLP width " + std::to_string(model.ffn_hidden));
  for (int mbs : options.micro_batches)
    if (mbs <= 0) throw SpecError("--mbs: micro-batch sizes must be positive");
  torch::Device device = parse_device(options.device);
  torch::TensorOptions tensor = torch::TensorOptions().dtype(parse_dtype(options.dtype)).device(device);
  if (options.threads > 0) torch::set_num_threads(options.threads);
  // The output must be writable before minutes of measuring; nothing appears unless all succeeds.
  std::unique_ptr<AtomicFileWriter> file;
  if (!options.output.empty()) file = std::make_unique<AtomicFileWriter>(options.output);
  torch::manual_seed(0);
  const std::string gpu = options.gpu.empty() ? device_name(device) : options.gpu;
  MeasuredProfile measured;
  measured.cuda = device.is_cuda();
  const bool progress = !options.quiet && ::isatty(STDERR_FILENO);
  const std::vector<const LayerUnit*> units = distinct_layers(model);
  for (int tp : options.tps) {
    std::vector<LayerModule> layers;
    for (const LayerUnit* unit : units) layers.push_back(build_layer(model, *unit, tp, options.vocab_multiple, tensor));
    std::vector<LayerModule*> timed;
    for (LayerModule& layer : layers) timed.push_back(&layer);
    auto show_round = [&](int round) {
      if (progress)
        std::fprintf(stderr, "\rprofile: tp %d, round %d of %d ...          ", tp, round + 1,
                     options.warmup + options.repeats);
    };
    std::vector<std::vector<LayerTiming>> timings =
        time_layers(timed, options.micro_batches, device, options.warmup, options.repeats, show_round);
    for (size_t m = 0; m < options.micro_batches.size(); ++m)
      for (size_t i = 0; i < units.size(); ++i)
        measured.record(units[i]->type, tp, options.micro_batches[m], timings[m][i],
                        layers[i].matmul_flops * options.micro_batches[m]);
  }
  if (progress) std::fprintf(stderr, "\n");
  std::printf("largest spread of the repeats (of timings from %.0f us): %.0f%% (%s)\n", 1e6 * kMinCheckedSeconds,
              100 * measured.worst_spread, measured.worst_what.c_str());
  if (measured.worst_spread > options.max_spread && !options.allow_noisy)
    throw SpecError("the repeats of " + measured.worst_what + " vary by " + number(100 * measured.worst_spread) +
                    "% (more than --max-spread " + number(100 * options.max_spread) +
                    "%): the machine is busy or the layers too small to time; "
                    "use more --repeats, a quieter machine, or --allow-noisy");
  if (!file) return 0;
  const std::string command = "fasop-cpp profile layers --model " + options.model + " --device " + options.device +
                              " --tp " + join(options.tps) + " --mbs " + join(options.micro_batches) + " --dtype " +
                              options.dtype + " --vocab-multiple " + std::to_string(options.vocab_multiple);
  file->write(measured.yaml(command, model.name, gpu, options.warmup, options.repeats));
  file->commit();
  std::printf("wrote %s\n", options.output.c_str());
  return 0;
}

/// The whole model, stacked, for the step check.
std::vector<LayerModule> build_stack(const ModelSpec& model, const torch::TensorOptions& tensor) {
  std::vector<LayerModule> layers;
  for (const LayerUnit& unit : model.units) layers.push_back(build_layer(model, unit, 1, kMegatronVocabMultiple, tensor));
  return layers;
}

/// One training step of the stack: gradients cleared, then forward and backward of each
/// micro-batch, accumulating gradients (the optimizer's update is not part of the estimate).
double time_step_once(std::vector<LayerModule>& stack, const StepCheckOptions& options, const torch::Device& device) {
  for (LayerModule& l : stack)
    for (torch::Tensor& p : l.params) p.mutable_grad() = torch::Tensor();
  synchronize(device);
  auto t0 = Clock::now();
  for (int micro = 0; micro < options.micro_batches; ++micro) {
    torch::Tensor x = stack.front().input(options.micro_batch);
    for (LayerModule& l : stack) x = l.forward(x);
    x.backward();
  }
  synchronize(device);
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// The planner's estimate of a step: one GPU of the profile's type, pp = tp = dp = 1.
double estimate_single_gpu_step(ModelSpec model, const ProfileSpec& profile, const StepCheckOptions& options) {
  model.global_batch = options.micro_batch * options.micro_batches;
  ClusterSpec one;
  one.name = "one " + profile.gpu;
  NodeType node;
  node.name = profile.gpu;
  node.gpu = profile.gpu;
  node.gpus_per_node = 1;
  node.gpu_memory_gib = 1e6;
  node.intra_node_bandwidth_bits_per_s = node.inter_node_bandwidth_bits_per_s = 1e12;
  one.node_types = {node};
  one.nodes = {0};
  AnalyticPolicy policy;
  PlanKey key;
  key.mbs = options.micro_batch;
  key.node_order = {0};
  PlanContext ctx = make_plan_context(model, one, {&profile}, policy, key);
  return estimate_plan(ctx, policy, {model.num_units()}).step_time_s;
}

/// Times whole steps; with --measure-profile also each layer type in the same rounds (the
/// stack's own first layer of each type), written as a profile the estimate then reads.
int check_step(const StepCheckOptions& options) {
  if (options.profile.empty() == options.measure_profile.empty())
    throw SpecError("profile step: give --profile FILE (estimate from a profile) or --measure-profile FILE "
                    "(measure one alongside the steps and estimate from it)");
  ModelSpec model = load_model(options.model);
  std::string profile_path = options.profile, profile_text;
  if (!options.profile.empty()) {
    DiskSource disk;
    std::optional<std::string> text = disk.read(options.profile);
    if (!text) throw SpecError("--profile: cannot read '" + options.profile + "'");
    profile_text = *text;
  }
  torch::Device device = parse_device(options.device);
  if (options.threads > 0) torch::set_num_threads(options.threads);
  torch::manual_seed(0);
  std::vector<LayerModule> stack = build_stack(model, torch::TensorOptions().dtype(parse_dtype(options.dtype)).device(device));
  std::vector<double> steps;
  auto time_step = [&](int round) {
    double seconds = time_step_once(stack, options, device);
    if (round >= options.warmup) steps.push_back(seconds);
  };
  if (options.measure_profile.empty()) {
    for (int r = 0; r < options.warmup + options.repeats; ++r) time_step(r);
  } else {
    std::unique_ptr<AtomicFileWriter> file = std::make_unique<AtomicFileWriter>(options.measure_profile);
    std::vector<const LayerUnit*> units = distinct_layers(model);
    std::vector<LayerModule*> timed;
    for (const LayerUnit* unit : units) timed.push_back(&stack[size_t(unit - model.units.data())]);
    std::vector<LayerTiming> timings =
        time_layers(timed, {options.micro_batch}, device, options.warmup, options.repeats, time_step).front();
    MeasuredProfile measured;
    measured.cuda = device.is_cuda();
    for (size_t i = 0; i < units.size(); ++i)
      measured.record(units[i]->type, 1, options.micro_batch, timings[i], timed[i]->matmul_flops * options.micro_batch);
    const std::string command = "fasop-cpp profile step --model " + options.model + " --device " + options.device +
                                " --mbs " + std::to_string(options.micro_batch) + " --dtype " + options.dtype +
                                " --measure-profile FILE";
    profile_text = measured.yaml(command, model.name, device_name(device), options.warmup, options.repeats);
    file->write(profile_text);
    file->commit();
    profile_path = options.measure_profile;
  }
  ProfileSpec profile = parse_profile(profile_text, profile_path);
  double estimated = estimate_single_gpu_step(model, profile, options);
  double measured = summarise(steps).median_s;
  double error = (estimated - measured) / measured;
  std::printf("model %s, %d micro-batches of %d on %s: measured %.6f s a step, estimated from %s %.6f s: error %+.1f%%\n",
              model.name.c_str(), options.micro_batches, options.micro_batch, options.device.c_str(), measured,
              profile_path.c_str(), estimated, 100 * error);
  return 0;
}

}  // namespace

int run_layer_profile(const LayerProfileOptions& options) {
  return reporting_errors("", [&] { return profile_layers(options); });
}

int run_step_check(const StepCheckOptions& options) {
  return reporting_errors("", [&] { return check_step(options); });
}

}  // namespace fasop
