// Out of TLS indexes: the program takes every index of the process before poolalloc's
// constructor runs, so that the library has none for its thread words (the thread's cache, its
// exited flag). Each thread must then go uncached, its news served by the central lists, rather
// than make a thread cache at every call and leak it, and keep the thread's last error, as every
// call does. Exits with 0 when 20,000 news and deletes in the main thread and in a thread of
// CreateThread were all served, intact, by the pools, left GetLastError as it was, no thread
// cache is left, and a tag push was refused with ENOMEM. With PA_TEST_TLS_LEFT=1 the program
// leaves one index free: the cache takes it (not the exited flag), so the threads are cached,
// the main thread's cache is left, and the push works.
#include <poolalloc/poolalloc.h>
#include <windows.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace {

DWORD g_taken[2048];
int g_taken_count = 0;
bool g_one_left = false;

// Before poolalloc's constructor (priority 101 runs before the default), and before any new.
__attribute__((constructor(101))) void take_every_tls_index() {
  char left[2];
  g_one_left =
      GetEnvironmentVariableA("PA_TEST_TLS_LEFT", left, sizeof left) == 1 && left[0] == '1';
  for (DWORD index; g_taken_count < 2048 && (index = TlsAlloc()) != TLS_OUT_OF_INDEXES;)
    g_taken[g_taken_count++] = index;
  if (g_one_left) TlsFree(g_taken[--g_taken_count]);
}

// 20,000 pairs of new[] and delete[] of 64 bytes; the number that were intact and kept the last
// error.
int churn() {
  int good = 0;
  for (int i = 0; i < 20000; ++i) {
    SetLastError(ERROR_ALREADY_EXISTS);
    auto* block = new char[64];
    const bool kept_by_new = GetLastError() == ERROR_ALREADY_EXISTS;
    std::memset(block, i & 0xff, 64);
    const bool intact = poolalloc_owns(block) != 0 && block[63] == static_cast<char>(i & 0xff);
    delete[] block;
    good += intact && kept_by_new && GetLastError() == ERROR_ALREADY_EXISTS;
  }
  return good;
}

DWORD WINAPI thread_body(LPVOID result) {
  *static_cast<int*>(result) = churn();
  return 0;
}

}  // namespace

int main() {
  const int in_main = churn();
  int in_thread = 0;
  const HANDLE thread = CreateThread(nullptr, 0, thread_body, &in_thread, 0, nullptr);
  if (thread == nullptr) return 2;
  WaitForSingleObject(thread, INFINITE);
  CloseHandle(thread);
  // The tag stack lives in the thread's cache: without one, a push is refused.
  errno = 0;
  const int pushed = poolalloc_tag_push(poolalloc_tag_register("no cache"));
  const bool tags_as_due = g_one_left ? pushed == 0 : pushed == -1 && errno == ENOMEM;
  poolalloc_stats stats{};
  poolalloc_get_stats(&stats);
  std::printf(
      "%d TLS indexes taken; pooled pairs intact, last error kept: %d in main, %d in a"
      " thread; %llu thread caches; tag push %d\n",
      g_taken_count, in_main, in_thread, static_cast<unsigned long long>(stats.thread_caches),
      pushed);
  for (int i = 0; i < g_taken_count; ++i) TlsFree(g_taken[i]);
  const std::uint64_t caches_due = g_one_left ? 1 : 0;  // the main thread's
  return in_main == 20000 && in_thread == 20000 && stats.thread_caches == caches_due && tags_as_due
             ? 0
             : 1;
}
