#pragma once
#include <optional>
#include <string>
#include <vector>

#include "specs/cluster_spec.h"
#include "specs/model_spec.h"
#include "specs/profile_spec.h"
#include "specs/trainer_config.h"

namespace fasop {

/// Reads a text file; the disk in the tool, a map in tests.
class TextSource {
 public:
  virtual ~TextSource() = default;
  virtual std::optional<std::string> read(const std::string& path) const = 0;
};

/// TextSource over the real file system.
class DiskSource : public TextSource {
 public:
  std::optional<std::string> read(const std::string& path) const override;
};

/// A spec file compiled into the binary (configs/ and clusters/ at build time).
struct EmbeddedFile {
  const char* path;  ///< e.g. "configs/models/gpt2xl.yaml"
  const char* text;
};
/// The presets compiled into this binary, sorted by path.
const std::vector<EmbeddedFile>& embedded_presets();

/// Finds and loads specs: a path names a file on disk, a bare name a shipped preset.
class SpecStore {
 public:
  SpecStore(const TextSource& disk, const std::vector<EmbeddedFile>& presets)
      : disk_(disk), presets_(presets) {}

  /// `name_or_path`: a preset name or alias (gpt2xl, gpt2XL, bert, t5) or a YAML file.
  ModelSpec load_model(const std::string& name_or_path, const std::string& flag = "--model") const;
  ClusterSpec load_cluster(const std::string& name_or_path,
                           const std::string& flag = "--cluster") const;
  /// A trainer config: a preset of configs/trainers (megatron-mock) or a YAML file.
  TrainerConfig load_trainer_config(const std::string& name_or_path,
                                    const std::string& flag = "--trainer-config") const;
  /// The profile of `model` on `gpu`: <profile_dir>/<model>_<gpu>.yaml if profile_dir is set
  /// and has it, else the shipped preset configs/profiles/<model>_<gpu>.yaml.
  ProfileSpec load_profile(const ModelSpec& model, const std::string& gpu,
                           const std::string& profile_dir) const;

  /// True when load_profile would find a profile (on disk or shipped) for `model` on `gpu`.
  bool has_profile(const ModelSpec& model, const std::string& gpu, const std::string& profile_dir) const;

  /// Names of the presets in `dir` (e.g. "configs/models").
  std::vector<std::string> preset_names(const std::string& dir) const;

 private:
  std::optional<std::string> preset(const std::string& path) const;
  std::string load_text(const std::string& name_or_path, const std::string& dir,
                        const std::string& flag, std::string* source) const;

  const TextSource& disk_;
  const std::vector<EmbeddedFile>& presets_;
};

}  // namespace fasop
