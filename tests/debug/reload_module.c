/* A module that the debug helper loads and unloads in a loop: nothing in it keeps it loaded, so
 * each dlopen maps it afresh and allocates while the loader holds its lock. */
__attribute__((visibility("default"))) int reload_module_answer(void) {
  return 42;
}
