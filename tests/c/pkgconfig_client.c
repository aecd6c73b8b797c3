/* Built by `cargo xtask test` with nothing but
 * `pkg-config --cflags --libs tenure` against a `cargo xtask dist` prefix.
 * Usage: pkgconfig_client STORE_PATH */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <tenure.h>

int main(int argc, char **argv) {
  int passed = 0, failed = 0;
#define CHECK(c) ((c) ? passed++ : (failed++, fprintf(stderr, "%d: %s\n", __LINE__, #c)))
  if (argc != 2)
    return 2;
  unlink(argv[1]);
  tenure_authority *a = NULL;
  CHECK(tenure_authority_open(argv[1], NULL, &a) == TENURE_OK);
  bool created = false;
  CHECK(tenure_authority_create_production(a, "dist", &created) == TENURE_OK);
  tenure_job_spec spec;
  CHECK(tenure_job_spec_init(&spec) == TENURE_OK);
  spec.job = "hello";
  tenure_submitted sub = 0;
  CHECK(tenure_authority_submit(a, "dist", &spec, &sub) == TENURE_OK);
  tenure_lease *l = NULL;
  CHECK(tenure_authority_claim(a, "dist", "hello", "pkg-config", 30000000, &l) ==
        TENURE_OK);
  CHECK(tenure_lease_complete(l, NULL, 0) == TENURE_OK);
  CHECK(tenure_abi_version() >> 16 == TENURE_ABI_MAJOR);
  tenure_lease_free(l);
  tenure_authority_free(a);
  printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
