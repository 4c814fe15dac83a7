// The wall time of a workload built for Windows, measured inside its process and written to
// stderr as "wall_ms MS" when the process exits (scripts/windows-suite.sh reads it). Under wine a
// process takes 60 to 200 ms to start and to end on the project's machine, more than many rows
// take to run, so the suite times the workload inside its process, where bench-runner times the
// whole process on Linux.
// The clock starts in a static constructor, before main, and stops in its destructor, after main
// has returned: it leaves out the loading and the tearing down of the process, and whatever runs
// in constructors before its own (poolalloc's start-up, one such, reserves the region).
#include <chrono>
#include <cstdio>

namespace {

class WallClock {
 public:
  ~WallClock() {
    const std::chrono::duration<double, std::milli> ms = std::chrono::steady_clock::now() - start_;
    std::fprintf(stderr, "wall_ms %.3f\n", ms.count());
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

const WallClock wall_clock;

}  // namespace
