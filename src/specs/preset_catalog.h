#pragma once
// The presets compiled into the binary, by kind and name: what `fasop-cpp presets list` prints
// and `presets show` writes out as a file to save and edit (an edited copy is then given by
// path: --cluster my-cluster.yaml).
#include <string>
#include <vector>

#include "specs/spec_store.h"

namespace fasop {

/// One shipped preset: its kind (model, cluster, gpu, profile, trainer, validation), the name it is
/// given by and the path it was compiled from.
struct PresetEntry {
  std::string kind;
  std::string name;
  std::string path;
};

/// Every preset of `files`, sorted by kind order (model, cluster, gpu, profile, trainer, validation),
/// then by name.
std::vector<PresetEntry> preset_catalog(const std::vector<EmbeddedFile>& files);

/// The kinds, in the catalog's order.
const std::vector<std::string>& preset_kinds();
/// Throws SpecError naming `flag` and the kinds unless `kind` is one of them.
void require_preset_kind(const std::string& kind, const std::string& flag);

/// The preset called `name` (or given by its path, e.g. clusters/aws-h100.yaml), of `kind` if
/// not empty. Throws SpecError naming the flag and the fix when none or several match.
const EmbeddedFile& find_preset(const std::vector<EmbeddedFile>& files, const std::string& name,
                                const std::string& kind);

/// Where a message tells the user to edit `source`: the file, or, for a compiled-in preset's
/// path, how to save a copy to edit ("clusters/aws-h100.yaml (a compiled-in preset: ...)").
std::string file_to_edit(const std::vector<EmbeddedFile>& files, const std::string& source);

}  // namespace fasop
