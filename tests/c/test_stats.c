/* tenure_authority_stats from C: after random operation sequences, with
 * short leases left to expire on the real clock, the statistics equal a
 * full scan of the same store (every job's view and every event); bad
 * arguments are typed errors that write nothing; freeing NULL is a no-op.
 * The clock-jump cases are the Rust suite's (an injected clock).
 *   test_stats DIR */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "harness.h"

#define HOUR_US 3600000000LL
#define HORIZON_US 30000000LL

static void nap_ms(long ms) {
  struct timespec t = {0, ms * 1000000L};
  nanosleep(&t, NULL);
}

static uint64_t count(const tenure_production_stats *p, uint32_t which) {
  uint64_t n = 0xdead;
  CHECK(tenure_production_stats_count(p, which, &n));
  return n;
}

struct scan {
  uint64_t by_state[7];
  uint64_t expiring, claims, completions, retryable, permanent, closes;
  uint32_t max_attempts;
};

static void scan_store(tenure_authority *a, const char *prod, int64_t now, struct scan *s) {
  memset(s, 0, sizeof *s);
  tenure_list_query q;
  OK(tenure_list_query_init(&q));
  q.limit = 10000;
  tenure_job_list *jl = NULL;
  OK(tenure_authority_jobs(a, prod, &q, &jl));
  for (size_t i = 0; i < tenure_job_list_len(jl); i++) {
    const tenure_job_view *v = tenure_job_list_get(jl, i);
    uint32_t st = tenure_job_view_state(v);
    s->by_state[st]++;
    if (st == TENURE_JOB_CLAIMED) {
      int64_t exp = 0;
      CHECK(tenure_job_view_expires_us(v, &exp));
      if (exp <= now + HORIZON_US)
        s->expiring++;
      if (tenure_job_view_attempts(v) > s->max_attempts)
        s->max_attempts = tenure_job_view_attempts(v);
    }
  }
  tenure_job_list_free(jl);
  tenure_event_list *el = NULL;
  OK(tenure_authority_events(a, 0, 10000, &el));
  for (size_t i = 0; i < tenure_event_list_len(el); i++) {
    if (!streq(tenure_event_list_production(el, i), prod))
      continue;
    const char *k = tenure_event_list_kind(el, i);
    uint32_t st = tenure_event_list_state(el, i);
    if (streq(k, "claimed"))
      s->claims++;
    if (streq(k, "completed"))
      s->completions++;
    if (streq(k, "failed") && st == TENURE_JOB_REQUESTED)
      s->retryable++;
    if ((streq(k, "failed") && st == TENURE_JOB_FAILED) || streq(k, "exhausted"))
      s->permanent++;
    if (streq(k, "completed") || streq(k, "failed") || streq(k, "released"))
      s->closes++;
  }
  tenure_event_list_free(el);
}

