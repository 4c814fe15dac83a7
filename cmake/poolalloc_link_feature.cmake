# The link feature POOLALLOC_WHOLE_PROCESS, which poolalloc::poolalloc and
# poolalloc::poolalloc_debug put around their shared library: under -Wl,--as-needed a linker
# keeps a shared library only if the program itself names one of its symbols, and a program
# that leaves every allocation to libc (strdup, fopen) or to other libraries names none, so
# glibc would keep malloc. Included by this project and by the installed poolallocConfig.cmake;
# cached, so that every directory of the consumer's project sees it, whichever added poolalloc.
set(CMAKE_LINK_LIBRARY_USING_POOLALLOC_WHOLE_PROCESS
  "LINKER:--push-state,--no-as-needed" "<LIBRARY>" "LINKER:--pop-state" CACHE INTERNAL "")
set(CMAKE_LINK_LIBRARY_USING_POOLALLOC_WHOLE_PROCESS_SUPPORTED TRUE CACHE INTERNAL "")
