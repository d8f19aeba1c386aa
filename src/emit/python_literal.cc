#include "emit/python_literal.h"

#include <cstdio>

namespace fasop {

std::string python_docstring_text(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string python_string(const std::string& text) { return "\"" + python_docstring_text(text) + "\""; }

}  // namespace fasop
