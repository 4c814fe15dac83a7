// A thread-local word (a pointer or a bool) kept in a native thread-local storage slot of
// Windows: the allocator's thread-local variables in a mingw-w64 build (POOLALLOC_THREAD_WORD,
// platform.hpp).
//
// Why not thread_local: mingw-w64's g++ emulates thread-local storage. Each variable of a thread
// is a block of the C runtime's heap, found through a pthread key, and a thread's exit frees
// those blocks (the key's destructor) before the fiber-local storage callbacks and the
// destructors of the program's thread_local objects run. The allocator runs in both, and a read
// of an emulated variable then makes a fresh block, which the C runtime takes from those it has
// just freed: as often as not the storage of a thread_local object of the program whose
// destructor is still to run, which the allocator's next write corrupts. A native slot lives as
// long as its thread, costs nothing to the C runtime's heap, and is read with one load from the
// thread's environment block (its first 64 slots) where the emulation calls a function.
#pragma once

#include <atomic>
#include <cstdint>
#include <type_traits>

#include <intrin.h>

namespace poolalloc::internal {

// In os_windows.cpp. The slot that `slot` names, allocated on its first call for it (by
// whichever thread gets there first); the slots are freed at the module's exit.
std::uint32_t os_claim_thread_slot(std::atomic<std::uint32_t>& slot);
// The calling thread's value of a slot at or above 64, which lives outside the environment block.
std::uintptr_t os_read_thread_slot(std::uint32_t slot);
// Sets the calling thread's value of a slot; the thread's last error is kept.
void os_write_thread_slot(std::uint32_t slot, std::uintptr_t value);

inline constexpr std::uint32_t kNoThreadSlot = 0xffffffff;  // TLS_OUT_OF_INDEXES
// Where the environment block of an x86-64 thread holds its first 64 slots (TEB::TlsSlots,
// winternl.h; os_windows.cpp checks it).
inline constexpr std::uint32_t kTebTlsSlots = 0x1480;

// Reads as `initial` in every thread until that thread sets another value. A word whose bits are
// zero stands for the initial value: a pointer set to null reads as `initial` (the allocator's
// pointers are never null), a bool set to false as false (its initial value).
template <class T>
class NativeThreadWord {
  static_assert(std::is_pointer_v<T> || std::is_same_v<T, bool>);

 public:
  constexpr explicit NativeThreadWord(T initial) : initial_(initial) {}
  NativeThreadWord(const NativeThreadWord&) = delete;
  NativeThreadWord& operator=(const NativeThreadWord&) = delete;

  operator T() const {  // NOLINT(google-explicit-constructor): reads as the variable it replaces
    const std::uintptr_t bits = read();
    if (bits == 0) return initial_;
    if constexpr (std::is_same_v<T, bool>) {
      return true;
    } else {
      return reinterpret_cast<T>(bits);
    }
  }
  T operator->() const requires std::is_pointer_v<T> { return *this; }
  std::remove_pointer_t<T>& operator*() const requires std::is_pointer_v<T> {
    return *static_cast<T>(*this);
  }
  NativeThreadWord& operator=(T value) {
    std::uint32_t slot = slot_.load(std::memory_order_acquire);
    if (slot == kNoThreadSlot) slot = os_claim_thread_slot(slot_);
    // Without a slot (every one taken), the word keeps reading as its initial value.
    if (slot != kNoThreadSlot) os_write_thread_slot(slot, bits_of(value));
    return *this;
  }

 private:
  static std::uintptr_t bits_of(T value) {
    if constexpr (std::is_same_v<T, bool>) {
      return value ? 1 : 0;
    } else {
      return reinterpret_cast<std::uintptr_t>(value);
    }
  }
  // A slot not yet claimed reads as zero, as a claimed one does in every thread until it is
  // set there (TlsAlloc clears it in every thread).
  std::uintptr_t read() const {
    const std::uint32_t slot = slot_.load(std::memory_order_relaxed);
    if (slot < 64) [[likely]]
      return __readgsqword(kTebTlsSlots + slot * sizeof(void*));
    return slot == kNoThreadSlot ? 0 : os_read_thread_slot(slot);
  }

  std::atomic<std::uint32_t> slot_{kNoThreadSlot};
  T initial_;
};

}  // namespace poolalloc::internal
