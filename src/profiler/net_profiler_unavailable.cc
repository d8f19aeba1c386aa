// run_net_profile for a build without Gloo (e.g. a CUDA LibTorch from pip on a GPU machine):
// the layer profiler works, `profile net` says what is missing.
#include <iostream>

#include "profiler/net_profiler.h"

namespace fasop {

int run_net_profile(const NetProfileOptions&) {
  std::cerr << "fasop-cpp: profile net: this build has no Gloo; install libgloo-dev and rebuild\n";
  return 2;
}

}  // namespace fasop
