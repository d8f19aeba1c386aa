#include "specs/model_spec.h"

namespace fasop {

std::vector<int> ModelSpec::segment_layer_indices() const {
  std::map<std::string, int> next;  // per segment
  std::vector<int> indices;
  indices.reserve(units.size());
  for (const LayerUnit& unit : units) indices.push_back(unit.role == LayerRole::kTransformer ? next[unit.segment]++ : -1);
  return indices;
}

LayerUnit ModelSpec::mtp_transformer_unit() const {
  LayerUnit last{"mtp_transformer", LayerRole::kTransformer};
  for (const LayerUnit& unit : units)
    if (unit.role == LayerRole::kTransformer) last.moe = unit.moe, last.attention_window = unit.attention_window;
  return last;
}

void apply_sliding_window(ModelSpec& model) {
  int layer_number = 0;
  for (LayerUnit& unit : model.units) {
    if (unit.role != LayerRole::kTransformer || !model.sliding_window.windows_layer(++layer_number)) continue;
    unit.attention_window = model.sliding_window.tokens;
    unit.type += "_window";
  }
}

int ModelSpec::num_transformer_layers() const {
  int count = 0;
  for (const LayerUnit& unit : units) count += unit.role == LayerRole::kTransformer;
  return count;
}

const char* family_name(ModelFamily family) {
  switch (family) {
    case ModelFamily::kGpt2: return "gpt2";
    case ModelFamily::kBert: return "bert";
    case ModelFamily::kT5: return "t5";
    case ModelFamily::kLlama: return "llama";
  }
  return "gpt2";
}

long padded_vocab_shard(long vocab, int tp, int multiple) {
  const long step = long(multiple) * tp;
  return (vocab + step - 1) / step * step / tp;
}

}  // namespace fasop
