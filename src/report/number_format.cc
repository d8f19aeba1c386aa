#include "report/number_format.h"

#include <cstdio>

#include <charconv>

namespace fasop {

std::string format_double(double value) {
  char buffer[64];
  auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value);
  std::string text(buffer, end);
  // Python writes whole floats as "16.0"; keep integers distinguishable from floats.
  if (text.find_first_of(".eE") == std::string::npos && text != "inf" && text != "-inf" && text != "nan")
    text += ".0";
  return text;
}

std::string fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

}  // namespace fasop
