#pragma once
// Where and when a measurement was made, for the provenance line of the files the profilers write.
#include <string>

namespace fasop {

/// This machine's name.
std::string host_name();

/// Now, e.g. "2026-11-23 05:55 UTC".
std::string utc_now();

}  // namespace fasop
