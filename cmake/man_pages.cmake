# The man pages, plain roff: poolalloc(1), the wrapper and the options the library reads, and
# poolalloc(3), the C API, the statistics and the toolkit. CMake writes the project's version
# into them; they are installed in MANDIR/man1 and man3, and a test renders each with
# man --warnings and fails on any warning (tests/docs/check_man_page.cmake).
include(GNUInstallDirs)
foreach(page poolalloc.1 poolalloc.3)
  configure_file(docs/man/${page} ${PROJECT_BINARY_DIR}/man/${page} @ONLY)
  string(REGEX REPLACE ".*\\." "" section ${page})
  # poolalloc(1) is the wrapper's page, installed with the library it preloads.
  if(TARGET poolalloc OR NOT section EQUAL 1)
    install(FILES ${PROJECT_BINARY_DIR}/man/${page} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section})
  endif()
  if(POOLALLOC_BUILD_TESTS)
    add_test(NAME man_page_${page}
      COMMAND ${CMAKE_COMMAND} -DPAGE=${PROJECT_BINARY_DIR}/man/${page}
              -P ${PROJECT_SOURCE_DIR}/tests/docs/check_man_page.cmake)
    set_tests_properties(man_page_${page} PROPERTIES LABELS docs)
  endif()
endforeach()
if(POOLALLOC_BUILD_TESTS)
  # The check itself fails on a page with an unknown macro, naming the warning.
  add_test(NAME man_page_check_fails
    COMMAND ${CMAKE_COMMAND} -DPAGE=${PROJECT_SOURCE_DIR}/tests/docs/broken.7
            -P ${PROJECT_SOURCE_DIR}/tests/docs/check_man_page.cmake)
  set_tests_properties(man_page_check_fails PROPERTIES LABELS docs
    PASS_REGULAR_EXPRESSION "warning: macro 'XY' not defined")
endif()
