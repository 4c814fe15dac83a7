/* A C program that names no function of poolalloc's but malloc's users do: strdup allocates
 * inside libc. Linked with `pkg-config --libs poolalloc` under -Wl,--as-needed, it must still
 * load the library and get its malloc. poolalloc_owns is referenced weakly, so that naming it
 * does not make the library needed by itself: it is null when the library was left out.
 * Exits 0 when all holds. */
#define _POSIX_C_SOURCE 200809L /* strdup */

#include <stdio.h>
#include <string.h>

#include "poolalloc/poolalloc.h"

#pragma weak poolalloc_owns

int main(void) {
  if (poolalloc_owns == NULL) {
    fprintf(stderr, "strdup_only: poolalloc is not loaded: libc keeps its malloc\n");
    return 1;
  }
  /* Left unfreed: freeing it would name free. */
  const char* copy = strdup("a string that libc's strdup copies with malloc");
  if (copy == NULL || poolalloc_owns(copy) == 0) {
    fprintf(stderr, "strdup_only: libc's strdup did not reach poolalloc's malloc\n");
    return 1;
  }
  return 0;
}
