#include "specs/model_spec.h"

namespace fasop {

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
