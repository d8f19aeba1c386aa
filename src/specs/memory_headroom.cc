#include "specs/memory_headroom.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace fasop {

std::string MemoryHeadroom::text() const {
  char buffer[64];
  if (gib > 0) std::snprintf(buffer, sizeof buffer, "%g GiB", gib);
  else std::snprintf(buffer, sizeof buffer, "%g%%", share * 100);
  return buffer;
}

std::optional<MemoryHeadroom> parse_memory_headroom(const std::string& text, double smallest_gpu_gib, std::string* problem) {
  const bool percent = !text.empty() && text.back() == '%';
  const std::string number = percent ? text.substr(0, text.size() - 1) : text;
  char* end = nullptr;
  const double value = number.empty() ? NAN : std::strtod(number.c_str(), &end);
  if (number.empty() || end != number.c_str() + number.size() || !std::isfinite(value)) {
    *problem = "expected a share of each GPU's memory such as 5% or GiB such as 4, got '" + text + "'";
    return std::nullopt;
  }
  if (value < 0) {
    *problem = "must be 0 or more, got " + text + ": it is memory left free on each GPU";
    return std::nullopt;
  }
  if (percent) {
    if (value >= 100) {
      *problem = "must be under 100%, got " + text + ": a plan needs some of each GPU's memory";
      return std::nullopt;
    }
    return MemoryHeadroom{.share = value / 100, .gib = 0};
  }
  if (smallest_gpu_gib > 0 && value >= smallest_gpu_gib) {
    char bound[64];
    std::snprintf(bound, sizeof bound, "%g", smallest_gpu_gib);
    *problem = "must be below the smallest GPU's memory (" + std::string(bound) + " GiB), got " + text + " GiB";
    return std::nullopt;
  }
  // 0 GiB leaves nothing free: no share either.
  return value == 0 ? MemoryHeadroom{.share = 0, .gib = 0} : MemoryHeadroom{.share = 0, .gib = value};
}

}  // namespace fasop
