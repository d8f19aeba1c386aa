#pragma once
// The model's pipeline units in words, one name per unit, for emitted files that ask a user to
// supply one layer per unit: "embedding", "transformer 0", ..., "post_process".
#include <string>
#include <vector>

#include "specs/model_spec.h"

namespace fasop {

/// A unit's name: its type and, for a transformer-role unit, its index within its segment.
struct UnitName {
  std::string type;  ///< the unit's type, e.g. "transformer" or T5's "decoder_last"
  int index = -1;    ///< index within its segment's transformer units; -1 for other units

  /// "transformer 12", or the type alone for an embedding or post-process unit.
  std::string text() const { return index < 0 ? type : type + " " + std::to_string(index); }
};

/// One name per unit of `model`, in order, numbered as `plan show` numbers them (T5's decoder
/// layers count from 0 again: "decoder 0").
std::vector<UnitName> unit_names(const ModelSpec& model);

}  // namespace fasop
