#include "specs/model_spec.h"

namespace fasop {

int ModelSpec::num_transformer_layers() const {
  int count = 0;
  for (const LayerUnit& unit : units) count += unit.role == LayerRole::kTransformer;
  return count;
}

}  // namespace fasop
