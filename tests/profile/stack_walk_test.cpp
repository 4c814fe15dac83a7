// The stack walk of the heap profile's samples (src/stack_walk.cpp) gives the return addresses
// that libunwind's unw_backtrace gives, for calls of many shapes: -O0 and -O2 functions, with and
// without frame pointers, a leaf caller, alloca, a shared library, other threads; and hands over
// to libunwind, with the same stack in the end (capture_stack), where a frame's CFA is a DWARF
// expression (as GCC writes for a stack realigned beside alloca) or a signal handler runs.
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "stack_capture.hpp"
#include "stack_walk.hpp"
#include "stack_walk_shapes.hpp"

namespace {

using namespace poolalloc::internal;
using namespace stack_walk_shapes;

constexpr int kMost = kMostWalkedFrames;

// A walk that starts from no memo: every frame walked. Inline: no frame of its own.
[[gnu::always_inline]] inline int walk_anew(void** frames, int most) {
  StackWalkMemo memo{};
  return walk_stack(frames, most, memo);
}

// What probe captured, in arrays: it also runs in a signal handler, where nothing may allocate.
struct Capture {
  void* walked[kMost];
  int walked_count;  // walk_stack's answer: kWalkNeedsUnwinder when it handed over
  CapturedStack captured;
  void* unwound[kMost];
  int unwound_count;

  [[nodiscard]] bool handed_over() const { return walked_count == kWalkNeedsUnwinder; }
  [[nodiscard]] std::vector<void*> walked_frames() const {
    return std::vector<void*>(walked, walked + std::max(walked_count, 0));
  }
  [[nodiscard]] std::vector<const void*> captured_frames() const {
    return std::vector<const void*>(captured.frames(), captured.frames() + captured.depth);
  }
  [[nodiscard]] std::vector<void*> unwound_frames() const {
    return std::vector<void*>(unwound, unwound + std::max(unwound_count, 0));
  }
};

thread_local Capture t_capture;

int (*unw_backtrace)(void**, int) = nullptr;

// Captures the stack three ways from the same frame.
[[gnu::noinline]] void probe() {
  t_capture.walked_count = walk_anew(t_capture.walked, kMost);
  capture_stack(t_capture.captured, nullptr);
  t_capture.unwound_count = unw_backtrace(t_capture.unwound, kMost);
  asm volatile("");  // no tail call
}

class StackWalk : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_TRUE(load_stack_unwinder()) << "libunwind.so.8 is needed";
    void* library = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    unw_backtrace = reinterpret_cast<int (*)(void**, int)>(dlsym(library, "unw_backtrace"));
    ASSERT_NE(unw_backtrace, nullptr);
  }
};

// `frames` from the return address into probe's caller on (each capture's own call in probe
// differs), against the same part of unw_backtrace's. Each stops at the most frames asked of it
// (`most` for `frames`, kMost for libunwind's, which starts a few frames deeper): where they
// differ in length, the shorter is the one cut there.
template <class Frame>
void expect_same_callers(const std::vector<Frame>& frames, std::size_t most,
                         const std::vector<void*>& unwound) {
  ASSERT_GE(frames.size(), 2u);
  const auto start = std::find(unwound.begin(), unwound.end(), frames[1]);
  ASSERT_NE(start, unwound.end()) << "the caller of probe is not among libunwind's "
                                  << unwound.size() << " frames";
  std::vector<const void*> expected(start, unwound.end());
  std::vector<const void*> got(frames.begin() + 1, frames.end());
  if (got.size() < expected.size()) {
    EXPECT_EQ(frames.size(), most);
    expected.resize(got.size());
  } else if (expected.size() < got.size()) {
    EXPECT_EQ(unwound.size(), static_cast<std::size_t>(kMost));
    got.resize(expected.size());
  }
  EXPECT_EQ(got, expected);
}

// The walk answers alone, with libunwind's stack.
void expect_walked() {
  EXPECT_FALSE(t_capture.handed_over());
  expect_same_callers(t_capture.walked_frames(), kMost, t_capture.unwound_frames());
  expect_same_callers(t_capture.captured_frames(), kMostFrames, t_capture.unwound_frames());
}

