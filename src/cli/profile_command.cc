#include "cli/profile_command.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "specs/spec_error.h"

namespace fasop {
namespace {

/// The directory of the running executable.
std::string own_directory() {
  char path[4096];
  ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return ".";
  std::string self(path, size_t(n));
  return self.substr(0, self.find_last_of('/'));
}

[[noreturn]] void exec_profiler(const std::vector<std::string>& args) {
  const std::string profiler = own_directory() + "/fasop-profile";
  if (::access(profiler.c_str(), X_OK) != 0)
    throw SpecError("profile: the profiler was not built (" + profiler +
                    " is missing): it needs LibTorch and Gloo; run `bash scripts/build.sh profiler`, which installs "
                    "them and builds it");
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(profiler.c_str()));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::execv(profiler.c_str(), argv.data());
  throw SpecError("profile: cannot run " + profiler + ": " + std::strerror(errno));
}

}  // namespace

void add_profile_command(CLI::App& app) {
  CLI::App* command = app.add_subcommand(
      "profile", "measure layer times (profile layers, LibTorch), GEMM shapes and their efficiency fit (profile "
                 "gemm), the network (profile net, Gloo/NCCL), or a whole step against its estimate (profile step); "
                 "see fasop-cpp profile --help");
  command->allow_extras();
  command->prefix_command();
  command->set_help_flag();  // --help goes to the profiler
  command->callback([command] { exec_profiler(command->remaining()); });
}

}  // namespace fasop
