// What a program can observe about itself, one fact a line ("<fact> <value>"), in a form that is
// the same from one run to the next of the same program: no addresses, no inode numbers, no
// times. invisibility_probe prints it on glibc and with poolalloc preloaded; invisibility_test
// compares the two.
#pragma once

#include <sched.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace self_view {

// The facts that tell how many threads the process has: "threads" (/proc/self/status) and
// "tasks" (the entries of /proc/self/task). `prefix` goes before each fact's name.
std::string thread_count(const std::string& prefix = "");

// Everything else the main thread can see of its process, but its threads: signal mask and
// dispositions, descriptors, the signal, capability and cpuset lines of /proc/self/status,
// scheduling, name, glibc's __libc_single_threaded, namespaces, limits, errno across malloc and
// free, the environment, and the names of its mappings (anonymous ones, glibc's heap and the
// preloaded libpoolalloc*.so left out). `allowed` is the cpuset the process was started with.
std::string process(const cpu_set_t& allowed);

// "own-tasks N": how many of the tasks in /proc/self/task are the program's (`own` lists them),
// then "foreign-thread <comm> <policy> <priority> <affinity> <blocked>" for each of the others:
// affinity "allowed" where it is `allowed`, blocked "all" where every signal a thread can block
// is blocked, the list or the mask otherwise.
std::string threads_not_ours(const std::vector<pid_t>& own, const cpu_set_t& allowed);

// The line threads_not_ours prints for a helper thread that a program cannot tell from none:
// named poolalloc-decay, at SCHED_OTHER, on every allowed CPU, with every signal blocked.
inline constexpr const char* kInvisibleHelper =
    "foreign-thread poolalloc-decay SCHED_OTHER 0 allowed all";

// "unshare(CLONE_NEWUSER) ok", or the errno's name. Moves the process into a new user
// namespace when it succeeds: the last fact a probe prints.
std::string unshare_user_namespace();

}  // namespace self_view
