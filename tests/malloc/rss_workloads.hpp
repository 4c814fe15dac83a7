// Workloads shared by the tests that watch the resident set follow the live set over time:
// many threads that allocate a mix of sizes and go idle, and a pointer array that lives outside
// the allocator so that it does not blur what is measured.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>

#include <atomic>
#include <random>
#include <utility>

#include "malloc_test_util.hpp"

namespace malloc_test {

class PointerArray {
 public:
  explicit PointerArray(size_t capacity) : bytes_(capacity * sizeof(void*)) {
    void* m = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    data_ = m == MAP_FAILED ? nullptr : static_cast<void**>(m);
  }
  ~PointerArray() {
    if (data_ != nullptr) munmap(data_, bytes_);
  }
  PointerArray(const PointerArray&) = delete;
  PointerArray& operator=(const PointerArray&) = delete;
  void** data() const { return data_; }
  void*& operator[](size_t i) const { return data_[i]; }

 private:
  size_t bytes_;
  void** data_;
};

// Whether a thread of this process is named poolalloc-decay.
inline bool decay_thread_exists() {
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) return false;
  bool found = false;
  while (dirent* entry = readdir(tasks)) {
    if (entry->d_name[0] == '.') continue;
    char path[64], name[32] = {};
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", entry->d_name);
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    const ssize_t n = read(fd, name, sizeof name - 1);
    close(fd);
    if (n > 0 && strncmp(name, "poolalloc-decay\n", 16) == 0) found = true;
  }
  closedir(tasks);
  return found;
}

// A thread of the program's own, alive as long as the object: it allocates and frees a block (so
// that it has a cache) and waits, as a game's audio or render thread would. A program that runs
// threads of its own gets the decay thread (tuning.md); one with its main thread alone never.
class ThreadOfItsOwn {
 public:
  ThreadOfItsOwn() {
    pthread_mutex_init(&mutex_, nullptr);
    pthread_cond_init(&changed_, nullptr);
    pthread_create(&thread_, nullptr, &ThreadOfItsOwn::run, this);
    pthread_mutex_lock(&mutex_);
    while (!ready_) pthread_cond_wait(&changed_, &mutex_);
    pthread_mutex_unlock(&mutex_);
  }
  ~ThreadOfItsOwn() {
    pthread_mutex_lock(&mutex_);
    finish_ = true;
    pthread_cond_broadcast(&changed_);
    pthread_mutex_unlock(&mutex_);
    pthread_join(thread_, nullptr);
  }
  ThreadOfItsOwn(const ThreadOfItsOwn&) = delete;
  ThreadOfItsOwn& operator=(const ThreadOfItsOwn&) = delete;

 private:
  static void* run(void* self) {
    auto* thread = static_cast<ThreadOfItsOwn*>(self);
    void* volatile block = malloc(64);
    free(block);
    pthread_mutex_lock(&thread->mutex_);
    thread->ready_ = true;
    pthread_cond_broadcast(&thread->changed_);
    while (!thread->finish_) pthread_cond_wait(&thread->changed_, &thread->mutex_);
    pthread_mutex_unlock(&thread->mutex_);
    return nullptr;
  }

  pthread_t thread_{};
  pthread_mutex_t mutex_;
  pthread_cond_t changed_;
  bool ready_ = false, finish_ = false;
};

// Waits up to `ms` milliseconds for the decay thread, which a malloc's slow path starts in a
// program that runs threads of its own; true once it exists.
inline bool decay_thread_started(int ms = 10000) {
  for (int i = 0; i < ms / 5 && !decay_thread_exists(); ++i) {
    void* blocks[8];  // more than a bin of 32 KiB blocks holds: slow paths
    for (void*& block : blocks) block = malloc(32768);
    for (void* block : blocks) free(block);
    const timespec pause{0, 5000000};
    nanosleep(&pause, nullptr);
  }
  return decay_thread_exists();
}

// Allocates `bytes` of 64-byte blocks, writes each, and frees them in random order; the array
// of pointers lives outside the allocator. False if the blocks were not all had.
inline bool burst_freed_in_random_order(size_t bytes, uint64_t seed) {
  const size_t count = bytes / 64;
  PointerArray blocks(count);
  if (blocks.data() == nullptr) return false;
  for (size_t i = 0; i < count; ++i) {
    blocks[i] = malloc(opaque(size_t{64}));
    if (blocks[i] == nullptr) return false;
    static_cast<uintptr_t*>(blocks[i])[0] = i;
  }
  std::mt19937_64 rng(seed);
  for (size_t i = count; i > 1; --i) std::swap(blocks[i - 1], blocks[rng() % i]);
  for (size_t i = 0; i < count; ++i) free(blocks[i]);
  return true;
}

// A size from 16 B to 32 KiB, each doubling equally likely.
inline size_t mixed_size(std::mt19937_64& rng) {
  const unsigned doubling = 4 + static_cast<unsigned>(rng() % 11);  // 16 .. 16 KiB
  return (size_t{1} << doubling) + rng() % ((size_t{1} << doubling) + 1);
}

// `threads` workers each allocate `rounds` x `blocks` blocks of mixed sizes, write them whole,
// and free them in random order; then they wait, idle, while the caller's `while_idle` runs
// (given the bytes of their last round, as below),
// and exit once it returned. Nothing stays allocated. Returns the bytes the workers requested in
// their last round, all of them together: what their caches may still hold is no more than
// that (the blocks they freed last) plus the unused part of their last refills.
template <class WhileIdle>
size_t run_idle_workers(unsigned threads, unsigned rounds, unsigned blocks, uint64_t seed,
                        WhileIdle while_idle) {
  static std::atomic<size_t> last_round_bytes;
  last_round_bytes = 0;
  pthread_barrier_t done_working, may_exit;
  pthread_barrier_init(&done_working, nullptr, threads + 1);
  pthread_barrier_init(&may_exit, nullptr, threads + 1);
  struct Worker {
    pthread_t thread;
    uint64_t seed;
    unsigned rounds, blocks;
    pthread_barrier_t *done_working, *may_exit;
  };
  static Worker workers[4096];
  for (unsigned t = 0; t < threads; ++t) {
    workers[t] = {{}, seed + t, rounds, blocks, &done_working, &may_exit};
    pthread_create(
        &workers[t].thread, nullptr,
        [](void* arg) -> void* {
          auto* w = static_cast<Worker*>(arg);
          std::mt19937_64 rng(w->seed);
          PointerArray held(w->blocks);
          for (unsigned round = 0; round < w->rounds; ++round) {
            for (unsigned i = 0; i < w->blocks; ++i) {
              const size_t size = mixed_size(rng);
              if (round + 1 == w->rounds) last_round_bytes += size;
              held[i] = malloc(size);
              if (held[i] != nullptr) memset(held[i], 0x5a, size);
            }
            for (unsigned i = w->blocks; i > 1; --i) std::swap(held[i - 1], held[rng() % i]);
            for (unsigned i = 0; i < w->blocks; ++i) free(held[i]);
          }
          pthread_barrier_wait(w->done_working);
          pthread_barrier_wait(w->may_exit);
          return nullptr;
        },
        &workers[t]);
  }
  pthread_barrier_wait(&done_working);
  while_idle(last_round_bytes.load());
  pthread_barrier_wait(&may_exit);
  for (unsigned t = 0; t < threads; ++t) pthread_join(workers[t].thread, nullptr);
  pthread_barrier_destroy(&done_working);
  pthread_barrier_destroy(&may_exit);
  return last_round_bytes;
}

}  // namespace malloc_test
