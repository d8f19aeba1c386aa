#include "launch/local_launcher.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace fasop {

std::vector<int> run_local_nodes(const std::string& run_dir, int nodes) {
  std::fflush(nullptr);  // a child must not print the parent's buffered output again
  const std::string script = run_dir + "/node.sh";
  std::vector<pid_t> pids;
  for (int rank = 0; rank < nodes; ++rank) {
    pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error(std::string("cannot start a node process: ") + std::strerror(errno));
    if (pid == 0) {
      ::setenv("FASOP_RUN_DIR", run_dir.c_str(), 1);
      ::setenv("MASTER_ADDR", "127.0.0.1", 1);
      std::string rank_text = std::to_string(rank);
      ::execl("/bin/bash", "bash", script.c_str(), rank_text.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    pids.push_back(pid);
  }
  std::vector<int> codes;
  for (pid_t pid : pids) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  }
  return codes;
}

}  // namespace fasop
