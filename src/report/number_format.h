#pragma once
#include <string>

namespace fasop {

/// The shortest decimal text that reads back as the same double (as Python's repr).
std::string format_double(double value);

/// `value` with `decimals` digits after the point.
std::string fixed(double value, int decimals);

}  // namespace fasop
