#pragma once
// The manual page of the command tree (`fasop-cpp man`), written from the same options as
// --help, so that the two cannot disagree.
#include <CLI/CLI.hpp>

#include <string>

namespace fasop {

/// fasop-cpp(1) in roff (man(7) macros): every command, its options and their help, the exit
/// status. No date in it: the same binary writes the same page.
std::string man_page(const CLI::App& root, const std::string& version);

/// Adds `man`, which prints man_page(app) (add it after the other commands).
void add_man_command(CLI::App& app, const std::string& version);

}  // namespace fasop
