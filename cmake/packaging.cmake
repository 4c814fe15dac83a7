# cpack -G DEB (in the build folder, or cpack --preset deb) builds
# poolalloc_<version>_amd64.deb from everything cmake --install puts in the prefix, under /usr.
set(CPACK_PACKAGE_NAME poolalloc)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "poolalloc contributors")
set(CPACK_PACKAGE_CONTACT "poolalloc contributors")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "malloc of fixed-size pools, and a game-allocator toolkit")
set(CPACK_PACKAGE_DESCRIPTION
  "poolalloc serves small requests in O(1) from size-class pools and hands the\n"
  "rest to the system allocator. The package holds libpoolalloc.so.${PROJECT_VERSION_MAJOR} (run any\n"
  "program on it with the poolalloc command, which preloads it), libpoolalloc.a\n"
  "to link into a program, the debug builds of both, the header-only C++20\n"
  "toolkit (pools, frame, stack and pmr allocators), CMake and pkg-config\n"
  "files, and man pages. Licence: MIT.")
string(JOIN "" CPACK_PACKAGE_DESCRIPTION ${CPACK_PACKAGE_DESCRIPTION})
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # poolalloc_<version>_<architecture>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # Depends: from dpkg-shlibdeps (libc6)
# The heap profile loads libunwind when it is turned on, for whole call stacks (one frame without).
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS libunwind8)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)  # a shlibs file: libpoolalloc 0 poolalloc (>= version)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
# dpkg runs ldconfig once after all packages of a run, by its trigger.
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${PROJECT_SOURCE_DIR}/cmake/debian/triggers)
set(CPACK_STRIP_FILES ON)  # the libraries keep their exported symbols, lose their debug info
set(CPACK_PRE_BUILD_SCRIPTS ${PROJECT_SOURCE_DIR}/cmake/debian_conventions.cmake)
include(CPack)
