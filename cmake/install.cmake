# cmake --install, then find_package(poolalloc) and target_link_libraries(app poolalloc::toolkit).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# poolalloc.h declares the drop-in malloc's C API: a toolkit-only build leaves it out. A Windows
# build has the archives alone (src/CMakeLists.txt).
if(TARGET poolalloc OR TARGET poolalloc_static)
  install(DIRECTORY include/poolalloc DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
else()
  install(DIRECTORY include/poolalloc DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
          PATTERN poolalloc.h EXCLUDE)
endif()
install(TARGETS poolalloc_toolkit EXPORT poolallocTargets)
install(EXPORT poolallocTargets NAMESPACE poolalloc::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/poolalloc)
configure_package_config_file(cmake/poolallocConfig.cmake.in
  ${PROJECT_BINARY_DIR}/poolallocConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/poolalloc)
# Before 1.0 each minor release may break what the last one offered.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(compatibility SameMinorVersion)
else()
  set(compatibility SameMajorVersion)
endif()
write_basic_package_version_file(${PROJECT_BINARY_DIR}/poolallocConfigVersion.cmake
  COMPATIBILITY ${compatibility})
install(FILES ${PROJECT_BINARY_DIR}/poolallocConfig.cmake
              ${PROJECT_BINARY_DIR}/poolallocConfigVersion.cmake
              cmake/poolalloc_link_feature.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/poolalloc)

# The wrapper, bin/poolalloc, finds the library in ../lib[64][/<multiarch>] from where it is.
if(TARGET poolalloc)
  install(PROGRAMS scripts/poolalloc DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(FILES LICENSE README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
