// A plugin that a game reloads hot (hot_reload.cpp): built twice, with PLUGIN_FREE naming its one
// static function texture_free or sound_free, which frees a block twice through the game's
// poolalloc_free; both builds are linked without a time stamp, so that their headers are alike.
#include <cstddef>

extern "C" {

// Neither inlined nor left by a tail call (a tail call's site is its caller's).
[[gnu::noinline]] static void PLUGIN_FREE(void (*release)(void*), void* block) {
  release(block);
  release(block);
  asm volatile("" ::: "memory");
}

__declspec(dllexport) void run(void* (*allocate)(std::size_t), void (*release)(void*)) {
  PLUGIN_FREE(release, allocate(24));
  asm volatile("" ::: "memory");
}
}
