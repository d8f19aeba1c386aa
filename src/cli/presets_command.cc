#include "cli/presets_command.h"

#include <algorithm>
#include <iostream>
#include <memory>

#include "specs/preset_catalog.h"

namespace fasop {
namespace {

struct PresetsOptions {
  std::string kind;
  std::string name;
};

}  // namespace

void add_presets_command(CLI::App& app) {
  CLI::App* presets = app.add_subcommand("presets", "the presets compiled into fasop-cpp (models, clusters, GPU data, "
                                                    "profiles, validation cases): list them, or print one to save and edit");
  presets->require_subcommand(1);
  auto options = std::make_shared<PresetsOptions>();

  CLI::App* list_command = presets->add_subcommand("list", "kind, name and source path of every preset (or of one kind)");
  list_command->add_option("kind", options->kind, "model, cluster, gpu, profile or validation");
  list_command->callback([options] {
    if (!options->kind.empty()) require_preset_kind(options->kind, "presets list");
    std::vector<PresetEntry> entries;
    for (const PresetEntry& e : preset_catalog(embedded_presets()))
      if (options->kind.empty() || e.kind == options->kind) entries.push_back(e);
    std::size_t width = 0;
    for (const PresetEntry& e : entries) width = std::max(width, e.name.size());
    for (const PresetEntry& e : entries)
      std::cout << e.kind << std::string(11 - e.kind.size(), ' ') << e.name << std::string(width + 2 - e.name.size(), ' ')
                << e.path << "\n";
  });

  CLI::App* show_command = presets->add_subcommand(
      "show", "print a preset's YAML on stdout (save it, edit it, and give its path: --cluster my.yaml)");
  show_command->add_option("name", options->name, "a preset's name (aws-h100, gpt2xl, H100's file h100) or path")->required();
  show_command->add_option("--kind", options->kind, "model, cluster, gpu, profile or validation (where a name is ambiguous)");
  show_command->callback([options] { std::cout << find_preset(embedded_presets(), options->name, options->kind).text; });
}

}  // namespace fasop
