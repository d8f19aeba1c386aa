#include "specs/preset_catalog.h"

#include <algorithm>

#include "specs/spec_error.h"

namespace fasop {
namespace {

struct KindDir {
  const char* kind;
  const char* prefix;  ///< the path's folder; validation cases sit one or two folders below
};

const std::vector<KindDir>& kind_dirs() {
  static const std::vector<KindDir> dirs = {{"model", "configs/models/"},   {"cluster", "clusters/"},
                                            {"gpu", "configs/gpus/"},       {"profile", "configs/profiles/"},
                                            {"trainer", "configs/trainers/"}, {"validation", "validation/"}};
  return dirs;
}

/// The entry of a compiled-in path; a validation case is named by its path below validation/
/// (set/case), as two sets may hold cases of the same name.
PresetEntry entry_of(const std::string& path) {
  for (const KindDir& d : kind_dirs()) {
    const std::string prefix = d.prefix;
    if (path.rfind(prefix, 0) != 0) continue;
    std::string name = path.substr(prefix.size());
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".yaml") == 0) name.resize(name.size() - 5);
    return {d.kind, name, path};
  }
  return {"other", path, path};
}

std::string kinds_text() {
  std::string text;
  for (const std::string& kind : preset_kinds()) text += (text.empty() ? "" : ", ") + kind;
  return text;
}

std::size_t kind_rank(const std::string& kind) {
  const std::vector<std::string>& kinds = preset_kinds();
  return std::find(kinds.begin(), kinds.end(), kind) - kinds.begin();
}

}  // namespace

const std::vector<std::string>& preset_kinds() {
  static const std::vector<std::string> kinds = [] {
    std::vector<std::string> out;
    for (const KindDir& d : kind_dirs()) out.push_back(d.kind);
    return out;
  }();
  return kinds;
}

void require_preset_kind(const std::string& kind, const std::string& flag) {
  if (kind_rank(kind) == preset_kinds().size())
    throw SpecError(flag + ": unknown kind '" + kind + "'; use " + kinds_text());
}

std::vector<PresetEntry> preset_catalog(const std::vector<EmbeddedFile>& files) {
  std::vector<PresetEntry> entries;
  for (const EmbeddedFile& file : files) entries.push_back(entry_of(file.path));
  std::sort(entries.begin(), entries.end(), [](const PresetEntry& a, const PresetEntry& b) {
    return std::make_pair(kind_rank(a.kind), a.name) < std::make_pair(kind_rank(b.kind), b.name);
  });
  return entries;
}

const EmbeddedFile& find_preset(const std::vector<EmbeddedFile>& files, const std::string& name,
                                const std::string& kind) {
  if (!kind.empty()) require_preset_kind(kind, "--kind");
  std::vector<const EmbeddedFile*> matches;
  for (const EmbeddedFile& file : files) {
    const PresetEntry e = entry_of(file.path);
    if ((e.name == name || e.path == name) && (kind.empty() || e.kind == kind)) matches.push_back(&file);
  }
  if (matches.size() == 1) return *matches.front();
  if (matches.empty())
    throw SpecError("presets show: no " + (kind.empty() ? std::string("preset") : kind + " preset") + " named '" +
                    name + "'; `fasop-cpp presets list` lists them");
  std::string kinds;
  for (const EmbeddedFile* file : matches) kinds += (kinds.empty() ? "" : ", ") + entry_of(file->path).kind;
  throw SpecError("presets show: '" + name + "' names a preset of several kinds (" + kinds +
                  "); add --kind KIND or give its path");
}

std::string file_to_edit(const std::vector<EmbeddedFile>& files, const std::string& source) {
  for (const EmbeddedFile& file : files)
    if (source == file.path)
      return source + " (compiled in: save a copy with `fasop-cpp presets show " + source +
             " > my.yaml`, edit it and give its path)";
  return source;
}

}  // namespace fasop
