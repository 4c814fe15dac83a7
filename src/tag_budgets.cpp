#include "tag_budgets.hpp"

#include <atomic>
#include <cerrno>

#include "bins.hpp"
#include "lock.hpp"
#include "platform.hpp"
#include "tag_registry.hpp"

namespace poolalloc::internal {
namespace {

struct alignas(64) Budget {
  std::atomic<std::uint64_t> bytes{POOLALLOC_TAG_NO_BUDGET};
  std::atomic<std::uint64_t> crossings{0};
  std::atomic<std::uint32_t> calls_due{0};
  // Under g_budget_lock: set together, read together.
  poolalloc_tag_over_budget over = nullptr;
  void* context = nullptr;
};
Budget g_budgets[kTagCount];

// Last in the lock order (lock.hpp): nothing is taken or called under it.
Lock g_budget_lock;

// Set with each crossing noted; taken back by the thread that runs the calls.
constinit std::atomic<bool> g_calls_due{false};

// The thread runs a callback: the calls that come due meanwhile wait for a later slow path.
constinit POOLALLOC_THREAD_WORD(bool) t_in_callback{false};

void note_crossing(unsigned tag) {
  Budget& budget = g_budgets[tag];
  budget.crossings.fetch_add(1, std::memory_order_relaxed);
  budget.calls_due.fetch_add(1, std::memory_order_relaxed);
  g_calls_due.store(true, std::memory_order_release);
}

// Makes one due call of `tag`; false when its callback could not be read (the lock is held
// for fork): the call stays due.
bool call_once(unsigned tag) {
  Budget& budget = g_budgets[tag];
  if (!g_budget_lock.lock_unless_forking()) return false;
  const poolalloc_tag_over_budget over = budget.over;
  void* const context = budget.context;
  const std::uint64_t bytes = budget.bytes.load(std::memory_order_relaxed);
  g_budget_lock.unlock();
  if (over != nullptr) over(static_cast<int>(tag), tag_out_bytes(tag), bytes, context);
  return true;
}

}  // namespace

void note_tag_charge(unsigned tag, std::uint64_t before, std::uint64_t after) {
  const std::uint64_t budget = g_budgets[tag].bytes.load(std::memory_order_relaxed);
  if (before <= budget && after > budget) [[unlikely]]
    note_crossing(tag);
}

bool set_tag_budget(int id, std::uint64_t bytes, poolalloc_tag_over_budget over, void* context) {
  if (!is_registered_tag(id)) {
    errno = EINVAL;
    return false;
  }
  const auto tag = static_cast<unsigned>(id);
  Budget& budget = g_budgets[tag];
  if (!g_budget_lock.lock_unless_forking()) {
    errno = EAGAIN;
    return false;
  }
  budget.over = over;
  budget.context = context;
  const std::uint64_t before = budget.bytes.exchange(bytes, std::memory_order_relaxed);
  g_budget_lock.unlock();
  // Over the new budget, and within the one before (or none): a crossing. A tag over its budget
  // already, whose budget is set again, has not come back under: no call.
  const std::uint64_t out = tag_out_bytes(tag);
  if (out > bytes && out <= before) note_crossing(tag);
  run_due_budget_calls();
  return true;
}

TagBudget tag_budget(unsigned tag) {
  const Budget& budget = g_budgets[tag];
  return {budget.bytes.load(std::memory_order_relaxed),
          budget.crossings.load(std::memory_order_relaxed)};
}

void run_due_budget_calls() {
  if (!g_calls_due.load(std::memory_order_relaxed)) [[likely]]
    return;
  if (t_in_callback || !g_calls_due.exchange(false, std::memory_order_acquire)) return;
  const int saved_errno = errno;
  t_in_callback = true;
  for (unsigned tag = 0, tags = registered_tags(); tag < tags; ++tag) {
    std::atomic<std::uint32_t>& due = g_budgets[tag].calls_due;
    for (std::uint32_t calls = due.exchange(0, std::memory_order_relaxed); calls != 0; --calls) {
      if (!call_once(tag)) {  // fork runs: the calls left wait for a slow path after it
        due.fetch_add(calls, std::memory_order_relaxed);
        g_calls_due.store(true, std::memory_order_release);
        break;
      }
    }
  }
  t_in_callback = false;
  errno = saved_errno;
}

void lock_tag_budgets_for_fork() {
  g_budget_lock.lock_for_fork();
}

void unlock_tag_budgets_after_fork(bool in_child) {
  g_budget_lock.unlock_after_fork(in_child);
}

}  // namespace poolalloc::internal
