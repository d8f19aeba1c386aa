#pragma once
// Text from specs and paths inside emitted Python: a model name or unit type with a quote or a
// backslash must not end the literal or the docstring it is written into.
#include <string>

namespace fasop {

/// `text` as a double-quoted Python string literal: backslash and double quote escaped, control
/// characters as \xNN; other bytes as they are (Python reads its source as UTF-8, as specs are).
std::string python_string(const std::string& text);

/// `text` for the inside of a """docstring""": python_string without the enclosing quotes.
std::string python_docstring_text(const std::string& text);

}  // namespace fasop
