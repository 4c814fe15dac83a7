// Every replaceable global operator new and delete, each called explicitly so that each of the
// 20 mangled symbols is exercised: results are aligned and usable, the new-handler is called
// before std::bad_alloc is thrown, and the nothrow forms return nullptr.
#include <malloc.h>
#include <stdint.h>

#include <cstddef>
#include <new>
#include <vector>

#include <gtest/gtest.h>

#include "malloc_test_util.hpp"

namespace malloc_test {
namespace {

const std::nothrow_t& kNothrow = std::nothrow;

// Writes and checks the whole block, then checks it is aligned.
void use_block(void* p, size_t n, size_t alignment) {
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(is_aligned(p, alignment)) << p << " for alignment " << alignment;
  fill(p, n, n + alignment);
  EXPECT_TRUE(matches(p, n, n + alignment));
}

TEST(OperatorNew, PlainAndArrayForms) {
  for (size_t n : {0u, 1u, 24u, 100u, 4096u, 32768u, 40000u, 1u << 20}) {
    void* p = ::operator new(opaque(n));
    use_block(p, n, 16);
    ::operator delete(p);
    p = ::operator new[](opaque(n));
    use_block(p, n, 16);
    ::operator delete[](p);
  }
}

TEST(OperatorNew, NothrowForms) {
  for (size_t n : {0u, 1u, 100u, 40000u}) {
    void* p = ::operator new(opaque(n), kNothrow);
    use_block(p, n, 16);
    ::operator delete(p, kNothrow);
    p = ::operator new[](opaque(n), kNothrow);
    use_block(p, n, 16);
    ::operator delete[](p, kNothrow);
  }
}

TEST(OperatorNew, SizedDeleteForms) {
  for (size_t n : {1u, 100u, 32768u, 40000u}) {
    void* p = ::operator new(opaque(n));
    use_block(p, n, 16);
    ::operator delete(p, n);
    p = ::operator new[](opaque(n));
    use_block(p, n, 16);
    ::operator delete[](p, n);
  }
}

TEST(OperatorNew, ZeroSizeGivesDistinctPointers) {
  void* a = ::operator new(opaque<size_t>(0));
  void* b = ::operator new(opaque<size_t>(0));
  EXPECT_NE(a, b);
  ::operator delete(a);
  ::operator delete(b);
}

// Aligned new for every power of two from 16 (the default new alignment) to 1 MiB, with every
// matching delete: plain, nothrow, sized.
TEST(OperatorNew, AlignedFormsWithEveryDelete) {
  for (size_t alignment = 16; alignment <= (size_t{1} << 20); alignment *= 2) {
    const std::align_val_t al{alignment};
    for (size_t n : {size_t{1}, size_t{100}, alignment, size_t{40000}}) {
      void* p = ::operator new(opaque(n), al);
      use_block(p, n, alignment);
      ::operator delete(p, al);
      p = ::operator new[](opaque(n), al);
      use_block(p, n, alignment);
      ::operator delete[](p, al);
      p = ::operator new(opaque(n), al, kNothrow);
      use_block(p, n, alignment);
      ::operator delete(p, al, kNothrow);
      p = ::operator new[](opaque(n), al, kNothrow);
      use_block(p, n, alignment);
      ::operator delete[](p, al, kNothrow);
      p = ::operator new(opaque(n), al);
      use_block(p, n, alignment);
      ::operator delete(p, n, al);
      p = ::operator new[](opaque(n), al);
      use_block(p, n, alignment);
      ::operator delete[](p, n, al);
    }
  }
}

struct alignas(64) CacheLine {
  unsigned char bytes[64];
};
struct alignas(4096) Page {
  unsigned char bytes[4096];
};
struct alignas(8192) TwoPages {
  unsigned char bytes[100];
};

template <class T>
void check_over_aligned_type() {
  std::vector<T*> objects;
  for (int i = 0; i < 16; ++i) {
    objects.push_back(new T{});
    ASSERT_TRUE(is_aligned(objects.back(), alignof(T))) << alignof(T);
    fill(objects.back()->bytes, sizeof(objects.back()->bytes), i);
  }
  for (int i = 0; i < 16; ++i) {
    EXPECT_TRUE(matches(objects[i]->bytes, sizeof(objects[i]->bytes), i));
    delete objects[i];  // sized, aligned delete
  }
  T* array = new T[5];
  EXPECT_TRUE(is_aligned(array, alignof(T)));
  fill(array, 5 * sizeof(T), 5);
  delete[] array;
  void* raw = ::operator new (sizeof(T), std::align_val_t{alignof(T)});
  EXPECT_TRUE(is_aligned(raw, alignof(T)));
  ::operator delete (raw, sizeof(T), std::align_val_t{alignof(T)});
}

TEST(OperatorNew, OverAlignedTypes) {
  check_over_aligned_type<CacheLine>();
  check_over_aligned_type<Page>();
  check_over_aligned_type<TwoPages>();
}

// The size given to sized delete is a hint: a wrong one (a common bug) must not send the block
// to another size class, where it would be handed out again as a larger block.
TEST(OperatorNew, WrongSizeInSizedDeleteDoesNotCorruptTheHeap) {
  void* p = ::operator new(opaque<size_t>(100));
  ::operator delete(p, opaque<size_t>(5000));
  void* q = ::operator new(opaque<size_t>(100));
  ::operator delete(q, opaque<size_t>(1));
  std::vector<void*> blocks;
  for (size_t i = 0; i < 200; ++i) {
    size_t n = i % 2 == 0 ? 5000 : 100;
    blocks.push_back(::operator new(n));
    fill(blocks.back(), n, i);
  }
  for (size_t i = 0; i < blocks.size(); ++i) {
    size_t n = i % 2 == 0 ? 5000 : 100;
    EXPECT_TRUE(matches(blocks[i], n, i)) << "block " << i << " of " << n;
    EXPECT_GE(malloc_usable_size(blocks[i]), n);
    ::operator delete(blocks[i]);
  }
}

// A new-handler that gives up after a given number of calls by uninstalling itself.
int g_handler_calls = 0;
int g_handler_gives_up_after = 1;
void counting_handler() {
  if (++g_handler_calls >= g_handler_gives_up_after) std::set_new_handler(nullptr);
}

class NewHandler : public testing::Test {
 protected:
  void SetUp() override {
    g_handler_calls = 0;
    g_handler_gives_up_after = 1;
    std::set_new_handler(counting_handler);
  }
  void TearDown() override { std::set_new_handler(nullptr); }
};

// Sizes no allocation can satisfy. An aligned new must not round them up to a multiple of the
// alignment without checking for overflow: GCC 12's libstdc++ does exactly that
// ("sz = (sz + align - 1) & ~(align - 1)" in new_opa.cc), wraps SIZE_MAX to 0 and returns a
// block, so the aligned cases below fail when libstdc++'s operators are the ones running.
const size_t kImpossibleSizes[] = {SIZE_MAX, size_t{PTRDIFF_MAX} + 1, SIZE_MAX - 4096};

TEST_F(NewHandler, CalledUntilItGivesUpThenBadAlloc) {
  for (size_t n : kImpossibleSizes) {
    g_handler_calls = 0;
    g_handler_gives_up_after = 3;
    std::set_new_handler(counting_handler);
    EXPECT_THROW((void)::operator new(opaque(n)), std::bad_alloc) << n;
    EXPECT_EQ(g_handler_calls, 3) << n;
  }
}

TEST_F(NewHandler, ArrayAndAlignedFormsCallItToo) {
  for (size_t n : kImpossibleSizes) {
    g_handler_calls = 0;
    std::set_new_handler(counting_handler);
    EXPECT_THROW((void)::operator new[](opaque(n)), std::bad_alloc);
    EXPECT_EQ(g_handler_calls, 1);
    g_handler_calls = 0;
    std::set_new_handler(counting_handler);
    EXPECT_THROW((void)::operator new (opaque(n), std::align_val_t{64}), std::bad_alloc);
    EXPECT_EQ(g_handler_calls, 1);
    g_handler_calls = 0;
    std::set_new_handler(counting_handler);
    EXPECT_THROW((void)::operator new[](opaque(n), std::align_val_t{8192}), std::bad_alloc);
    EXPECT_EQ(g_handler_calls, 1);
  }
}

TEST(OperatorNewFailure, ThrowsBadAllocWithoutAHandler) {
  ASSERT_EQ(std::get_new_handler(), nullptr);
  for (size_t n : kImpossibleSizes) {
    EXPECT_THROW((void)::operator new(opaque(n)), std::bad_alloc);
    EXPECT_THROW((void)::operator new[](opaque(n)), std::bad_alloc);
    EXPECT_THROW((void)::operator new (opaque(n), std::align_val_t{256}), std::bad_alloc);
    EXPECT_THROW((void)::operator new[](opaque(n), std::align_val_t{256}), std::bad_alloc);
  }
}

// The nothrow forms behave as if they called the throwing form: the handler runs, and its
// giving up turns into nullptr instead of an exception.
TEST_F(NewHandler, NothrowFormsReturnNullptr) {
  for (size_t n : kImpossibleSizes) {
    g_handler_calls = 0;
    std::set_new_handler(counting_handler);
    EXPECT_EQ(::operator new(opaque(n), kNothrow), nullptr);
    EXPECT_GE(g_handler_calls, 1);
    std::set_new_handler(nullptr);
    EXPECT_EQ(::operator new[](opaque(n), kNothrow), nullptr);
    EXPECT_EQ(::operator new (opaque(n), std::align_val_t{64}, kNothrow), nullptr);
    EXPECT_EQ(::operator new[](opaque(n), std::align_val_t{4096}, kNothrow), nullptr);
  }
}

// A handler that throws: the exception reaches the caller of new.
TEST(OperatorNewFailure, HandlerMayThrowBadAlloc) {
  std::set_new_handler([] { throw std::bad_alloc(); });
  EXPECT_THROW((void)::operator new(opaque(SIZE_MAX)), std::bad_alloc);
  EXPECT_EQ(::operator new(opaque(SIZE_MAX), kNothrow), nullptr);
  std::set_new_handler(nullptr);
}

}  // namespace
}  // namespace malloc_test
