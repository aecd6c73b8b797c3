/* Prints the header's version macros next to the run-time values; `cargo
 * xtask abi-check` compares them with each other and with Cargo's version. */
#include <stdio.h>

#include "tenure.h"

int main(void) {
  uint32_t v = tenure_abi_version();
  printf("abi %d.%d runtime-abi %u.%u version %d.%d.%d runtime-version %s\n",
         TENURE_ABI_MAJOR, TENURE_ABI_MINOR, (unsigned)(v >> 16),
         (unsigned)(v & 0xFFFF), TENURE_VERSION_MAJOR, TENURE_VERSION_MINOR,
         TENURE_VERSION_PATCH, tenure_version());
  return (uint32_t)TENURE_ABI_VERSION == v ? 0 : 1;
}
