// Windows has no decay thread (decay_thread.hpp): the program's own calls run the decay steps,
// as in a program of one thread on Linux or with POOLALLOC_DECAY_THREAD=0. The thread is started
// on Linux once the kernel counts a second thread in the process (/proc/self/task), a count that
// Windows gives only by a snapshot of every thread of the system. So a program that stops
// calling the allocator keeps what its last calls left, and the caches of its idle threads go
// back at the next step that another thread's calls run (decay.hpp).
#include "decay_requests.hpp"

namespace poolalloc::internal {

void on_malloc_slow_path() {
  note_decay_work();
}

}  // namespace poolalloc::internal
