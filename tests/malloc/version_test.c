/* poolalloc_version() of the library this program is linked with (release or debug, shared or
 * static) is the header's POOLALLOC_VERSION_STRING, the header's three numbers and the
 * project's version in CMake (PROJECT_VERSION). Written in C: poolalloc.h is a C header too. */
#include <stdio.h>
#include <string.h>

#include "poolalloc/poolalloc.h"

static int check(const char* what, const char* actual, const char* expected) {
  if (strcmp(actual, expected) == 0) return 0;
  fprintf(stderr, "%s: \"%s\", expected \"%s\"\n", what, actual, expected);
  return 1;
}

int main(void) {
  char from_numbers[64];
  snprintf(from_numbers, sizeof from_numbers, "%d.%d.%d", POOLALLOC_VERSION_MAJOR,
           POOLALLOC_VERSION_MINOR, POOLALLOC_VERSION_PATCH);
  int failures = 0;
  failures += check("poolalloc_version()", poolalloc_version(), POOLALLOC_VERSION_STRING);
  failures += check("POOLALLOC_VERSION_STRING", POOLALLOC_VERSION_STRING, from_numbers);
  failures += check("CMake's PROJECT_VERSION", PROJECT_VERSION, POOLALLOC_VERSION_STRING);
  return failures == 0 ? 0 : 1;
}
