#include "report/memory_report.h"

#include <cstdio>

#include "report/json_text.h"
#include "report/number_format.h"

namespace fasop {
namespace {

std::string gib(double bytes, int digits = 2) { return fixed(bytes / kGib, digits); }

/// One "name  value" line of the breakdown, the value right-aligned.
std::string line(const std::string& name, const std::string& value, const std::string& note = "") {
  char text[256];
  std::snprintf(text, sizeof text, "  %-26s %9s GiB%s%s\n", name.c_str(), value.c_str(), note.empty() ? "" : "  ",
                note.c_str());
  return text;
}

/// What each term holds, in a few words.
const char* term_note(const std::string& name) {
  if (name == "weights") return "parameters as the GEMMs read them";
  if (name == "gradients") return "gradient buffers";
  if (name == "master_weights") return "the optimizer's fp32 copy of the parameters";
  if (name == "optimizer_states") return "Adam's two moments";
  if (name == "workspace") return "cuBLAS/Transformer Engine workspaces, buffers kept for reuse";
  if (name == "activations") return "kept for backward by the micro-batches in flight";
  if (name == "layer_transient") return "a layer's intermediates and gradients, recomputed activations";
  if (name == "loss") return "the logits and their gradient";
  if (name == "gathered_params") return "ZeRO-3/FSDP: unsharded parameters held";
  if (name == "unreduced_grads") return "ZeRO-3/FSDP: unsharded gradients before reduce-scatter";
  if (name == "optimizer_step") return "the optimizer step's temporaries";
  if (name == "pipeline_buffers") return "pipeline receive buffers, stage outputs kept";
  if (name == "allocator_reserve") return "the caching allocator's reserve over what is allocated";
  if (name == "runtime") return "outside PyTorch: CUDA context, NCCL buffers";
  return "";
}

const StageMemory* worst_stage(const PlanEstimate& e) {
  if (e.stages.empty() || !e.stages[0].memory.breakdown) return nullptr;
  const int s = e.memory.worst_stage;
  return s >= 0 && size_t(s) < e.stages.size() && e.stages[s].memory.breakdown ? &e.stages[s].memory : nullptr;
}

}  // namespace

std::string memory_fraction_text(const MemoryVerdict& verdict) {
  if (verdict.capacity_gib <= 0) return "";
  const double capacity = verdict.capacity_gib;
  return fixed(verdict.worst_gib, 1) + "/" + fixed(capacity, capacity == double(long(capacity)) ? 0 : 1);
}

std::string memory_breakdown_text(const PlanEstimate& e) {
  const StageMemory* worst = worst_stage(e);
  if (!worst) return "";
  const MemoryBreakdown& b = *worst->breakdown;
  const MemoryTerms& t = b.terms;
  std::string out = "memory per GPU (stage " + std::to_string(e.memory.worst_stage) + ", the least room left; its peak in the " +
                    memory_moment_name(b.moment) + (b.moment == MemoryMoment::kOptimizerStep ? "" : " pass") + ")\n";
  for (const MemoryTermField& field : memory_term_fields()) {
    const double bytes = t.*field.bytes;
    if (field.bytes == &MemoryTerms::allocator_reserve_bytes)
      out += line("= allocated", gib(t.allocated_bytes()), "torch.cuda.max_memory_allocated");
    if (field.bytes == &MemoryTerms::runtime_bytes)
      out += line("= reserved", gib(t.reserved_bytes()), "torch.cuda.max_memory_reserved");
    if (bytes != 0) out += line(field.name, gib(bytes), term_note(field.name));
  }
  out += line("= process", gib(t.device_bytes()),
              "of the GPU's " + gib(b.capacity_bytes, 1) + " GiB; the plan keeps " + gib(b.capacity_bytes - b.limit_bytes) +
                  " GiB free (--memory-headroom): " + (t.device_bytes() <= b.limit_bytes ? "fits" : "does not fit") + ", " +
                  gib(b.capacity_bytes - t.device_bytes()) + " GiB left");
  out += line("after the optimizer step", gib(b.after_step_bytes), "allocated between steps");
  return out;
}

std::string memory_breakdown_json(const PlanEstimate& e) {
  const StageMemory* worst = worst_stage(e);
  if (!worst) return "";
  const MemoryBreakdown& b = *worst->breakdown;
  const MemoryTerms& t = b.terms;
  std::string out = ", \"memory\": {\"worst_stage\": " + std::to_string(e.memory.worst_stage) + ", \"moment\": " +
                    json_string(memory_moment_name(b.moment)) + ", \"terms_gib\": {";
  bool first = true;
  for (const MemoryTermField& field : memory_term_fields()) {
    out += std::string(first ? "" : ", ") + json_string(field.name) + ": " + format_double(t.*field.bytes / kGib);
    first = false;
  }
  out += "}, \"allocated_gib\": " + format_double(t.allocated_bytes() / kGib) +
         ", \"reserved_gib\": " + format_double(t.reserved_bytes() / kGib) +
         ", \"process_gib\": " + format_double(t.device_bytes() / kGib) +
         ", \"after_step_gib\": " + format_double(b.after_step_bytes / kGib) +
         ", \"capacity_gib\": " + format_double(b.capacity_bytes / kGib) +
         ", \"limit_gib\": " + format_double(b.limit_bytes / kGib) +
         ", \"free_gib\": " + format_double((b.capacity_bytes - t.device_bytes()) / kGib) + "}";
  return out;
}

}  // namespace fasop
