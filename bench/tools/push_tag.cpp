// libpush_tag.so: runs an unmodified program under one memory tag, to measure what tags cost
// (docs/benchmarks.md, "The heap profile and memory tags"). Preloaded after libpoolalloc.so:
//
//   LD_PRELOAD=libpoolalloc.so:libpush_tag.so PROGRAM...
//   scripts/bench.sh --allocators "poolalloc
//   tagged=poolalloc+build-suite/bench/tools/libpush_tag.so"
//
// Its constructor registers the tag "bench" and pushes it in the main thread. Threads inherit no
// tag, so it also wraps pthread_create: each new thread pushes the tag before its start routine
// runs, and every allocation of the program is charged to the tag (poolalloc's decay thread,
// created through the same pthread_create, too). The wrapper allocates nothing (poolalloc may
// create its thread from inside malloc): the start routine and its argument go to the new thread
// in one of a fixed set of slots.
//
// PUSH_TAG=NAME pushes the tag NAME instead. PUSH_TAG=untagged pushes tag 0, which is no tag: the
// shim is loaded and does all it does but charge a tag, so that a run with it sets apart what
// the tag costs from what loading the shim costs (its pages, the wrapped pthread_create):
//
//   scripts/bench.sh --allocators
//   "shim=poolalloc+build-suite/bench/tools/libpush_tag.so:PUSH_TAG=untagged
//   tagged=poolalloc+build-suite/bench/tools/libpush_tag.so"
#include <dlfcn.h>
#include <poolalloc/poolalloc.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace {

using StartRoutine = void* (*)(void*);
using CreateFunction = int (*)(pthread_t*, const pthread_attr_t*, StartRoutine, void*);

struct StartSlot {
  std::atomic<bool> taken{false};
  StartRoutine routine = nullptr;
  void* argument = nullptr;
};

// More threads than this starting at the same moment wait for a slot.
constexpr int kSlots = 256;
StartSlot g_slots[kSlots];
int g_tag = POOLALLOC_TAG_UNTAGGED;
CreateFunction g_create = nullptr;

StartSlot& take_slot() {
  for (;;) {
    for (StartSlot& slot : g_slots) {
      bool expected = false;
      if (slot.taken.compare_exchange_strong(expected, true, std::memory_order_acquire))
        return slot;
    }
    sched_yield();
  }
}

void* start_tagged(void* slot_pointer) {
  auto& slot = *static_cast<StartSlot*>(slot_pointer);
  const StartRoutine routine = slot.routine;
  void* const argument = slot.argument;
  slot.taken.store(false, std::memory_order_release);
  poolalloc_tag_push(g_tag);
  return routine(argument);
}

__attribute__((constructor)) void push_tag_in_main_thread() {
  g_create = reinterpret_cast<CreateFunction>(dlsym(RTLD_NEXT, "pthread_create"));
  const char* name = std::getenv("PUSH_TAG");
  if (name == nullptr) name = "bench";
  g_tag = poolalloc_tag_register(name);
  if (g_create == nullptr || g_tag < 0 || poolalloc_tag_push(g_tag) != 0) {
    std::fprintf(stderr, "libpush_tag.so: cannot register and push the tag \"%s\"\n", name);
    std::abort();
  }
}

}  // namespace

extern "C" int pthread_create(pthread_t* thread, const pthread_attr_t* attributes,
                              StartRoutine routine, void* argument) {
  StartSlot& slot = take_slot();
  slot.routine = routine;
  slot.argument = argument;
  const int result = g_create(thread, attributes, start_tagged, &slot);
  if (result != 0) slot.taken.store(false, std::memory_order_release);
  return result;
}
