#include "fasop_table.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace fasop::testing {
namespace {

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  bool quoted = false;
  for (char c : line) {
    if (c == '"') quoted = !quoted;
    else if (c == ',' && !quoted) {
      fields.push_back(field);
      field.clear();
    } else {
      field += c;
    }
  }
  fields.push_back(field);
  return fields;
}

/// Numbers inside "[1, 2]", "tensor([9.8])" or a bare number.
std::vector<double> numbers_in(const std::string& text) {
  std::vector<double> out;
  std::string token;
  auto flush = [&] {
    if (!token.empty()) out.push_back(std::stod(token));
    token.clear();
  };
  for (char c : text) {
    bool digit = c >= '0' && c <= '9';
    bool inside = !token.empty() && (c == '.' || c == 'e' || c == '+' || c == '-');
    if (digit || inside || c == '-' || c == '.') token += c;
    else flush();
  }
  flush();
  return out;
}

std::vector<std::string> names_in(const std::string& text) {
  std::vector<std::string> out;
  size_t pos = 0;
  while ((pos = text.find('\'', pos)) != std::string::npos) {
    size_t end = text.find('\'', pos + 1);
    out.push_back(text.substr(pos + 1, end - pos - 1));
    pos = end + 1;
  }
  return out;
}

}  // namespace

std::vector<FasopRow> read_fasop_table(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::string line;
  std::getline(in, line);  // header
  std::vector<FasopRow> rows;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::vector<std::string> f = split_csv_line(line);
    if (f.size() != 18) throw std::runtime_error(path + ": expected 18 fields: " + line);
    FasopRow r;
    r.mbs = std::stoi(f[0]);
    r.tp = std::stoi(f[1]);
    r.dp = std::stoi(f[2]);
    r.pp = static_cast<int>(std::stod(f[3]));
    r.placement = names_in(f[4]);
    for (double units : numbers_in(f[7])) r.partition.push_back(static_cast<int>(units));
    r.step_s = std::stod(f[8]);
    r.pipeline_s = std::stod(f[9]);
    r.dp_allreduce_s = std::stod(f[10]);
    r.embedding_allreduce_s = std::stod(f[11]);
    r.price_per_step = std::stod(f[12]);
    r.is_oom = f[13] == "True";
    r.oom_gib = numbers_in(f[14]).at(0);
    r.is_zero_oom = f[15] == "True";
    r.zero_oom_gib = numbers_in(f[16]).at(0);
    r.train_cost = std::stod(f[17]);
    rows.push_back(r);
  }
  return rows;
}

}  // namespace fasop::testing
