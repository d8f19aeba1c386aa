#pragma once
// How the profile subcommands end on an error: one line on stderr and an exit code.
#include <exception>
#include <iostream>
#include <string>

#include "specs/spec_error.h"

namespace fasop {

/// The first line of an exception's message (LibTorch appends a stack trace).
inline std::string first_line(const char* what) {
  std::string text = what;
  return text.substr(0, text.find('\n'));
}

/// Runs `work`, turning its errors into one line on stderr, after `context` (e.g. "profile
/// gemm: ", or nothing): exit code 2 for bad input, 1 for a failure while measuring.
template <typename Work>
int reporting_errors(const std::string& context, Work work) {
  try {
    return work();
  } catch (const SpecError& e) {
    std::cerr << "fasop-cpp: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "fasop-cpp: " << context << first_line(e.what()) << "\n";
    return 1;
  }
}

}  // namespace fasop
