// What the core's tag tests share: a registered tag by name, and a body run on a thread of its
// own (a fresh thread cache, whose exit gives it back).
#pragma once

#include <gtest/gtest.h>

#include <thread>

#include "tag_registry.hpp"

namespace core_test {

template <class Body>
void on_a_new_thread(Body body) {
  std::thread(body).join();
}

inline int tag_named(const char* name) {
  const int tag = poolalloc::internal::register_tag(name);
  EXPECT_GT(tag, 0) << name;
  return tag;
}

}  // namespace core_test
