# Run by cpack -G DEB after it has installed the files into its staging folder
# (CPACK_PRE_BUILD_SCRIPTS): the package follows Debian's conventions where cmake --install
# follows the project's. The licence becomes usr/share/doc/poolalloc/copyright, and the man
# pages are compressed (gzip -9n: no name or time stamp, so that the bytes are reproducible).
file(GLOB_RECURSE docs "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/*/share/doc/poolalloc/LICENSE")
foreach(licence IN LISTS docs)
  get_filename_component(dir "${licence}" DIRECTORY)
  file(RENAME "${licence}" "${dir}/copyright")
endforeach()

file(GLOB_RECURSE pages "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/*/share/man/man[1-9]/*.[1-9]")
foreach(page IN LISTS pages)
  execute_process(COMMAND gzip -9n "${page}" RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "gzip -9n ${page} failed: ${status}")
  endif()
endforeach()
