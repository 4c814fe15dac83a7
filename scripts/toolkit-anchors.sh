#!/usr/bin/env bash
# Builds toolkit_anchors (Release; needs scripts/install-deps.sh --bench) and prints its medians
# as a markdown table: workload | contender | ns per item | ratio (contender / the toolkit's).
# Benchmarks run interleaved in random order, REPETITIONS times (default 9); figures are medians
# of CPU time per item: a spawn+despawn pair (churn), a live object (iterate), an allocation
# (frame, its reset included), an insert, lookup or erase (pmr map). BENCHMARK_ARGS adds arguments (a --benchmark_filter, say).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="$root/build-bench"  # CMakePresets.json: preset toolkit-bench
repetitions=${REPETITIONS:-9}

(cd "$root" && cmake --preset toolkit-bench >/dev/null &&
  cmake --build "$build" --target toolkit_anchors >/dev/null)

json="$build/toolkit_anchors.json"
# shellcheck disable=SC2086 # BENCHMARK_ARGS is a list of arguments
"$build/bench/toolkit_anchors" --benchmark_repetitions="$repetitions" \
  --benchmark_report_aggregates_only=true --benchmark_enable_random_interleaving=true \
  --benchmark_min_time=0.1 --benchmark_format=json --benchmark_out="$json" \
  --benchmark_out_format=json ${BENCHMARK_ARGS:-} >/dev/null

python3 - "$json" "$repetitions" <<'PY'
import json, sys

data = json.load(open(sys.argv[1]))
ns = {b["run_name"]: 1e9 / b["items_per_second"]
      for b in data["benchmarks"] if b.get("aggregate_name") == "median"}

# (workload, the toolkit's benchmark, [(contender, benchmark)]): ratios are to the first.
groups = [
    ("churn: 10,000 x 64 B spawned, despawned in random order", [
        ("poolalloc Pool<T> spawn/despawn", "churn_pool"),
        ("poolalloc FixedPool allocate/deallocate", "churn_fixed_pool"),
        ("plf::colony emplace/erase", "churn_colony"),
        ("foonathan memory_pool allocate_node/deallocate_node", "churn_foonathan_memory_pool"),
        ("boost::pool malloc/free", "churn_boost_pool"),
        ("boost::object_pool construct/destroy", "churn_boost_object_pool"),
        ("new/delete", "churn_new_delete"),
        ("the loop alone: built in an array, nothing freed", "churn_loop_alone")]),
    ("churn, the free lists in the blocks", [
        ("poolalloc FixedPool allocate/deallocate", "churn_fixed_pool"),
        ("foonathan memory_pool allocate_node/deallocate_node", "churn_foonathan_memory_pool"),
        ("boost::pool malloc/free", "churn_boost_pool")]),
    ("iterate: 5,000 live of 10,000, touching each", [
        ("poolalloc Pool<T>::for_each", "iterate_pool_for_each"),
        ("poolalloc Pool<T> range-for", "iterate_pool_range_for"),
        ("plf::colony range-for", "iterate_colony"),
        ("std::vector<T*> of the same objects", "iterate_vector_of_pointers")]),
    ("iterate with handles: 5,000 live of 10,000, touching each, reading its handle", [
        ("poolalloc Pool<T>::each", "iterate_handles_pool_each"),
        ("poolalloc Pool<T> range-for calling handle_of", "iterate_handles_pool_handle_of"),
        ("plf::colony range-for (the iterator is the handle)", "iterate_handles_colony")]),
    ("resolve: 1 M random handles of 100,000 live objects (get)", [
        ("poolalloc Pool<T>::get", "resolve_pool_get"),
        ("classic slot map", "resolve_slot_map_get"),
        ("packed slot map (values reached through the entry)", "resolve_packed_slot_map_get")]),
    ("resolve and read a field of the object", [
        ("poolalloc Pool<T>::get", "resolve_pool_get_read"),
        ("classic slot map", "resolve_slot_map_get_read"),
        ("packed slot map (values reached through the entry)",
         "resolve_packed_slot_map_get_read")]),
    ("grown from 64 slots to 100,000 objects vs created at full size: iterate 50,000", [
        ("poolalloc Pool<T> created at full size", "grown_iterate_full_size"),
        ("poolalloc Pool<T> grown", "grown_iterate_grown"),
        ("poolalloc Pool<T> grown from operator new", "grown_iterate_grown_from_new")]),
    ("... resolve 50,000 handles (get and read)", [
        ("poolalloc Pool<T> created at full size", "grown_resolve_full_size"),
        ("poolalloc Pool<T> grown", "grown_resolve_grown"),
        ("poolalloc Pool<T> grown from operator new", "grown_resolve_grown_from_new")]),
    ("... spawn a burst of 100,000, then clear()", [
        ("poolalloc Pool<T> created at full size", "grown_spawn_burst_full_size"),
        ("poolalloc Pool<T> grown", "grown_spawn_burst_grown"),
        ("poolalloc Pool<T> grown from operator new", "grown_spawn_burst_grown_from_new")]),
    ("frame: 1,000 allocations of 8-256 B, then reset", [
        ("poolalloc FrameAllocator", "frame_frame_allocator"),
        ("poolalloc StackAllocator (to a marker)", "frame_stack_allocator"),
        ("foonathan memory_stack (unwind)", "frame_foonathan_memory_stack"),
        ("std::pmr::monotonic_buffer_resource over a buffer (release)",
         "frame_pmr_monotonic_buffer")]),
    ("pmr map: 10,000 keys inserted, looked up, erased", [
        ("poolalloc PoolResource", "pmr_map_pool_resource"),
        ("foonathan memory_pool behind a memory_resource", "pmr_map_foonathan_memory_pool")]),
    ("pmr unordered_map: 10,000 keys inserted, looked up, erased", [
        ("poolalloc PoolResource", "pmr_unordered_map_pool_resource"),
        ("foonathan memory_pool behind a memory_resource",
         "pmr_unordered_map_foonathan_memory_pool")]),
]

context = data["context"]
print(f"Machine: {context.get('host_name', '?')}, {context['num_cpus']} CPUs; "
      f"medians of {sys.argv[2]} interleaved repetitions, CPU time")
print()
print("| workload | contender | ns per item | ratio to the first |")
print("|---|---|---:|---:|")
for workload, contenders in groups:
    present = [(label, name) for label, name in contenders if name in ns]
    if not present:
        continue
    ours = ns[present[0][1]]
    for label, name in present:
        print(f"| {workload} | {label} | {ns[name]:.2f} | {ns[name] / ours:.2f}x |")
        workload = ""
PY
