/* panic: prints a panic message the way a Rust guest does and terminates with exit code 1. */
#include "zkvm.h"

int main(void) {
  print("about to fail\n");
  panic("something went wrong: this guest always panics");
}
