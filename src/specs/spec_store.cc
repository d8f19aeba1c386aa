#include "specs/spec_store.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "specs/spec_error.h"
#include "specs/spec_loader.h"

namespace fasop {
namespace {

bool looks_like_path(const std::string& s) {
  auto ends_with = [&](const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return s.find('/') != std::string::npos || ends_with(".yaml") || ends_with(".yml");
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

}  // namespace

std::optional<std::string> DiskSource::read(const std::string& path) const {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::optional<std::string> SpecStore::preset(const std::string& path) const {
  for (const EmbeddedFile& file : presets_)
    if (path == file.path) return std::string(file.text);
  return std::nullopt;
}

std::vector<std::string> SpecStore::preset_names(const std::string& dir) const {
  std::vector<std::string> names;
  const std::string prefix = dir + "/";
  for (const EmbeddedFile& file : presets_) {
    std::string path = file.path;
    if (path.rfind(prefix, 0) != 0 || path.find('/', prefix.size()) != std::string::npos) continue;
    names.push_back(path.substr(prefix.size(), path.size() - prefix.size() - 5));  // drop .yaml
  }
  return names;
}

std::string SpecStore::load_text(const std::string& name_or_path, const std::string& dir,
                                 const std::string& flag, std::string* source) const {
  if (looks_like_path(name_or_path)) {
    std::error_code ec;
    if (std::filesystem::is_directory(name_or_path, ec))
      throw SpecError(flag + ": '" + name_or_path + "' is a directory; give a YAML file or a preset name");
    std::optional<std::string> text = disk_.read(name_or_path);
    if (!text) throw SpecError(flag + ": cannot read file '" + name_or_path + "'; check the path");
    *source = name_or_path;
    return *text;
  }
  std::optional<std::string> text = preset(dir + "/" + name_or_path + ".yaml");
  if (!text)
    throw SpecError(flag + ": unknown preset '" + name_or_path + "'; use one of: " +
                    join(preset_names(dir)) + ", or a path to a YAML file");
  *source = dir + "/" + name_or_path + ".yaml";
  return *text;
}

ModelSpec SpecStore::load_model(const std::string& name_or_path, const std::string& flag) const {
  if (!looks_like_path(name_or_path)) {
    // A preset answers to its name and its aliases (FASOP's gpt2XL, T5), in any case.
    for (const std::string& preset_name : preset_names("configs/models")) {
      std::string path = "configs/models/" + preset_name + ".yaml";
      ModelSpec candidate = parse_model(*preset(path), path);
      std::vector<std::string> names = candidate.aliases;
      names.push_back(candidate.name);
      for (const std::string& alias : names)
        if (lower(alias) == lower(name_or_path)) return candidate;
    }
  }
  std::string source;
  std::string text = load_text(name_or_path, "configs/models", flag, &source);
  return parse_model(text, source);
}

ClusterSpec SpecStore::load_cluster(const std::string& name_or_path, const std::string& flag) const {
  std::string source;
  std::string text = load_text(name_or_path, "clusters", flag, &source);
  return parse_cluster(text, source);
}

TrainerConfig SpecStore::load_trainer_config(const std::string& name_or_path, const std::string& flag) const {
  std::string source;
  std::string text = load_text(name_or_path, "configs/trainers", flag, &source);
  return parse_trainer_config(text, source);
}

bool SpecStore::has_profile(const ModelSpec& model, const std::string& gpu, const std::string& profile_dir) const {
  const std::string file = model.name + "_" + lower(gpu) + ".yaml";
  return (!profile_dir.empty() && disk_.read(profile_dir + "/" + file)) || preset("configs/profiles/" + file);
}

ProfileSpec SpecStore::load_profile(const ModelSpec& model, const std::string& gpu,
                                    const std::string& profile_dir) const {
  const std::string file = model.name + "_" + lower(gpu) + ".yaml";
  std::optional<std::string> text;
  std::string source;
  if (!profile_dir.empty()) {
    source = profile_dir + "/" + file;
    text = disk_.read(source);
  }
  if (!text) {
    source = "configs/profiles/" + file;
    text = preset(source);
  }
  if (!text)
    throw SpecError("no profile of model '" + model.name + "' on GPU '" + gpu + "': expected " +
                    file + (profile_dir.empty() ? "" : " in " + profile_dir) +
                    " or a shipped preset; profile the layers or pass --profile-dir");
  ProfileSpec profile = parse_profile(*text, source);
  if (profile.model != model.name)
    throw SpecError(source + ": field 'model': is '" + profile.model + "', expected '" +
                    model.name + "'");
  if (profile.gpu != gpu)
    throw SpecError(source + ": field 'gpu': is '" + profile.gpu + "', expected '" + gpu + "'");
  return profile;
}

}  // namespace fasop
