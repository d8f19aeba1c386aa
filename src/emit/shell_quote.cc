#include "emit/shell_quote.h"

namespace fasop {

std::string shell_quote(const std::string& value) {
  if (value.find_first_of("|*?[]()<>&;$`\"' \t\n\\{}~#!=") == std::string::npos && !value.empty()) return value;
  std::string out = "'";
  for (char c : value) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace fasop
