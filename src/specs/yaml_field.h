#pragma once
// A YAML node with the path that leads to it, for the spec loaders: every problem throws
// SpecError naming the file, the field and the fix. The loaders reach YAML only through it, so
// that no yaml-cpp exception (a scalar where a map belongs, a missing list) escapes them.
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "specs/spec_error.h"

namespace fasop {

/// A YAML node with the path that leads to it, so errors can name the field.
struct Field {
  const std::string& source;
  YAML::Node node;
  std::string path;

  /// The value of `key`; absent (not present()) when this field is absent. Fails when this
  /// field is present but not a mapping.
  Field child(const std::string& key) const;
  /// Item `i` of this list; fails when this field is not a list.
  Field item(size_t i) const;
  /// The items of this list; fails (naming `what`, e.g. "a list of {type, count}") when this
  /// field is not a list or, with `non_empty`, an empty one.
  std::vector<Field> items(const std::string& what, bool non_empty = false) const;
  /// The keys of this mapping in the file's order; fails (naming `what`) when it is not a
  /// mapping or, with `non_empty`, an empty one.
  std::vector<std::string> keys(const std::string& what, bool non_empty = false) const;
  /// Fails on a key of this mapping that is not in `known`, naming the closest known one.
  void only_keys(const std::vector<std::string>& known) const;

  [[noreturn]] void fail(const std::string& problem) const {
    throw SpecError(source + ": field '" + path + "': " + problem);
  }
  bool present() const { return node.IsDefined() && !node.IsNull(); }
  void require() const {
    if (!present()) fail("missing; add it");
  }
  template <typename T>
  T as(const char* what) const {
    require();
    if (!node.IsScalar()) fail(std::string("expected ") + what);
    try {
      return node.as<T>();
    } catch (const YAML::Exception&) {
      fail_expected(what);
    }
  }
  /// Fails with "expected WHAT, got 'TEXT'" and, where the field's name ends in a unit
  /// (_bits_per_s, _gib, ...), that unit and an example.
  [[noreturn]] void fail_expected(const char* what) const;
  std::string text() const { return as<std::string>("a string"); }
  /// A whole number in [1, max]; the bound is named when it is passed.
  int positive_int(int max = std::numeric_limits<int>::max()) const {
    long long value = as<long long>("a whole number");
    if (value <= 0) fail("must be positive, got " + std::to_string(value));
    if (value > max) fail("must be at most " + std::to_string(max) + ", got " + std::to_string(value));
    return static_cast<int>(value);
  }
  /// A whole number in [0, max].
  int non_negative_int(int max = std::numeric_limits<int>::max()) const {
    long long value = as<long long>("a whole number");
    if (value < 0) fail("must be zero or positive, got " + std::to_string(value));
    if (value > max) fail("must be at most " + std::to_string(max) + ", got " + std::to_string(value));
    return static_cast<int>(value);
  }
  double positive_double() const {
    double value = as<double>("a number");
    if (!(value > 0) || !std::isfinite(value)) fail("must be a positive number");
    return value;
  }
  double non_negative_double() const {
    double value = as<double>("a number");
    if (!(value >= 0) || !std::isfinite(value)) fail("must be zero or positive");
    return value;
  }
};

/// A mapping of environment variable names to values (a cluster's node type's or a trainer
/// config's `env:`), in the file's order.
std::vector<std::pair<std::string, std::string>> environment_variables(const Field& env);

/// Parses `yaml_text` (from `source`) and requires a mapping at the top level. Refuses a key given
/// twice in any mapping (YAML forbids it; yaml-cpp would keep both and read the first), a key
/// that is not a plain scalar, and nesting deeper than any spec needs.
Field load_root(const std::string& yaml_text, const std::string& source);

/// The name in `known` closest to `name` (edit distance), or "" when none is close.
std::string closest_name(const std::string& name, const std::vector<std::string>& known);

}  // namespace fasop
