#pragma once
#include <string>

namespace fasop {

/// Writes `text` to `path` through a temporary file in the same directory and a rename, so a
/// failed run never leaves a half-written file. Creates missing directories. Throws
/// std::runtime_error naming the path on failure.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace fasop
