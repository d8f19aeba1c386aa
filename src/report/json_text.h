#pragma once
#include <string>
#include <vector>

namespace fasop {

/// `text` as a JSON string literal, quotes and control characters escaped.
std::string json_string(const std::string& text);

/// A JSON array of integers: "[3, 3, 4]".
std::string json_int_array(const std::vector<int>& values);

}  // namespace fasop
