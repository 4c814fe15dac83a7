#include "self_view.hpp"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/single_threaded.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

extern char** environ;

namespace self_view {
namespace {

std::string read_link(const std::string& path) {
  char target[PATH_MAX];
  const ssize_t length = readlink(path.c_str(), target, sizeof target);
  return length < 0 ? std::string("? ") + strerrorname_np(errno)
                    : std::string(target, static_cast<size_t>(length));
}

// The names in a /proc directory, but "." and "..", sorted; `skip_fd` (the descriptor that lists
// it) left out.
std::vector<std::string> directory(const std::string& path, bool skip_own_fd = false) {
  std::vector<std::string> names;
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) return names;
  const std::string own = std::to_string(dirfd(dir));
  while (const dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (name == "." || name == ".." || (skip_own_fd && name == own)) continue;
    names.push_back(name);
  }
  closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

// The value of `key:` in a status file of /proc, tabs and spaces trimmed.
std::string status_field(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key + ":", 0) != 0) continue;
    const size_t start = line.find_first_not_of(" \t", key.size() + 1);
    return start == std::string::npos ? "" : line.substr(start);
  }
  return "?";
}

std::string hex(uint64_t value) {
  std::ostringstream text;
  text << std::hex << value;
  return text.str();
}

// The kernel's 64 signals of a set, signal n at bit n - 1 as /proc shows them.
uint64_t signal_bits(const sigset_t& set) {
  uint64_t bits = 0;
  memcpy(&bits, &set, sizeof bits);
  return bits;
}

std::string cpu_list(const cpu_set_t& set) {
  std::string list;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    list += (list.empty() ? "" : ",") + std::to_string(cpu);
  }
  return list;
}

std::string policy_name(int policy) {
  switch (policy & ~SCHED_RESET_ON_FORK) {
    case SCHED_OTHER:
      return "SCHED_OTHER";
    case SCHED_FIFO:
      return "SCHED_FIFO";
    case SCHED_RR:
      return "SCHED_RR";
    case SCHED_BATCH:
      return "SCHED_BATCH";
    case SCHED_IDLE:
      return "SCHED_IDLE";
    default:
      return std::to_string(policy);
  }
}

std::string scheduling(pid_t tid, const cpu_set_t& allowed) {
  const int policy = sched_getscheduler(tid);
  if (policy < 0) return std::string("? ") + strerrorname_np(errno);
  sched_param param{};
  sched_getparam(tid, &param);
  cpu_set_t affinity;
  CPU_ZERO(&affinity);
  sched_getaffinity(tid, sizeof affinity, &affinity);
  return policy_name(policy) + (policy & SCHED_RESET_ON_FORK ? "|RESET_ON_FORK" : "") + " " +
         std::to_string(param.sched_priority) + " " +
         (CPU_EQUAL(&affinity, &allowed) ? "allowed" : cpu_list(affinity));
}

// SigBlk of a thread that blocked every signal it can (the kernel keeps SIGKILL and SIGSTOP
// deliverable, glibc its own two).
std::string every_blockable_signal() {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  const std::string blocked = status_field("/proc/thread-self/status", "SigBlk");
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return blocked;
}

void signals(std::string& out) {
  sigset_t mask;
  pthread_sigmask(SIG_BLOCK, nullptr, &mask);
  out += "sigmask " + hex(signal_bits(mask)) + "\n";
  for (int signal = 1; signal <= 64; ++signal) {
    struct sigaction action {};
    out += "signal " + std::to_string(signal) + " ";
    if (sigaction(signal, nullptr, &action) != 0) {
      out += std::string(strerrorname_np(errno)) + "\n";
      continue;
    }
    const bool info = (action.sa_flags & SA_SIGINFO) != 0;
    const void* handler = info ? reinterpret_cast<void*>(action.sa_sigaction)
                               : reinterpret_cast<void*>(action.sa_handler);
    out += handler == reinterpret_cast<void*>(SIG_DFL)   ? "default"
           : handler == reinterpret_cast<void*>(SIG_IGN) ? "ignored"
                                                         : "handler";
    out += " flags " + hex(static_cast<uint64_t>(static_cast<unsigned>(action.sa_flags))) +
           " mask " + hex(signal_bits(action.sa_mask)) + "\n";
  }
}

// A pipe's or a socket's inode differs from run to run: "pipe:[123]" is shown "pipe:[]".
std::string without_inode(const std::string& target) {
  return std::regex_replace(target, std::regex("^([a-z_]+):\\[[0-9]+\\]$"), "$1:[]");
}

void descriptors(std::string& out) {
  for (const std::string& fd : directory("/proc/self/fd", true)) {
    const int flags = fcntl(std::stoi(fd), F_GETFD);
    out += "fd " + fd + " " + without_inode(read_link("/proc/self/fd/" + fd)) +
           ((flags & FD_CLOEXEC) != 0 ? " cloexec" : "") + "\n";
  }
}

