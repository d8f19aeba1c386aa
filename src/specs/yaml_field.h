#pragma once
// A YAML node with the path that leads to it, for the spec loaders: every problem throws
// SpecError naming the file, the field and the fix.
#include <yaml-cpp/yaml.h>

#include <cmath>
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

  Field child(const std::string& key) const {
    return {source, node[key], path.empty() ? key : path + "." + key};
  }
  Field item(size_t i) const { return {source, node[i], path + "[" + std::to_string(i) + "]"}; }
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
    try {
      return node.as<T>();
    } catch (const YAML::Exception&) {
      fail(std::string("expected ") + what);
    }
  }
  std::string text() const { return as<std::string>("a string"); }
  int positive_int() const {
    int value = as<int>("a whole number");
    if (value <= 0) fail("must be positive, got " + std::to_string(value));
    return value;
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

/// Parses `yaml_text` (from `source`) and requires a mapping at the top level.
Field load_root(const std::string& yaml_text, const std::string& source);

}  // namespace fasop
