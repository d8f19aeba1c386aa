#pragma once
#include <string>

namespace fasop {

/// `value` as one shell word: as is where the shell would not interpret it, else in single
/// quotes ('|', '*', '$', spaces...), a quote inside written '\''.
std::string shell_quote(const std::string& value);

}  // namespace fasop
