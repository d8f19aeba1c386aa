#include "launch/iteration_log.h"

#include <algorithm>
#include <map>
#include <regex>
#include <sstream>

namespace fasop {
namespace {

/// The number after `label` up to the next '|', if the line has it.
std::optional<double> field_value(const std::string& line, const std::string& label) {
  const size_t at = line.find(label);
  if (at == std::string::npos) return std::nullopt;
  const std::string rest = line.substr(at + label.size());
  try {
    return std::stod(rest);  // the number the label introduces; what follows it is the next field
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<IterationRecord> iteration_line(const std::string& line) {
  static const std::regex iteration(R"(\biteration\s+(\d+)\s*/\s*(\d+)\s*\|)");
  std::smatch match;
  if (!std::regex_search(line, match, iteration)) return std::nullopt;
  std::optional<double> ms = field_value(line, "elapsed time per iteration (ms):");
  if (!ms) return std::nullopt;
  IterationRecord record;
  record.iteration = std::stoi(match[1]);
  record.train_iters = std::stoi(match[2]);
  record.ms_per_iteration = *ms;
  if (auto batch = field_value(line, "global batch size:")) record.global_batch = static_cast<int>(*batch);
  record.loss = field_value(line, "lm loss:");
  return record;
}

std::optional<MemoryRecord> memory_line(const std::string& line) {
  static const std::regex rank(R"(\[Rank (\d+)\].*memory \(MB\))");
  std::smatch match;
  if (!std::regex_search(line, match, rank)) return std::nullopt;
  MemoryRecord record;
  record.rank = std::stoi(match[1]);
  auto allocated = field_value(line, "| allocated:"), max_allocated = field_value(line, "| max allocated:");
  auto reserved = field_value(line, "| reserved:"), max_reserved = field_value(line, "| max reserved:");
  if (!allocated || !max_allocated || !reserved || !max_reserved) return std::nullopt;
  record.allocated_mib = *allocated;
  record.max_allocated_mib = *max_allocated;
  record.reserved_mib = *reserved;
  record.max_reserved_mib = *max_reserved;
  return record;
}

/// torchtitan's metrics line: "step: 10  loss: ...  memory: 12.34GiB(56.78%)  ...", with colour
/// codes before the names (each ends in 'm': no word boundary before "memory"); the GiB are the
/// logging rank's max reserved since its previous line.
std::optional<MemoryRecord> torchtitan_memory_line(const std::string& line) {
  static const std::regex memory(R"(step:.*memory:\s*([0-9]+(\.[0-9]*)?)\s*GiB\()");
  std::smatch match;
  if (!std::regex_search(line, match, memory)) return std::nullopt;
  MemoryRecord record;
  record.max_reserved_mib = std::stod(match[1]) * 1024;
  record.allocated_logged = false;
  return record;
}

/// torchtitan's metrics line's step and tokens a second a GPU ("step: 10 ... tps: 1,234 ...",
/// colour codes before the names, thousands separated by commas).
std::optional<IterationRecord> torchtitan_step_line(const std::string& line) {
  static const std::regex step(R"(step:\s*(\d+)\s.*tps:\s*([0-9][0-9,]*))");
  std::smatch match;
  if (!std::regex_search(line, match, step)) return std::nullopt;
  std::string digits = match[2];
  digits.erase(std::remove(digits.begin(), digits.end(), ','), digits.end());
  IterationRecord record;
  record.iteration = std::stoi(match[1]);
  record.tokens_per_s_per_gpu = std::stod(digits);
  return record;
}

}  // namespace

IterationLog parse_iteration_log(const std::string& text) {
  IterationLog log;
  std::istringstream in(text);
  // Ranks of a node share its log: one rank's memory line and another's iteration line, each
  // written in pieces (an unbuffered Python writes a print's text and its newline apart), can
  // land on one line. Each record is looked for in every line.
  for (std::string line; std::getline(in, line);) {
    if (line.find("elapsed time per iteration") != std::string::npos)
      if (auto record = iteration_line(line)) log.iterations.push_back(*record);
    if (line.find("memory (MB)") != std::string::npos) {
      if (auto record = memory_line(line)) log.memory.push_back(*record);
    } else if (line.find("GiB(") != std::string::npos) {
      if (auto record = torchtitan_memory_line(line)) log.memory.push_back(*record);
    }
    if (line.find("tps:") != std::string::npos)
      if (auto record = torchtitan_step_line(line)) log.iterations.push_back(*record);
  }
  return log;
}

IterationLog merge_iteration_logs(const std::vector<IterationLog>& logs) {
  std::map<int, IterationRecord> by_iteration;
  IterationLog merged;
  for (const IterationLog& log : logs) {
    for (const IterationRecord& record : log.iterations) {
      auto [it, fresh] = by_iteration.emplace(record.iteration, record);
      // The slower: the longer step, or where logged as throughput the fewer tokens a second.
      const bool throughput = record.tokens_per_s_per_gpu && it->second.tokens_per_s_per_gpu;
      const bool slower = throughput ? *record.tokens_per_s_per_gpu < *it->second.tokens_per_s_per_gpu
                                     : record.ms_per_iteration > it->second.ms_per_iteration;
      if (!fresh && slower) it->second = record;
    }
    merged.memory.insert(merged.memory.end(), log.memory.begin(), log.memory.end());
  }
  for (const auto& [iteration, record] : by_iteration) merged.iterations.push_back(record);
  return merged;
}

std::vector<MemoryRecord> memory_by_rank(const std::vector<MemoryRecord>& records) {
  std::map<int, MemoryRecord> by_rank;
  for (const MemoryRecord& r : records) {
    auto [it, fresh] = by_rank.emplace(r.rank, r);
    if (fresh) continue;
    MemoryRecord& m = it->second;
    m.allocated_mib = std::max(m.allocated_mib, r.allocated_mib);
    m.max_allocated_mib = std::max(m.max_allocated_mib, r.max_allocated_mib);
    m.reserved_mib = std::max(m.reserved_mib, r.reserved_mib);
    m.max_reserved_mib = std::max(m.max_reserved_mib, r.max_reserved_mib);
    m.allocated_logged = m.allocated_logged || r.allocated_logged;
  }
  std::vector<MemoryRecord> out;
  for (const auto& [rank, record] : by_rank) out.push_back(record);
  return out;
}

void time_throughput_lines(IterationLog& log, double tokens_per_step, int gpus) {
  for (IterationRecord& record : log.iterations)
    if (record.tokens_per_s_per_gpu && *record.tokens_per_s_per_gpu > 0 && gpus > 0)
      record.ms_per_iteration = 1000 * tokens_per_step / (*record.tokens_per_s_per_gpu * gpus);
}

}  // namespace fasop
