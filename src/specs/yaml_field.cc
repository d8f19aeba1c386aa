#include "specs/yaml_field.h"

#include <algorithm>
#include <regex>
#include <set>

namespace fasop {
namespace {

std::string kind_of(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: return "a mapping";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Scalar: return "'" + node.Scalar() + "'";
    default: return "nothing";
  }
}

/// Refuses duplicate and non-scalar keys, nesting past `kMaxDepth`, and more than `budget`
/// nodes (aliases can make a short file a huge tree), anywhere under `node`.
void check_tree(const YAML::Node& node, const std::string& path, const std::string& source, int depth, long& budget) {
  constexpr int kMaxDepth = 32;  // the deepest spec (a profile) nests 4 levels
  if (depth > kMaxDepth)
    throw SpecError(source + ": field '" + path + "': nested more than " + std::to_string(kMaxDepth) + " levels deep");
  if (--budget < 0)
    throw SpecError(source + ": field '" + path + "': the file expands to more than a million values (aliases?)");
  if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i) check_tree(node[i], path + "[" + std::to_string(i) + "]", source, depth + 1, budget);
  } else if (node.IsMap()) {
    std::set<std::string> seen;
    for (const auto& entry : node) {
      if (!entry.first.IsScalar())
        throw SpecError(source + ": field '" + path + "': a key that is not a plain name (" + kind_of(entry.first) +
                        "); write name: value");
      const std::string key = entry.first.Scalar();
      const std::string at = path.empty() ? key : path + "." + key;
      if (!seen.insert(key).second) throw SpecError(source + ": field '" + at + "': given twice; keep one");
      check_tree(entry.second, at, source, depth + 1, budget);
    }
  }
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

Field Field::child(const std::string& key) const {
  const std::string at = path.empty() ? key : path + "." + key;
  if (!present()) return {source, YAML::Node(YAML::NodeType::Undefined), at};
  if (!node.IsMap()) fail("expected a mapping (with '" + key + "'), got " + kind_of(node));
  const YAML::Node& map = node;  // const: a missing key must not be added
  YAML::Node value = map[key];
  // A missing key gives yaml-cpp's "zombie" node, which throws on most questions: an
  // undefined node answers them.
  if (!value.IsDefined()) return {source, YAML::Node(YAML::NodeType::Undefined), at};
  return {source, value, at};
}

Field Field::item(size_t i) const {
  if (!node.IsSequence()) fail("expected a list, got " + kind_of(node));
  const YAML::Node& list = node;
  YAML::Node value = list[i];
  if (!value.IsDefined()) return {source, YAML::Node(YAML::NodeType::Undefined), path + "[" + std::to_string(i) + "]"};
  return {source, value, path + "[" + std::to_string(i) + "]"};
}

std::vector<Field> Field::items(const std::string& what, bool non_empty) const {
  if (!node.IsSequence() || (non_empty && node.size() == 0))
    fail("expected " + std::string(non_empty ? "a non-empty " : "") + what + (present() ? ", got " + kind_of(node) : ""));
  std::vector<Field> out;
  for (size_t i = 0; i < node.size(); ++i) out.push_back(item(i));
  return out;
}

std::vector<std::string> Field::keys(const std::string& what, bool non_empty) const {
  if (!node.IsMap() || (non_empty && node.size() == 0))
    fail("expected " + std::string(non_empty ? "a non-empty " : "") + what + (present() ? ", got " + kind_of(node) : ""));
  std::vector<std::string> out;
  for (const auto& entry : node) out.push_back(entry.first.Scalar());  // load_root checked they are scalars
  return out;
}

void Field::only_keys(const std::vector<std::string>& known) const {
  if (!node.IsMap()) return;
  for (const auto& entry : node) {
    const std::string key = entry.first.Scalar();
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    const std::string guess = closest_name(key, known);
    child(key).fail("unknown field" + (guess.empty() ? "" : "; did you mean '" + guess + "'?"));
  }
}

std::string closest_name(const std::string& name, const std::vector<std::string>& known) {
  std::string best;
  size_t best_distance = std::max<size_t>(2, name.size() / 3) + 1;  // a typo or two, not another word
  for (const std::string& k : known)
    if (size_t d = edit_distance(name, k); d < best_distance) best = k, best_distance = d;
  if (!best.empty() || name.size() < 3) return best;
  // A name typed without its unit (gpu_memory for gpu_memory_gib): the shortest that begins with it.
  for (const std::string& k : known)
    if (k.rfind(name, 0) == 0 && (best.empty() || k.size() < best.size())) best = k;
  return best;
}

void Field::fail_expected(const char* what) const {
  struct Unit {
    const char* suffix;
    const char* hint;
  };
  static const Unit kUnits[] = {
      {"_bits_per_s", "bits per second, e.g. 4e11 for 400 Gb/s"},
      {"_bytes_per_s", "bytes per second, e.g. 3.35e12 for 3.35 TB/s"},
      {"_gib", "GiB, e.g. 80"},
      {"_usd_per_hour", "US dollars an hour, e.g. 98.32"},
      {"_tflops", "TFLOP/s, e.g. 989"},
      {"_s", "seconds, e.g. 2e-6"},
  };
  std::string problem = std::string("expected ") + what;
  if (node.IsScalar()) problem += ", got '" + node.Scalar() + "'";
  for (const Unit& unit : kUnits) {
    const std::string suffix = unit.suffix;
    if (path.size() > suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0) {
      problem += std::string(" (") + unit.hint + ")";
      break;
    }
  }
  fail(problem);
}

std::vector<std::pair<std::string, std::string>> environment_variables(const Field& env) {
  static const std::regex variable("[A-Za-z_][A-Za-z0-9_]*");
  std::vector<std::pair<std::string, std::string>> variables;
  for (const std::string& name : env.keys("a mapping of variable names to values, e.g. {NCCL_DEBUG: WARN}")) {
    Field value = env.child(name);
    if (!std::regex_match(name, variable)) value.fail("not an environment variable name");
    if (!value.present() || !value.node.IsScalar()) value.fail("expected a value (\"\" for empty)");
    variables.emplace_back(name, value.node.Scalar());
  }
  return variables;
}

Field load_root(const std::string& yaml_text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw SpecError(source + ": malformed YAML at line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  if (!root.IsMap()) throw SpecError(source + ": expected a YAML mapping at the top level");
  long budget = 1'000'000;
  check_tree(root, "", source, 0, budget);
  return {source, root, ""};
}

}  // namespace fasop
