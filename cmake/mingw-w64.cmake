# Cross-compiles for 64-bit Windows with Debian's mingw-w64 (posix threads, for std::thread): the
# toolkit, libpoolalloc.a and libpoolalloc-debug.a (docs/windows.md) and their tests, which
# CMakePresets.json's mingw preset runs under wine.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(CMAKE_C_COMPILER x86_64-w64-mingw32-gcc-posix)
set(CMAKE_CXX_COMPILER x86_64-w64-mingw32-g++-posix)
set(CMAKE_FIND_ROOT_PATH /usr/x86_64-w64-mingw32)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# The C++ runtime and winpthreads linked in: a test runs without DLLs copied beside it.
set(CMAKE_EXE_LINKER_FLAGS_INIT -static)
