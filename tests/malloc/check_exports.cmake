# Checks the dynamic symbol table of libpoolalloc.so or libpoolalloc-debug.so (interposer checklist §1 and §8):
#  - every required symbol is defined, GLOBAL, with DEFAULT visibility;
#  - no __libc_* name is defined (we forward to glibc's through them);
#  - nothing else is exported: the internals are hidden;
#  - the hot entry points (malloc, free, the plain operator new and delete) start a cache line
#    (POOLALLOC_LINE_ALIGNED, platform.hpp);
#  - the library depends on the C library alone: no C++ runtime, which a C program would load
#    for nothing (exports_new_delete.cpp hands a failed operator new to the program's).
# Usage: cmake -DLIBRARY=<path to the library> [-DREADELF=<readelf>] -P check_exports.cmake
cmake_minimum_required(VERSION 3.25)
if(NOT LIBRARY)
  message(FATAL_ERROR "pass -DLIBRARY=<path to libpoolalloc.so>")
endif()
if(NOT READELF)
  find_program(READELF readelf REQUIRED)
endif()

set(required_c
  malloc free calloc realloc reallocarray posix_memalign aligned_alloc memalign valloc pvalloc
  malloc_usable_size malloc_trim malloc_stats mallinfo2 mallinfo malloc_info
  poolalloc_malloc poolalloc_calloc poolalloc_free poolalloc_realloc poolalloc_aligned_alloc poolalloc_usable_size
  poolalloc_owns poolalloc_print_stats poolalloc_get_stats poolalloc_version
  poolalloc_profile_sample poolalloc_profile_dump
  poolalloc_tag_register poolalloc_tag_push poolalloc_tag_pop poolalloc_tag_current
  poolalloc_get_tag_stats poolalloc_tag_set_budget)
set(required_cxx
  _Znwm _Znam _ZnwmRKSt9nothrow_t _ZnamRKSt9nothrow_t
  _ZnwmSt11align_val_t _ZnamSt11align_val_t
  _ZnwmSt11align_val_tRKSt9nothrow_t _ZnamSt11align_val_tRKSt9nothrow_t
  _ZdlPv _ZdaPv _ZdlPvRKSt9nothrow_t _ZdaPvRKSt9nothrow_t _ZdlPvm _ZdaPvm
  _ZdlPvSt11align_val_t _ZdaPvSt11align_val_t
  _ZdlPvSt11align_val_tRKSt9nothrow_t _ZdaPvSt11align_val_tRKSt9nothrow_t
  _ZdlPvmSt11align_val_t _ZdaPvmSt11align_val_t)
set(line_aligned malloc free _Znwm _Znam _ZdlPv _ZdaPv _ZdlPvm _ZdaPvm)
# Optional extras the checklist allows (§1.1: MAY/SHOULD), and what the toolchain adds.
set(optional cfree free_sized free_aligned_sized mallopt _init _fini)
set(allowed_needed libc.so.6 ld-linux-x86-64.so.2)

execute_process(COMMAND ${READELF} --dyn-syms -W ${LIBRARY}
  OUTPUT_VARIABLE symtab RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${READELF} --dyn-syms failed on ${LIBRARY}")
endif()

# Lines look like: "  7: 0000000000001139  11 FUNC  GLOBAL DEFAULT  14 malloc@@VERSION"
string(REPLACE "\n" ";" lines "${symtab}")
set(defined "")
set(errors "")
foreach(line IN LISTS lines)
  if(NOT line MATCHES "^ *[0-9]+: +([0-9a-f]+) +[0-9a-fx]+ +([A-Z_]+) +([A-Z_]+) +([A-Z_]+) +([A-Z0-9_]+) +([^ ]+)")
    continue()
  endif()
  set(value ${CMAKE_MATCH_1})
  set(type ${CMAKE_MATCH_2})
  set(bind ${CMAKE_MATCH_3})
  set(vis ${CMAKE_MATCH_4})
  set(ndx ${CMAKE_MATCH_5})
  string(REGEX REPLACE "@.*" "" name "${CMAKE_MATCH_6}")
  # Skip imports, the local null entry and version-definition symbols.
  if(ndx STREQUAL "UND" OR ndx STREQUAL "ABS" OR bind STREQUAL "LOCAL" OR type STREQUAL "SECTION")
    continue()
  endif()
  list(APPEND defined ${name})
  if(name IN_LIST line_aligned)
    math(EXPR offset "0x${value} % 64")
    if(NOT offset EQUAL 0)
      string(APPEND errors "  ${name} starts ${offset} bytes into a cache line, not at its start\n")
    endif()
  endif()
  set(bind_of_${name} ${bind})
  set(vis_of_${name} ${vis})
  if(name MATCHES "^__libc_")
    string(APPEND errors "  defines ${name}: glibc's __libc_* names must stay glibc's\n")
  elseif(NOT name IN_LIST required_c AND NOT name IN_LIST required_cxx
         AND NOT name IN_LIST optional)
    string(APPEND errors "  exports ${name} (${type} ${bind} ${vis}): not part of the API\n")
  endif()
endforeach()

foreach(name IN LISTS required_c required_cxx)
  if(NOT name IN_LIST defined)
    string(APPEND errors "  does not define ${name}\n")
  elseif(NOT bind_of_${name} STREQUAL "GLOBAL" OR NOT vis_of_${name} STREQUAL "DEFAULT")
    string(APPEND errors "  ${name} is ${bind_of_${name}} ${vis_of_${name}}, not GLOBAL DEFAULT\n")
  endif()
endforeach()

execute_process(COMMAND ${READELF} -d -W ${LIBRARY} OUTPUT_VARIABLE dynamic)
string(REGEX MATCHALL "Shared library: \\[[^]]+\\]" needed_entries "${dynamic}")
foreach(entry IN LISTS needed_entries)
  string(REGEX REPLACE "Shared library: \\[([^]]+)\\]" "\\1" needed "${entry}")
  if(NOT needed IN_LIST allowed_needed)
    string(APPEND errors "  depends on ${needed}\n")
  endif()
endforeach()

list(LENGTH defined count)
if(errors)
  message(FATAL_ERROR "${LIBRARY}:\n${errors}")
endif()
message(STATUS "${LIBRARY}: ${count} exported symbols, all required ones GLOBAL DEFAULT")
