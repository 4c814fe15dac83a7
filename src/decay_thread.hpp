// The decay thread: runs the decay steps (decay.hpp) in the background for a program that runs
// threads of its own, so that the caches of threads that went idle go back whatever the program
// does next (only another thread can reach them once their owners make no call).
//
// A program that has only its main thread never has it: there the thread's own calls run the
// steps (decay.hpp says how), and nothing of the library shows in /proc/self/task, in
// unshare(CLONE_NEWUSER) or setns() (which the kernel refuses a multithreaded process), or in
// Python's warning at fork() in a multithreaded process. So:
// - it is started by a slow path of malloc, and only while glibc says the process is not single-
//   threaded (__libc_single_threaded, a load) and the kernel counts two threads or more
//   (os_thread_count, a stat of /proc, after a count of one not again for 4 ms, doubling up to a
//   step interval);
//   not by a slow path of free: glibc frees threads' TLS blocks while it holds the lock of its
//   stack cache, which pthread_create takes (a thread joining another deadlocked on itself);
// - it leaves within a period once the program is back to its main thread alone (it looks at
//   each step and each wake), after giving back what malloc_trim(0) would, so that the thread
//   left behind starts from its live set; the next slow path that finds threads again starts a
//   new one;
// - it runs at SCHED_OTHER on the CPUs the process could use when the library started (taskset's
//   choice holds), whatever the policy and the affinity of the thread that started it (a game
//   loop pinned to a core at SCHED_FIFO would otherwise never let it run), with every signal
//   blocked, and it takes no lock that a program's call waits on longer than one of its bounded
//   holds (central_lists.cpp);
// - it runs a step every third of POOLALLOC_DECAY_MS while the steps find memory to give back,
//   and sleeps on a futex after a step that found none, for one period at most (frees that stay
//   within the threads' caches wake nobody, and an idle owner's cache must still go back);
// - every slow path of malloc and free, and every thread's exit, may have made memory that a
//   step could give back: each notes it and wakes the thread if it sleeps (decay_requests.hpp);
// - while it exists, slow paths run no step themselves (they keep emptying their own cache when
//   the flush epoch moved);
// - where it cannot be created (EAGAIN, a seccomp filter), the program's calls run the steps,
//   and a new attempt is made after a back-off of 1, 2, 4 ... 64 periods.
// Not created once the process has begun to exit, nor between fork()'s prepare and parent or
// child handlers; a child of fork() has no decay thread and starts its own on demand.
// POOLALLOC_DECAY_THREAD=0, or POOLALLOC_DECAY_MS=0, keeps it from being created.
#pragma once

namespace poolalloc::internal {

// At initialisation, before the program pins any thread: the CPUs the decay thread will run on.
void note_startup_cpus();

// The library's destructor: no thread is created from now on.
void stop_creating_decay_thread();

void decay_thread_prepare_fork();
void decay_thread_after_fork(bool in_child);

}  // namespace poolalloc::internal
