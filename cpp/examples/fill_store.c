/* The "other language" side of the worker example, in plain C over the C
 * ABI: fills a production for cpp/examples/worker.cpp, then verifies what
 * the worker published.
 *
 *   fill_store fill   DB PRODUCTION N   submit job-000 .. job-(N-1)
 *   fill_store verify DB PRODUCTION N   every job completed, facts right
 *
 * Prints the plain closing line "N passed, M failed" in verify mode. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tenure.h"

static int passed, failed;

static void check(int ok, const char *what, const char *job) {
  if (ok) {
    passed++;
  } else {
    failed++;
    fprintf(stderr, "FAILED %s: %s\n", job, what);
  }
}

static void die(tenure_status st, const char *what) {
  char msg[1024];
  size_t need = 0;
  if (tenure_last_error_message(msg, sizeof msg, &need) != TENURE_OK)
    strcpy(msg, "?");
  fprintf(stderr, "%s: %s (%s)\n", what, tenure_status_name(st), msg);
  exit(1);
}

static void payload_of(int i, char *buf, size_t cap) {
  snprintf(buf, cap, "payload of job %d: %d squared is %d", i, i, i * i);
}

static void fnv1a_hex(const char *data, size_t len, char out[17]) {
  uint64_t h = 14695981039346656037ULL;
  for (size_t i = 0; i < len; i++) {
    h ^= (unsigned char)data[i];
    h *= 1099511628211ULL;
  }
  snprintf(out, 17, "%016" PRIx64, h);
}

static const char *fact(const tenure_fact_list *l, const char *key) {
  for (size_t i = 0; i < tenure_fact_list_len(l); i++)
    if (strcmp(tenure_fact_list_key(l, i), key) == 0)
      return tenure_fact_list_value(l, i);
  return "";
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s fill|verify DB PRODUCTION N\n", argv[0]);
    return 2;
  }
  const int verify = strcmp(argv[1], "verify") == 0;
  const char *prod = argv[3];
  const int n = atoi(argv[4]);
  tenure_authority *a = NULL;
  tenure_status st = tenure_authority_open(argv[2], NULL, &a);
  if (st != TENURE_OK)
    die(st, "open");
  if (!verify) {
    bool created = false;
    if ((st = tenure_authority_create_production(a, prod, &created)) != TENURE_OK)
      die(st, "create production");
  }
  for (int i = 0; i < n; i++) {
    char job[32], payload[128];
    snprintf(job, sizeof job, "job-%03d", i);
    payload_of(i, payload, sizeof payload);
    if (!verify) {
      tenure_job_spec spec;
      tenure_job_spec_init(&spec);
      spec.job = job;
      spec.payload = (const uint8_t *)payload;
      spec.payload_len = strlen(payload);
      tenure_submitted out;
      if ((st = tenure_authority_submit(a, prod, &spec, &out)) != TENURE_OK)
        die(st, "submit");
      continue;
    }
    tenure_job_view *v = NULL;
    if ((st = tenure_authority_job(a, prod, job, &v)) != TENURE_OK)
      die(st, "job");
    check(tenure_job_view_state(v) == TENURE_JOB_COMPLETED, "completed", job);
    tenure_job_view_free(v);
    tenure_fact_list *fl = NULL;
    if ((st = tenure_authority_facts(a, prod, job, &fl)) != TENURE_OK)
      die(st, "facts");
    char want_bytes[32], want_hash[17];
    snprintf(want_bytes, sizeof want_bytes, "%zu", strlen(payload));
    fnv1a_hex(payload, strlen(payload), want_hash);
    check(strcmp(fact(fl, "bytes"), want_bytes) == 0, "bytes fact", job);
    check(strcmp(fact(fl, "fnv1a"), want_hash) == 0, "fnv1a fact", job);
    check(strncmp(fact(fl, "tenure.holder"), "cpp-worker-", 11) == 0, "holder provenance", job);
    tenure_fact_list_free(fl);
  }
  tenure_authority_free(a);
  if (verify) {
    printf("verify: %d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
  }
  printf("filled %s with %d jobs\n", prod, n);
  return 0;
}
