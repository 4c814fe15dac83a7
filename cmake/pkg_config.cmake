# pkg-config files in LIBDIR/pkgconfig: poolalloc.pc and poolalloc-debug.pc (the drop-in malloc
# and its debug build, shared or static) and poolalloc-toolkit.pc (the header-only toolkit).
# Their paths are those of the prefix installed into, which cmake --install --prefix and cpack
# choose only at install time: the files are written then, by pkg_config_install.cmake.in.
set(POOLALLOC_PC_MODULES poolalloc-toolkit)
if(TARGET poolalloc)
  list(APPEND POOLALLOC_PC_MODULES poolalloc poolalloc-debug)
endif()
configure_file(cmake/pkg_config_install.cmake.in ${PROJECT_BINARY_DIR}/pkg_config_install.cmake
               @ONLY)
install(SCRIPT ${PROJECT_BINARY_DIR}/pkg_config_install.cmake)
