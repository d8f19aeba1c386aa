#include "launch/run_status.h"

#include <deque>
#include <fstream>
#include <sstream>

#include "specs/spec_error.h"

namespace fasop {
namespace {

/// The value of `key=` in a `scontrol -o` line ("" when absent).
std::string field_of(const std::string& line, const std::string& key) {
  size_t at = line.find(" " + key + "=");
  if (at == std::string::npos) {
    if (line.rfind(key + "=", 0) != 0) return "";
    at = 0;
  } else {
    at += 1;
  }
  at += key.size() + 1;
  return line.substr(at, line.find(' ', at) - at);
}

}  // namespace

std::vector<SlurmJobState> parse_scontrol_jobs(const std::string& text) {
  std::vector<SlurmJobState> jobs;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("JobId=", 0) != 0) continue;
    jobs.push_back({field_of(line, "JobId"), field_of(line, "JobState"), field_of(line, "ExitCode")});
  }
  return jobs;
}

bool RunStatus::failed() const {
  for (const NodeStatus& n : nodes)
    if (n.exit_code && *n.exit_code != 0) return true;
  return false;
}

std::string RunStatus::failure() const {
  std::string text;
  for (const NodeStatus& n : nodes) {
    if (!n.exit_code || *n.exit_code == 0) continue;
    text += (text.empty() ? "" : "; ") + std::string("node rank ") + std::to_string(n.node_rank) + " (" + n.node_type +
            (n.host.empty() ? "" : " on " + n.host) + ") exited " + std::to_string(*n.exit_code);
  }
  return text;
}

bool RunStatus::finished() const {
  for (const NodeStatus& n : nodes)
    if (!n.exit_code) return false;
  return true;
}

RunStatus read_run_status(const std::string& run_dir) {
  std::ifstream launch(run_dir + "/launch.txt"), nodes(run_dir + "/nodes.txt");
  if (!launch || !nodes)
    throw SpecError("'" + run_dir + "' is not the run directory of a `fasop-cpp launch` (no launch.txt and nodes.txt)");
  RunStatus status;
  for (std::string line; std::getline(launch, line);) {
    if (line.rfind("job: ", 0) == 0) status.job = line.substr(5);
    if (line.rfind("backend: ", 0) == 0) status.backend = line.substr(9);
    if (line.rfind("plan: ", 0) == 0) status.plan = line.substr(6);
    if (line.rfind("workdir: ", 0) == 0) status.workdir = line.substr(9);
  }
  if (std::ifstream(run_dir + "/plan.yaml")) status.plan = run_dir + "/plan.yaml";
  for (NodeStatus node; nodes >> node.node_rank >> node.node_type;) {
    node.log_path = run_dir + "/node-" + std::to_string(node.node_rank) + ".log";
    std::ifstream exit_file(run_dir + "/node-" + std::to_string(node.node_rank) + ".exit");
    if (int code; exit_file >> code) node.exit_code = code;
    status.nodes.push_back(node);
  }
  std::ifstream hosts(run_dir + "/hosts.txt");
  int rank;
  for (std::string host; hosts >> rank >> host;)
    if (rank >= 0 && rank < static_cast<int>(status.nodes.size())) status.nodes[rank].host = host;
  return status;
}

std::string file_tail(const std::string& path, int lines) {
  std::ifstream in(path);
  std::deque<std::string> last;
  for (std::string line; std::getline(in, line);) {
    last.push_back(line);
    if (static_cast<int>(last.size()) > lines) last.pop_front();
  }
  std::string text;
  for (const std::string& line : last) text += line + "\n";
  return text;
}

}  // namespace fasop