void process_status(std::string& out) {
  for (const char* key :
       {"Umask", "SigPnd", "ShdPnd", "SigBlk", "SigIgn", "SigCgt", "CapInh", "CapPrm", "CapEff",
        "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp", "Seccomp_filters", "Speculation_Store_Bypass",
        "Cpus_allowed_list", "Mems_allowed_list"})
    out += std::string("status ") + key + " " + status_field("/proc/self/status", key) + "\n";
}

void main_thread(std::string& out, const cpu_set_t& allowed) {
  out += "scheduling " + scheduling(0, allowed) + "\n";
  errno = 0;
  out += "nice " + std::to_string(getpriority(PRIO_PROCESS, 0)) + "\n";
  char name[16] = {};
  prctl(PR_GET_NAME, name);
  out += std::string("comm ") + name + "\n";
  out += "dumpable " + std::to_string(prctl(PR_GET_DUMPABLE)) + "\n";
  // glibc's word to libraries that no thread was ever created: set for good at the first one.
  out += "libc_single_threaded " + std::to_string(__libc_single_threaded) + "\n";
  out += "cwd " + read_link("/proc/self/cwd") + "\n";
}

void namespaces(std::string& out) {
  for (const std::string& name : directory("/proc/self/ns"))
    out += "namespace " + name + " " + read_link("/proc/self/ns/" + name) + "\n";
}

void limits(std::string& out) {
  const auto value = [](rlim_t limit) {
    return limit == RLIM_INFINITY ? std::string("unlimited") : std::to_string(limit);
  };
  for (int resource = 0; resource < RLIM_NLIMITS; ++resource) {
    rlimit limit{};
    getrlimit(static_cast<__rlimit_resource>(resource), &limit);
    out += "rlimit " + std::to_string(resource) + " " + value(limit.rlim_cur) + " " +
           value(limit.rlim_max) + "\n";
  }
}

// errno after calls that succeed: a small block and a large one, taken and given back.
void errno_across_malloc(std::string& out) {
  constexpr int kSentinel = 4242;
  errno = kSentinel;
  void* volatile small = malloc(100);
  void* volatile large = malloc(size_t{1} << 20);
  free(small);
  free(large);
  out += "errno after malloc and free " + std::to_string(errno) + "\n";
}

void environment(std::string& out) {
  for (char** entry = environ; *entry != nullptr; ++entry)
    out += std::string("environ ") + *entry + "\n";
}

// The preloaded library's own file is where it belongs; anything else it mapped under a name, a
// file or "[anon:...]", is seen by the program.
bool is_preloaded_library(const std::string& name) {
  const std::string base = name.substr(name.rfind('/') + 1);
  return std::regex_match(base, std::regex("libpoolalloc.*\\.so(\\.[0-9.]+)?"));
}

void mapping_names(std::string& out) {
  std::set<std::string> names;
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    std::istringstream fields(line);
    std::string range, permissions, offset, device, inode, name;
    fields >> range >> permissions >> offset >> device >> inode;
    std::getline(fields >> std::ws, name);
    if (name.empty() || name == "[heap]" || is_preloaded_library(name)) continue;
    names.insert(name);
  }
  for (const std::string& name : names) out += "mapping " + name + "\n";
}

}  // namespace

std::string thread_count(const std::string& prefix) {
  return prefix + "threads " + status_field("/proc/self/status", "Threads") + "\n" + prefix +
         "tasks " + std::to_string(directory("/proc/self/task").size()) + "\n";
}

std::string process(const cpu_set_t& allowed) {
  std::string out;
  signals(out);
  descriptors(out);
  process_status(out);
  main_thread(out, allowed);
  namespaces(out);
  limits(out);
  errno_across_malloc(out);
  environment(out);
  mapping_names(out);
  return out;
}

std::string threads_not_ours(const std::vector<pid_t>& own, const cpu_set_t& allowed) {
  const std::string all_blocked = every_blockable_signal();
  std::string foreign;
  size_t own_tasks = 0;
  for (const std::string& task : directory("/proc/self/task")) {
    const pid_t tid = std::stoi(task);
    if (std::find(own.begin(), own.end(), tid) != own.end()) {
      ++own_tasks;
      continue;
    }
    const std::string path = "/proc/self/task/" + task + "/";
    std::string comm;
    std::getline(std::ifstream(path + "comm"), comm);
    const std::string blocked = status_field(path + "status", "SigBlk");
    foreign += "foreign-thread " + comm + " " + scheduling(tid, allowed) + " " +
               (blocked == all_blocked ? "all" : blocked) + "\n";
  }
  return "own-tasks " + std::to_string(own_tasks) + "\n" + foreign;
}

std::string unshare_user_namespace() {
  const bool done = unshare(CLONE_NEWUSER) == 0;
  return std::string("unshare(CLONE_NEWUSER) ") + (done ? "ok" : strerrorname_np(errno)) + "\n";
}

}  // namespace self_view