static void random_run(const char *dir, unsigned seed) {
  char name[64];
  snprintf(name, sizeof name, "stats%u.db", seed);
  tenure_authority *a = open_store(dir, name);
  make_production(a, "p");
  make_production(a, "q");
  srand(seed);
  tenure_lease *leases[64] = {0};
  size_t nl = 0;
  for (int i = 0; i < 80; i++) {
    int op = rand() % 7;
    char job[16];
    snprintf(job, sizeof job, "j%d", rand() % 12);
    tenure_lease *l = NULL;
    tenure_job_state js;
    if (op <= 1) {
      tenure_job_spec spec;
      OK(tenure_job_spec_init(&spec));
      spec.job = job;
      spec.payload = (const uint8_t *)"secret payload";
      spec.payload_len = 14;
      spec.max_attempts = 1 + (uint32_t)(rand() % 3);
      tenure_submitted sub;
      (void)tenure_authority_submit(a, "p", &spec, &sub);
    } else if (op == 2 && nl < 64) {
      int64_t ttl = rand() % 3 == 0 ? 1000 : HOUR_US;
      if (tenure_authority_claim_next(a, "p", "w", ttl, &l) == TENURE_OK)
        leases[nl++] = l;
    } else if (op == 3 && nl > 0) {
      (void)tenure_lease_complete(leases[rand() % nl], NULL, 0);
    } else if (op == 4 && nl > 0) {
      (void)tenure_lease_fail(leases[rand() % nl], "boom", rand() % 2, &js);
    } else if (op == 5 && nl > 0) {
      (void)tenure_lease_release(leases[rand() % nl], &js);
    } else {
      tenure_cancelled c;
      (void)tenure_authority_cancel(a, "p", job, &c);
    }
  }
  nap_ms(10); /* every short lease has expired */
  tenure_stats *s = NULL;
  OK(tenure_authority_stats(a, NULL, HORIZON_US, HOUR_US, &s));
  REQUIRE(s != NULL);
  CHECK(tenure_stats_len(s) == 2);
  CHECK(tenure_stats_high_water_us(s) <= tenure_stats_now_us(s));
  const tenure_production_stats *p = tenure_stats_get(s, 0);
  REQUIRE(p != NULL);
  CHECK(streq(tenure_production_stats_name(p), "p"));
  CHECK(!tenure_production_stats_cancelled(p));
  CHECK(tenure_stats_get(s, 2) == NULL);
  struct scan want;
  scan_store(a, "p", tenure_stats_now_us(s), &want);
  CHECK(count(p, TENURE_STATS_WAITING_DUE) == want.by_state[TENURE_JOB_REQUESTED]);
  CHECK(count(p, TENURE_STATS_WAITING_LATER) == 0);
  CHECK(count(p, TENURE_STATS_CLAIMED_LIVE) == want.by_state[TENURE_JOB_CLAIMED]);
  CHECK(count(p, TENURE_STATS_CLAIMED_EXPIRED) == want.by_state[TENURE_JOB_EXPIRED]);
  CHECK(count(p, TENURE_STATS_COMPLETED) == want.by_state[TENURE_JOB_COMPLETED]);
  CHECK(count(p, TENURE_STATS_FAILED) == want.by_state[TENURE_JOB_FAILED]);
  CHECK(count(p, TENURE_STATS_CANCELLED) == want.by_state[TENURE_JOB_CANCELLED]);
  CHECK(count(p, TENURE_STATS_EXPIRING_WITHIN) == want.expiring);
  CHECK(tenure_production_stats_max_live_attempts(p) == want.max_attempts);
  CHECK(count(p, TENURE_STATS_CLAIMS) == want.claims);
  CHECK(count(p, TENURE_STATS_COMPLETIONS) == want.completions);
  CHECK(count(p, TENURE_STATS_RETRYABLE_FAILURES) == want.retryable);
  CHECK(count(p, TENURE_STATS_PERMANENT_FAILURES) == want.permanent);
  CHECK(count(p, TENURE_STATS_WAIT_COUNT) == want.claims);
  CHECK(count(p, TENURE_STATS_RUN_COUNT) == want.closes);
  CHECK(!tenure_production_stats_flow_truncated(p));
  int64_t us = -1;
  CHECK(tenure_production_stats_time_us(p, TENURE_STATS_WAIT_P50, &us) == (want.claims > 0));
  CHECK(!tenure_production_stats_time_us(p, TENURE_STATS_NEXT_DUE, &us));
  uint64_t n = 7;
  CHECK(!tenure_production_stats_count(p, 99, &n) && n == 7);
  CHECK(!tenure_production_stats_time_us(p, 99, &us));
  const tenure_production_stats *q = tenure_stats_get(s, 1);
  CHECK(streq(tenure_production_stats_name(q), "q"));
  CHECK(count(q, TENURE_STATS_WAITING_DUE) == 0);
  tenure_stats_free(s);
  /* One production: the same figures. */
  OK(tenure_authority_stats(a, "p", HORIZON_US, HOUR_US, &s));
  CHECK(tenure_stats_len(s) == 1);
  CHECK(count(tenure_stats_get(s, 0), TENURE_STATS_COMPLETED) ==
        want.by_state[TENURE_JOB_COMPLETED]);
  tenure_stats_free(s);
  for (size_t i = 0; i < nl; i++)
    tenure_lease_free(leases[i]);
  tenure_authority_free(a);
}

static void bad_arguments(const char *dir) {
  tenure_authority *a = open_store(dir, "bad.db");
  make_production(a, "p");
  tenure_stats *s = (tenure_stats *)0x1;
  EXPECT(tenure_authority_stats(NULL, NULL, 0, 0, &s), TENURE_INVALID_ARGUMENT);
  EXPECT(tenure_authority_stats(a, NULL, 0, 0, NULL), TENURE_INVALID_ARGUMENT);
  EXPECT(tenure_authority_stats(a, "nope", 0, 0, &s), TENURE_NOT_FOUND);
  EXPECT(tenure_authority_stats(a, "bad id!", 0, 0, &s), TENURE_INVALID_ARGUMENT);
  EXPECT(tenure_authority_stats(a, NULL, -1, 0, &s), TENURE_INVALID_DURATION);
  EXPECT(tenure_authority_stats(a, NULL, 0, 31LL * 24 * HOUR_US, &s), TENURE_INVALID_DURATION);
  CHECK(s == (tenure_stats *)0x1);
  tenure_stats_free(NULL);
  CHECK(tenure_stats_len(NULL) == 0);
  CHECK(tenure_stats_get(NULL, 0) == NULL);
  CHECK(tenure_production_stats_name(NULL) == NULL);
  uint64_t n = 3;
  CHECK(!tenure_production_stats_count(NULL, TENURE_STATS_CLAIMS, &n) && n == 3);
  tenure_authority_free(a);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s SCRATCH_DIR\n", argv[0]);
    return 2;
  }
  for (unsigned seed = 1; seed <= 6; seed++)
    random_run(argv[1], seed);
  bad_arguments(argv[1]);
  return finish();
}
