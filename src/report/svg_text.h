#pragma once
// Text in SVG pictures: escaping and number formats.
#include <string>

namespace fasop {

/// `text` with <, > and & escaped for XML.
std::string xml_escape(const std::string& text);

/// `value` printed with a printf `format` (one double).
std::string format_number(const char* format, double value);

}  // namespace fasop
