// The debug switch that every allocator of the toolkit takes: DebugChecks::on for one allocator,
// or POOLALLOC_DEBUG defined to make it the default of all.
#pragma once

namespace poolalloc {

enum class DebugChecks : bool { off, on };

#if defined(POOLALLOC_DEBUG)
inline constexpr DebugChecks kDefaultDebugChecks = DebugChecks::on;
#else
inline constexpr DebugChecks kDefaultDebugChecks = DebugChecks::off;
#endif

}  // namespace poolalloc
