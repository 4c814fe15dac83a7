# pkg-config files in LIBDIR/pkgconfig: poolalloc.pc and poolalloc-debug.pc (the drop-in malloc
# and its debug build, shared or static; on Windows the archives, from poolalloc-windows.pc.in)
# and poolalloc-toolkit.pc (the header-only toolkit).
# Their paths are those of the prefix installed into, which cmake --install --prefix and cpack
# choose only at install time: the files are written then, by pkg_config_install.cmake.in.
set(POOLALLOC_PC_MODULES poolalloc-toolkit)
if(TARGET poolalloc OR TARGET poolalloc_static)
  list(APPEND POOLALLOC_PC_MODULES poolalloc poolalloc-debug)
endif()
if(WIN32)
  set(POOLALLOC_PC_LIBRARY_TEMPLATE poolalloc-windows.pc.in)
else()
  set(POOLALLOC_PC_LIBRARY_TEMPLATE poolalloc.pc.in)
endif()
configure_file(cmake/pkg_config_install.cmake.in ${PROJECT_BINARY_DIR}/pkg_config_install.cmake
               @ONLY)
install(SCRIPT ${PROJECT_BINARY_DIR}/pkg_config_install.cmake)
