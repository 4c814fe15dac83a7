// Each of the 20 operator new/delete symbols is ours, not libstdc++'s: every new form hands out
// a pooled block, and every delete form gives one back to the pools (pooled_frees moves).
#include <stdint.h>

#include <functional>
#include <new>

#include <gtest/gtest.h>

#include "malloc_test_util.hpp"
#include "poolalloc/poolalloc.h"

namespace malloc_test {
namespace {

constexpr size_t kSize = 48;
constexpr std::align_val_t kAlign{64};

uint64_t pooled_frees() {
  poolalloc_stats stats{};
  poolalloc_get_stats(&stats);
  return stats.pooled_frees;
}

struct NewForm {
  const char* name;
  bool aligned;
  std::function<void*()> allocate;
};

TEST(OperatorForms, EveryNewFormServesFromThePools) {
  const NewForm forms[] = {
      {"new", false, [] { return ::operator new(opaque(kSize)); }},
      {"new[]", false, [] { return ::operator new[](opaque(kSize)); }},
      {"new nothrow", false, [] { return ::operator new(opaque(kSize), std::nothrow); }},
      {"new[] nothrow", false, [] { return ::operator new[](opaque(kSize), std::nothrow); }},
      {"new aligned", true, [] { return ::operator new(opaque(kSize), kAlign); }},
      {"new[] aligned", true, [] { return ::operator new[](opaque(kSize), kAlign); }},
      {"new aligned nothrow", true,
       [] { return ::operator new(opaque(kSize), kAlign, std::nothrow); }},
      {"new[] aligned nothrow", true,
       [] { return ::operator new[](opaque(kSize), kAlign, std::nothrow); }},
  };
  for (const NewForm& form : forms) {
    void* p = form.allocate();
    ASSERT_NE(p, nullptr) << form.name;
    EXPECT_NE(poolalloc_owns(p), 0) << form.name << " was not served by the pools";
    if (form.aligned) {
      ::operator delete(p, kAlign);
    } else {
      ::operator delete(p);
    }
  }
}

struct DeleteForm {
  const char* name;
  bool aligned;
  std::function<void(void*)> release;
};

TEST(OperatorForms, EveryDeleteFormReturnsToThePools) {
  const DeleteForm forms[] = {
      {"delete", false, [](void* p) { ::operator delete(p); }},
      {"delete[]", false, [](void* p) { ::operator delete[](p); }},
      {"delete nothrow", false, [](void* p) { ::operator delete(p, std::nothrow); }},
      {"delete[] nothrow", false, [](void* p) { ::operator delete[](p, std::nothrow); }},
      {"delete sized", false, [](void* p) { ::operator delete(p, kSize); }},
      {"delete[] sized", false, [](void* p) { ::operator delete[](p, kSize); }},
      {"delete aligned", true, [](void* p) { ::operator delete(p, kAlign); }},
      {"delete[] aligned", true, [](void* p) { ::operator delete[](p, kAlign); }},
      {"delete aligned nothrow", true, [](void* p) { ::operator delete(p, kAlign, std::nothrow); }},
      {"delete[] aligned nothrow", true,
       [](void* p) { ::operator delete[](p, kAlign, std::nothrow); }},
      {"delete sized aligned", true, [](void* p) { ::operator delete(p, kSize, kAlign); }},
      {"delete[] sized aligned", true, [](void* p) { ::operator delete[](p, kSize, kAlign); }},
  };
  for (const DeleteForm& form : forms) {
    void* p = form.aligned ? ::operator new(opaque(kSize), kAlign) : ::operator new(opaque(kSize));
    ASSERT_NE(poolalloc_owns(p), 0);
    uint64_t before = pooled_frees();
    form.release(p);
    EXPECT_GT(pooled_frees(), before) << form.name << " did not give the block back";
  }
}

TEST(OperatorForms, OverAlignedNewGoesToTheSystemAndDeletes) {
  for (size_t alignment : {65536u, 1u << 20}) {  // beyond the largest class (32 KiB)
    void* p = ::operator new (opaque(kSize), std::align_val_t{alignment});
    EXPECT_TRUE(is_aligned(p, alignment));
    EXPECT_EQ(poolalloc_owns(p), 0) << alignment;
    ::operator delete (p, kSize, std::align_val_t{alignment});
  }
}

}  // namespace
}  // namespace malloc_test
