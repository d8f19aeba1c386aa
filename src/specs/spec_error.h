#pragma once
#include <stdexcept>
#include <string>

namespace fasop {

/// A problem with the user's input (a spec file, a flag, a plan): the message names the
/// file or flag, the field, and how to fix it. The CLI prints it on one line and exits 2.
class SpecError : public std::runtime_error {
 public:
  explicit SpecError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace fasop
