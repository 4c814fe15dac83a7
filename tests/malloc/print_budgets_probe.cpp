// Run by memory_tag_budgets_test with libpoolalloc preloaded, linked with nothing of it: finds the
// tag functions as the toolkit does (dlsym), registers "Physics" with a budget of 1 MiB, charges
// it 2 MiB and prints the toolkit's budget table on stderr, a Tracked arena's row among it.
#include <dlfcn.h>
#include <stdlib.h>

#include <cstdint>
#include <iostream>

#include "poolalloc/fixed_pool.hpp"
#include "poolalloc/tracking.hpp"

int main() {
  const auto register_tag =
      reinterpret_cast<int (*)(const char*)>(dlsym(RTLD_DEFAULT, "poolalloc_tag_register"));
  const auto push = reinterpret_cast<int (*)(int)>(dlsym(RTLD_DEFAULT, "poolalloc_tag_push"));
  const auto pop = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "poolalloc_tag_pop"));
  const auto set_budget =
      reinterpret_cast<int (*)(int, std::uint64_t, poolalloc_tag_over_budget, void*)>(
          dlsym(RTLD_DEFAULT, "poolalloc_tag_set_budget"));
  if (register_tag == nullptr || push == nullptr || pop == nullptr || set_budget == nullptr)
    return 2;
  const int physics = register_tag("Physics");
  set_budget(physics, 1 << 20, nullptr, nullptr);
  push(physics);
  void* block = malloc(2 << 20);
  asm volatile("" : : "g"(block) : "memory");
  pop();
  poolalloc::FixedPool pool(64, 16);
  poolalloc::Tracked tracked(pool, 1024);
  tracked.set_name("bullets");
  void* bullet = tracked.allocate();
  poolalloc::print_budgets(std::cerr);
  tracked.deallocate(bullet);
  free(block);
}