TEST_F(StackWalk, MatchesLibunwindThroughO0Functions) {
  o0_chain(5, probe);
  expect_walked();
}

TEST_F(StackWalk, MatchesLibunwindThroughO2FunctionsWithoutFramePointers) {
  o2_chain(7, probe);
  expect_walked();
}

TEST_F(StackWalk, MatchesLibunwindThroughALeafCallerWithoutAFrame) {
  o2_leaf_caller(probe);
  expect_walked();
}

TEST_F(StackWalk, MatchesLibunwindThroughFramePointerFunctions) {
  fp_chain(6, probe);
  expect_walked();
}

TEST_F(StackWalk, MatchesLibunwindThroughAllocaFrames) {
  o2_alloca(1000, probe);
  expect_walked();
  o2_alloca(24, [] { o2_alloca(4000, probe); });
  expect_walked();
}

TEST_F(StackWalk, MatchesLibunwindThroughASharedLibrary) {
  library_chain(4, [] { o2_chain(2, probe); });
  expect_walked();
}

// libunwind's destructor of its thread-specific cache crashes at a thread's exit under
// ThreadSanitizer: there the threads walk without libunwind (ConcurrentWalksAgreeAcrossThreads).
#if defined(__SANITIZE_THREAD__)
constexpr bool kLibunwindInThreads = false;
#else
constexpr bool kLibunwindInThreads = true;
#endif

