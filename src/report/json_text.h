#pragma once
#include <string>

namespace fasop {

/// `text` as a JSON string literal, quotes and control characters escaped.
std::string json_string(const std::string& text);

}  // namespace fasop
