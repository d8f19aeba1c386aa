#pragma once
#include <map>
#include <string>
#include <vector>

namespace fasop {

/// What a pipeline unit is, for the parameter and activation formulas.
enum class LayerRole { kEmbedding, kTransformer, kPostProcess };

/// One pipeline unit (a layer the partitioner may place on any stage).
struct LayerUnit {
  std::string type;      ///< profile key, e.g. "transformer" or "encoder_last"
  LayerRole role = LayerRole::kTransformer;
  std::string segment;   ///< "" or e.g. "encoder"/"decoder": a stage never spans two segments
};

/// A transformer model: dimensions, training batch and its pipeline units in order.
struct ModelSpec {
  std::string name;         ///< preset name, e.g. "gpt2xl"
  std::string report_name;  ///< FASOP's table name, e.g. "gpt2"
  std::vector<std::string> aliases;  ///< other names, e.g. FASOP's "gpt2XL"
  std::string source;       ///< file (or preset) it was loaded from, for messages
  int hidden = 0;
  int heads = 0;
  int sequence = 0;
  int vocab = 0;
  int global_batch = 0;
  int precision_bits = 16;
  std::vector<LayerUnit> units;
  std::map<std::string, std::string> default_clusters;  ///< "homogeneous"/"heterogeneous"/"pareto" -> preset

  /// Number of transformer-role units (FASOP's num_layers, the bound on pp).
  int num_transformer_layers() const;
  int num_units() const { return static_cast<int>(units.size()); }
};

}  // namespace fasop
