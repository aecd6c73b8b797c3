/* The tenure lifecycle through the C ABI, for `cargo xtask bench`.
 *   c_bench DIR full|normal CYCLES  ->  one JSON line on stdout */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tenure.h"

#define CHECK(call)                                                       \
  do {                                                                    \
    tenure_status s_ = (call);                                            \
    if (s_ != TENURE_OK) {                                                \
      fprintf(stderr, "%s failed: %s\n", #call, tenure_status_name(s_));  \
      exit(1);                                                            \
    }                                                                     \
  } while (0)

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: c_bench DIR full|normal CYCLES\n");
    return 2;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/c.db", argv[1]);
  int normal = strcmp(argv[2], "normal") == 0;
  long cycles = strtol(argv[3], NULL, 10);
  tenure_open_options opts;
  CHECK(tenure_open_options_init(&opts));
  opts.synchronous = normal ? TENURE_SYNCHRONOUS_NORMAL : TENURE_SYNCHRONOUS_FULL;
  tenure_authority *a = NULL;
  CHECK(tenure_authority_open(path, &opts, &a));
  bool created;
  CHECK(tenure_authority_create_production(a, "bench", &created));
  tenure_edit *e = NULL;
  CHECK(tenure_edit_begin(a, &e));
  for (long i = 0; i < cycles; i++) {
    char id[32];
    snprintf(id, sizeof id, "j%08ld", i);
    tenure_job_spec spec;
    CHECK(tenure_job_spec_init(&spec));
    spec.job = id;
    spec.payload = (const uint8_t *)"payload";
    spec.payload_len = 7;
    spec.max_attempts = 1000;
    tenure_submitted sub;
    CHECK(tenure_edit_submit(e, "bench", &spec, &sub));
  }
  CHECK(tenure_edit_commit(e));
  tenure_edit_free(e);
  double start = now_s();
  for (long i = 0; i < cycles; i++) {
    tenure_lease *l = NULL;
    CHECK(tenure_authority_claim_next(a, "bench", "bench-worker", 30000000, &l));
    CHECK(tenure_lease_renew(l, 60000000));
    CHECK(tenure_lease_complete(l, NULL, 0));
    tenure_lease_free(l);
  }
  double secs = now_s() - start;
  printf("{\"workload\":\"c-lifecycle\",\"sync\":\"%s\",\"cycles\":%ld,\"seconds\":%.6f,\"cycles_per_s\":%.2f}\n",
         normal ? "NORMAL" : "FULL", cycles, secs, (double)cycles / secs);
  tenure_authority_free(a);
  return 0;
}
