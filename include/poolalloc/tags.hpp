// Memory tags in C++: poolalloc::TagScope pushes a tag for the length of a scope. The tags are
// the drop-in malloc's (poolalloc.h: poolalloc_tag_register, poolalloc_get_tag_stats); a
// program that uses them links libpoolalloc (or its debug build), or runs with it preloaded and
// linked.
#pragma once

#include "poolalloc/poolalloc.h"

namespace poolalloc {

// Makes `id` the calling thread's current tag from construction to destruction. A push that
// fails (an id not registered, or 64 tags pushed already) leaves the thread's tag as it was,
// and the scope pops nothing: pushed() says which.
class TagScope {
 public:
  explicit TagScope(int id) noexcept : pushed_(poolalloc_tag_push(id) == 0) {}
  ~TagScope() {
    if (pushed_) poolalloc_tag_pop();
  }
  TagScope(const TagScope&) = delete;
  TagScope& operator=(const TagScope&) = delete;

  [[nodiscard]] bool pushed() const noexcept { return pushed_; }

 private:
  bool pushed_;
};

}  // namespace poolalloc