TEST_F(StackWalk, MatchesLibunwindInOtherThreads) {
  if (!kLibunwindInThreads) GTEST_SKIP() << "libunwind in threads under ThreadSanitizer";
  std::thread([] {
    o2_chain(3, [] { o0_chain(2, probe); });
    expect_walked();
  }).join();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      for (int depth = 0; depth < 40; ++depth) {
        fp_chain(depth + t, probe);
        expect_walked();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
}

// Walks twice from the same frame: the first may read the tables, the second reads the cache.
[[gnu::noinline]] void walk_twice() {
  void* first[kMost];
  void* second[kMost];
  const int first_count = walk_anew(first, kMost);
  const int second_count = walk_anew(second, kMost);
  ASSERT_GT(first_count, 3);
  ASSERT_EQ(first_count, second_count);
  // Each walk's own call differs: from the caller of walk_twice on.
  EXPECT_TRUE(std::equal(first + 1, first + first_count, second + 1));
  asm volatile("");  // no tail call
}

// Four threads fill and read the cache at once, through stacks of different depths and shapes.
TEST_F(StackWalk, ConcurrentWalksAgreeAcrossThreads) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      for (int depth = 0; depth < 40; ++depth) {
        fp_chain(depth + t, walk_twice);
        o0_chain(depth % 5, [] { o2_chain(3, walk_twice); });
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
}

// A stack that the program maps itself, each page readable: the walk's bounds are that mapping's.
class MappedStack {
 public:
  static constexpr std::size_t kBytes = 2 * 1024 * 1024;  // ThreadSanitizer's threads need 1
  MappedStack()
      : base_(mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) {}
  ~MappedStack() { munmap(base_, kBytes); }
  MappedStack(const MappedStack&) = delete;
  MappedStack& operator=(const MappedStack&) = delete;
  [[nodiscard]] void* base() const { return base_; }

 private:
  void* base_;
};

TEST_F(StackWalk, MatchesLibunwindOnAThreadStackThatTheProgramGave) {
  if (!kLibunwindInThreads) GTEST_SKIP() << "libunwind in threads under ThreadSanitizer";
  MappedStack stack;
  ASSERT_NE(stack.base(), MAP_FAILED);
  pthread_attr_t attributes;
  ASSERT_EQ(pthread_attr_init(&attributes), 0);
  ASSERT_EQ(pthread_attr_setstack(&attributes, stack.base(), MappedStack::kBytes), 0);
  pthread_t thread;
  ASSERT_EQ(pthread_create(
                &thread, &attributes,
                [](void*) -> void* {
                  o2_chain(4, probe);
                  expect_walked();
                  return nullptr;
                },
                nullptr),
            0);
  ASSERT_EQ(pthread_join(thread, nullptr), 0);
  pthread_attr_destroy(&attributes);
}

// swapcontext onto another stack, and back: each walk is bounded by the stack it runs on.
ucontext_t g_main_context;
ucontext_t g_other_context;

TEST_F(StackWalk, MatchesLibunwindAfterSwitchingStacks) {
  MappedStack stack;
  ASSERT_NE(stack.base(), MAP_FAILED);
  ASSERT_EQ(getcontext(&g_other_context), 0);
  g_other_context.uc_stack.ss_sp = stack.base();
  g_other_context.uc_stack.ss_size = MappedStack::kBytes;
  g_other_context.uc_link = &g_main_context;
  makecontext(
      &g_other_context, [] { fp_chain(3, probe); }, 0);
  ASSERT_EQ(swapcontext(&g_main_context, &g_other_context), 0);
  expect_walked();
  o2_chain(2, probe);  // back on the thread's own stack
  expect_walked();
}

// A function whose unwind table lies: it says that its caller's frame starts 1 MiB above its own.
// It calls the function given in its first argument.
extern "C" void far_cfa_frame(void (*call)());
asm(R"(
  .text
  .type far_cfa_frame, @function
far_cfa_frame:
  .cfi_startproc
  subq $8, %rsp
  .cfi_adjust_cfa_offset 0x100000
  call *%rdi
  addq $8, %rsp
  .cfi_adjust_cfa_offset -0x100000
  ret
  .cfi_endproc
  .size far_cfa_frame, .-far_cfa_frame
)");

int g_far_walk = 0;

// A stack of 256 KiB with 2 MiB that cannot be read above it: a load there would fault.
TEST_F(StackWalk, ReadsNothingOutsideTheThreadsStack) {
  constexpr std::size_t kStack = 256 * 1024;
  constexpr std::size_t kGuard = 2 * 1024 * 1024;
  void* mapping =
      mmap(nullptr, kStack + kGuard, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mapping, MAP_FAILED);
  ASSERT_EQ(mprotect(static_cast<char*>(mapping) + kStack, kGuard, PROT_NONE), 0);
  ASSERT_EQ(getcontext(&g_other_context), 0);
  g_other_context.uc_stack.ss_sp = mapping;
  g_other_context.uc_stack.ss_size = kStack;
  g_other_context.uc_link = &g_main_context;
  makecontext(
      &g_other_context,
      [] {
        far_cfa_frame([] {
          void* frames[kMost];
          g_far_walk = walk_anew(frames, kMost);
        });
      },
      0);
  ASSERT_EQ(swapcontext(&g_main_context, &g_other_context), 0);
  EXPECT_EQ(g_far_walk, kWalkNeedsUnwinder);
  munmap(mapping, kStack + kGuard);
}

TEST_F(StackWalk, StopsAtTheMostFramesAskedFor) {
  o2_chain(100, probe);
  EXPECT_FALSE(t_capture.handed_over());
  EXPECT_EQ(t_capture.walked_count, kMost);
  EXPECT_EQ(t_capture.captured.depth, kMostFrames);
}

TEST_F(StackWalk, MatchesLibunwindThroughAFrameRealignedFromRbp) {
  o2_realigned([] { o2_chain(2, probe); });
  expect_walked();
}

// A function whose caller's frame is found by a DWARF expression (rsp + 16, as GCC writes for a
// stack realigned beside alloca, which clang does not): it calls its first argument.
extern "C" void expression_cfa_frame(void (*call)());
asm(R"(
  .text
  .type expression_cfa_frame, @function
expression_cfa_frame:
  .cfi_startproc
  subq $8, %rsp
  .cfi_escape 0x0f, 0x02, 0x77, 0x10
  call *%rdi
  addq $8, %rsp
  .cfi_def_cfa_offset 8
  ret
  .cfi_endproc
  .size expression_cfa_frame, .-expression_cfa_frame
)");

TEST_F(StackWalk, HandsAFrameFoundByExpressionToLibunwind) {
  expression_cfa_frame([] { o2_chain(2, probe); });
  EXPECT_TRUE(t_capture.handed_over());
  expect_same_callers(t_capture.captured_frames(), kMostFrames, t_capture.unwound_frames());
}

void on_signal(int) {
  o2_chain(2, probe);
}

TEST_F(StackWalk, HandsASignalFrameToLibunwind) {
  struct sigaction action {};
  struct sigaction old {};
  action.sa_handler = on_signal;
  ASSERT_EQ(sigaction(SIGUSR1, &action, &old), 0);
  probe();  // libunwind's thread-local variables are allocated before the handler runs
  o2_chain(3, [] { raise(SIGUSR1); });
  ASSERT_EQ(sigaction(SIGUSR1, &old, nullptr), 0);
  EXPECT_TRUE(t_capture.handed_over());
  expect_same_callers(t_capture.captured_frames(), kMostFrames, t_capture.unwound_frames());
  // The handler's own frames and the interrupted ones beyond the signal frame.
  EXPECT_GT(t_capture.captured.depth, 8u);
}

// ---- the memo of the last walk -----------------------------------------------------------------

StackWalkMemo g_memo;
void* g_memo_frames[kMost];
int g_memo_walks[2];

// i + 1, out of the compiler's sight: a loop counted by it runs its body from one call site, never
// unrolled into two.
[[gnu::noinline]] int opaque_next(int i) {
  asm volatile("");
  return i + 1;
}

// Walks twice from one call site, with one memo, into the same frames.
[[gnu::noinline]] void walk_twice_with_the_memo() {
  for (int i = 0; i < 2; i = opaque_next(i))
    g_memo_walks[i] = walk_stack(g_memo_frames, kMost, g_memo);
  asm volatile("");  // no tail call
}

// Two callers of the same shape, so that the walk starts at the same stack pointer from either,
// with different return addresses above it (a nop apart, which keeps the compiler from folding
// them into one).
[[gnu::noinline]] void caller_a() {
  walk_twice_with_the_memo();
  asm volatile("");
}
[[gnu::noinline]] void caller_b() {
  asm volatile("nop");
  walk_twice_with_the_memo();
  asm volatile("");
}

TEST_F(StackWalk, AWalkFromWhereTheMemosWalkStartedOnAnUnchangedStackGivesItsFrames) {
  std::vector<void*> walked[2];
  for (int round = 0; round < 2; round = opaque_next(round)) {
    g_memo = StackWalkMemo{};
    caller_a();
    ASSERT_GT(g_memo_walks[0], 3);
    EXPECT_EQ(g_memo_walks[1], kWalkUnchanged);
    walked[round].assign(g_memo_frames, g_memo_frames + g_memo_walks[0]);
  }
  // What the memo answered for is the stack: a second walk anew gives the same frames.
  EXPECT_EQ(walked[0], walked[1]);
}

TEST_F(StackWalk, AStackChangedAboveTheSameStackPointerIsWalkedAgain) {
  g_memo = StackWalkMemo{};
  std::vector<void*> walked[2];
  for (int round = 0; round < 2; round = opaque_next(round)) {
    round == 0 ? caller_a() : caller_b();
    ASSERT_GT(g_memo_walks[0], 3) << "caller_b's stack was taken for caller_a's";
    EXPECT_EQ(g_memo_walks[1], kWalkUnchanged);
    walked[round].assign(g_memo_frames, g_memo_frames + g_memo_walks[0]);
  }
  ASSERT_EQ(walked[0].size(), walked[1].size());
  EXPECT_NE(walked[0][1], walked[1][1]);  // the return address into the caller
  EXPECT_TRUE(std::equal(walked[0].begin() + 3, walked[0].end(), walked[1].begin() + 3));
}

// A capture of an unchanged stack with another `first` finds where the program's frames start.
TEST_F(StackWalk, AnUnchangedStackCapturedWithAnotherFirstFrameStartsAtIt) {
  static CapturedStack stack;
  static const void* first = nullptr;
  stack = CapturedStack{};
  for (int i = 0; i < 3; ++i)
    o2_chain(3, [] {
      capture_stack(stack, first);
      asm volatile("");
    });
  ASSERT_GT(stack.depth, 3u);
  EXPECT_EQ(stack.start, 0u);
  first = stack.raw[2];
  o2_chain(3, [] {
    capture_stack(stack, first);
    asm volatile("");
  });
  EXPECT_EQ(stack.start, 2u);
  EXPECT_EQ(stack.frames()[0], first);
}

}  // namespace
