#include "cli/man_page.h"

#include <iostream>

namespace fasop {
namespace {

/// `text` safe in roff: backslashes escaped, hyphens as minus signs, no line taken as a request.
std::string roff(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\') out += "\\e";
    else if (c == '-') out += "\\-";
    else out += c;
  }
  if (!out.empty() && (out[0] == '.' || out[0] == '\'')) out = "\\&" + out;
  return out;
}

/// "\fB--model\fR, \fB--type\fR \fITEXT\fR": how an option is written.
std::string option_heading(const CLI::Option& option) {
  std::string names;
  for (const std::string& name : option.get_snames()) names += (names.empty() ? "" : ", ") + ("\\fB" + roff("-" + name) + "\\fR");
  for (const std::string& name : option.get_lnames()) names += (names.empty() ? "" : ", ") + ("\\fB" + roff("--" + name) + "\\fR");
  if (names.empty()) names = "\\fI" + roff(option.get_name()) + "\\fR";  // a positional
  else if (option.get_type_size_min() > 0 && !option.get_type_name().empty())
    names += " \\fI" + roff(option.get_type_name()) + "\\fR";
  return names;
}

/// One command's section and its subcommands', depth first.
void add_command(const CLI::App& command, const std::string& path, std::string& page) {
  page += ".SS \"" + roff(path) + "\"\n" + roff(command.get_description()) + "\n";
  for (const CLI::Option* option : command.get_options()) {
    if (option->get_lnames().size() == 1 && option->get_lnames()[0] == "help") continue;
    page += ".TP\n" + option_heading(*option) + "\n" + roff(option->get_description()) + "\n";
  }
  for (const CLI::App* sub : command.get_subcommands({}))
    if (!sub->get_name().empty()) add_command(*sub, path + " " + sub->get_name(), page);
}

}  // namespace

std::string man_page(const CLI::App& root, const std::string& version) {
  std::string page = ".TH FASOP\\-CPP 1 \"\" \"fasop\\-cpp " + roff(version) + "\" \"User Commands\"\n" +
                     ".SH NAME\nfasop\\-cpp \\- plan and launch distributed training on heterogeneous GPU clusters\n"
                     ".SH SYNOPSIS\n.B fasop\\-cpp\n\\fICOMMAND\\fR [\\fIOPTIONS\\fR]\n"
                     ".SH DESCRIPTION\n" + roff(root.get_description()) +
                     ". Each command's options follow; \\fBfasop\\-cpp \\fICOMMAND\\fB \\-\\-help\\fR prints the same.\n"
                     ".SH COMMANDS\n";
  for (const CLI::App* sub : root.get_subcommands({}))
    if (!sub->get_name().empty()) add_command(*sub, "fasop-cpp " + sub->get_name(), page);
  page += ".SH EXIT STATUS\n" + roff(root.get_footer()) + "\n" +
          ".SH SEE ALSO\nREADME.md and docs/ in the source tree.\n";
  return page;
}

void add_man_command(CLI::App& app, const std::string& version) {
  CLI::App* man = app.add_subcommand("man", "print the manual page of every command (roff): fasop-cpp man | man -l -");
  man->callback([&app, version] { std::cout << man_page(app, version); });
}

}  // namespace fasop
