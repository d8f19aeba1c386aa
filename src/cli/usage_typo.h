#pragma once
// Mistyped subcommands and flags, caught before CLI11 parses: CLI11 would report a missing
// subcommand or a required flag instead of the word the user got wrong.
#include <CLI/CLI.hpp>

#include <optional>
#include <string>

namespace fasop {

/// One line naming the first word of argv that is neither a subcommand nor a flag of the
/// command it follows, with the nearest that is (closest_name): "unknown subcommand 'serch' of
/// fasop-cpp; did you mean search?". None when every word is known (values are not checked).
std::optional<std::string> usage_typo(const CLI::App& app, int argc, const char* const* argv);

}  // namespace fasop
