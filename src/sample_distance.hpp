// What the thread caches ask of the heap profile's sampler (heap_sampler.hpp, above them): the
// distance in bytes to a thread's next sample, drawn from an exponential distribution with the
// mean the options or the program set, and the settings it was drawn under. As decay_requests.hpp
// for decay, this file lets the lower layer call up without including the upper one.
#pragma once

#include <atomic>
#include <cstdint>

#include "os.hpp"
#include "sampling_math.hpp"

namespace poolalloc::internal {

// A distance no program allocates: the countdown of a thread that does not sample.
inline constexpr std::int64_t kNoSampleBytes = INT64_MAX / 2;

// The mean distance between samples in bytes; 0 while sampling is off (the default).
inline constinit std::atomic<std::int64_t> g_sample_mean{0};
// Moves on with every change of the mean, so that threads draw their distances again.
inline constinit std::atomic<std::uint32_t> g_sample_settings{1};

// A uniform draw from (0, 1] (xorshift64* on `state`), then the exponential distance
// -ln(u) * mean in whole bytes, rounded down (a geometric distance: an allocation of s bytes,
// sampled when it counts the distance below 0, is so with the chance 1 - e^(-s/mean) exactly,
// at any mean); kNoSampleBytes while sampling is off.
inline std::int64_t draw_sample_distance(std::uint64_t& state) {
  const std::int64_t mean = g_sample_mean.load(std::memory_order_relaxed);
  if (mean == 0) return kNoSampleBytes;
  if (state == 0) state = os_random_bits() | 1;
  state ^= state >> 12;
  state ^= state << 25;
  state ^= state >> 27;
  const std::uint64_t bits = (state * 0x2545F4914F6CDD1DULL) >> 11;
  const double uniform = static_cast<double>(bits + 1) * 0x1.0p-53;
  const double distance = -natural_log(uniform) * static_cast<double>(mean);
  return static_cast<std::int64_t>(distance);
}

}  // namespace poolalloc::internal
