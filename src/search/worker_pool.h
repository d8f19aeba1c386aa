#pragma once
// Worker threads that sleep between loops. OpenMP's threads spin-wait for the next region
// (its default wait policy): on a machine whose other cores are busy they burn the CPU the
// search needs, 20 s instead of 3 s on one loaded core. These block on a condition variable.
#include <cstddef>
#include <functional>

namespace fasop {

/// Runs body(0 .. count-1) on up to `threads` threads (the caller is one of them), each taking
/// the next index as it finishes the last, and returns when every call has returned. A call
/// from inside a body runs serially on its thread. The first exception a body throws (by
/// index) is rethrown here once all have finished.
void parallel_for(size_t count, int threads, const std::function<void(size_t)>& body);

/// The CPUs this process may run on (its affinity mask), at least 1.
int available_cpus();

}  // namespace fasop
