# cmake -DPAGE=FILE -P check_man_page.cmake: renders the man page FILE as a reader's terminal
# would (80 columns, UTF-8) with every groff warning on (w: all of them; groff's "all" leaves out
# unknown macros), and fails on any warning or error.
if(NOT PAGE)
  message(FATAL_ERROR "usage: cmake -DPAGE=FILE -P check_man_page.cmake")
endif()
find_program(MAN man)
if(NOT MAN)
  message(FATAL_ERROR "man is not installed (scripts/install-deps.sh installs man-db)")
endif()
set(ENV{MANWIDTH} 80)
execute_process(COMMAND ${MAN} --warnings=w -l -E UTF-8 ${PAGE}
  RESULT_VARIABLE status OUTPUT_VARIABLE page_text ERROR_VARIABLE warnings)
if(NOT status EQUAL 0 OR NOT warnings STREQUAL "")
  message(FATAL_ERROR "man --warnings=w ${PAGE} (status ${status}):\n${warnings}")
endif()
if(page_text STREQUAL "")
  message(FATAL_ERROR "man ${PAGE} rendered nothing")
endif()
message(STATUS "${PAGE}: no warnings")
