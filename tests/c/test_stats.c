/* tenure_authority_stats from C: after random operation sequences, with
 * short leases left to expire on the real clock, the statistics equal a
 * full scan of the same store (every job's view and every event), the
 * production's claim gates included; after clock jumps (this program run
 * again under libfaketime two hours back, where reads classify at the
 * high-water mark, and two hours ahead, where every lease has expired) they
 * still equal the scan; bad arguments are typed errors that write nothing;
 * freeing NULL is a no-op.
 *   test_stats DIR             driver (the jumps need TENURE_FAKETIME_LIB)
 *   test_stats jump DB         the child under libfaketime */
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

/* Random operations on productions "p" and "q" of `a`; the leases taken,
 * to free with free_leases(). */
static size_t populate(tenure_authority *a, unsigned seed, tenure_lease **leases) {
  make_production(a, "p");
  make_production(a, "q");
  srand(seed);
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
  if (seed % 2 == 0) {
    OK(tenure_authority_pause_production(a, "p", &(bool){false}));
    OK(tenure_authority_set_concurrency_limit(a, "p", 1 + seed));
  }
  if (seed % 3 == 0)
    OK(tenure_authority_set_rate_limit(a, "p", seed, 1000000LL * seed, 2));
  return nl;
}

/* The gates of production `p` in the statistics equal the gates as set. */
static void same_gates(tenure_authority *a, const tenure_production_stats *p) {
  tenure_gates *g = NULL;
  OK(tenure_authority_production_gates(a, tenure_production_stats_name(p), &g));
  CHECK(tenure_production_stats_paused(p) == tenure_gates_paused(g));
  int64_t at = 0, want_at = 0;
  CHECK(tenure_production_stats_paused_us(p, &at) == tenure_gates_paused_us(g, &want_at));
  CHECK(at == want_at);
  uint32_t k = 0, want_k = 0;
  CHECK(tenure_production_stats_concurrency_limit(p, &k) ==
        tenure_gates_concurrency_limit(g, &want_k));
  CHECK(k == want_k);
  uint32_t c = 0, b = 0, want_c = 0, want_b = 0;
  int64_t iv = 0, want_iv = 0;
  CHECK(tenure_production_stats_rate_limit(p, &c, &iv, &b) ==
        tenure_gates_rate_limit(g, &want_c, &want_iv, &want_b));
  CHECK(c == want_c && iv == want_iv && b == want_b);
  tenure_gates_free(g);
}

/* The statistics of `a` over `window_us` equal a full scan (every event of
 * the store is inside the window). */
static void compare(tenure_authority *a, int64_t window_us) {
  tenure_stats *s = NULL;
  OK(tenure_authority_stats(a, NULL, HORIZON_US, window_us, &s));
  REQUIRE(s != NULL);
  CHECK(tenure_stats_len(s) == 2);
  CHECK(tenure_stats_high_water_us(s) <= tenure_stats_now_us(s));
  int64_t clock_now = 0, clock_mark = 0;
  bool blocked = false;
  OK(tenure_authority_clock(a, &clock_now, &clock_mark, &blocked));
  CHECK(tenure_stats_high_water_us(s) <= clock_mark);
  CHECK(tenure_stats_now_us(s) <= (clock_now > clock_mark ? clock_now : clock_mark));
  const tenure_production_stats *p = tenure_stats_get(s, 0);
  REQUIRE(p != NULL);
  CHECK(streq(tenure_production_stats_name(p), "p"));
  CHECK(!tenure_production_stats_cancelled(p));
  CHECK(tenure_stats_get(s, 2) == NULL);
  struct scan want;
  scan_store(a, "p", tenure_stats_now_us(s), &want);
  CHECK(count(p, TENURE_STATS_WAITING_DUE) == want.by_state[TENURE_JOB_REQUESTED]);
  CHECK(count(p, TENURE_STATS_WAITING_LATER) == 0);
  same_gates(a, p);
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
  CHECK(!tenure_production_stats_paused(q));
  CHECK(!tenure_production_stats_concurrency_limit(q, &(uint32_t){0}));
  same_gates(a, q);
  tenure_stats_free(s);
  /* One production: the same figures. */
  OK(tenure_authority_stats(a, "p", HORIZON_US, window_us, &s));
  CHECK(tenure_stats_len(s) == 1);
  CHECK(count(tenure_stats_get(s, 0), TENURE_STATS_COMPLETED) ==
        want.by_state[TENURE_JOB_COMPLETED]);
  tenure_stats_free(s);
}

static void free_leases(tenure_lease **leases, size_t n) {
  for (size_t i = 0; i < n; i++)
    tenure_lease_free(leases[i]);
}

static void random_run(const char *dir, unsigned seed) {
  char name[64];
  snprintf(name, sizeof name, "stats%u.db", seed);
  tenure_authority *a = open_store(dir, name);
  tenure_lease *leases[64] = {0};
  size_t nl = populate(a, seed, leases);
  nap_ms(10); /* every short lease has expired */
  compare(a, HOUR_US);
  free_leases(leases, nl);
  tenure_authority_free(a);
}

/* The child under libfaketime: the statistics of the store at `db` equal
 * its scan, over a window that holds every event written with the real
 * clock. */
static int child_jump(const char *db) {
  tenure_authority *a = NULL;
  REQUIRE(tenure_authority_open(db, NULL, &a) == TENURE_OK);
  int64_t now = 0, mark = 0;
  bool blocked = false;
  OK(tenure_authority_clock(a, &now, &mark, &blocked));
  const char *jump = getenv("FAKETIME");
  REQUIRE(jump != NULL);
  /* Behind the mark the views and the statistics classify at the mark. */
  CHECK(blocked == (jump[0] == '-'));
  compare(a, 4 * HOUR_US);
  tenure_authority_free(a);
  printf("child (%s): %d passed, %d failed\n", jump, atomic_load(&h_passed),
         atomic_load(&h_failed));
  return atomic_load(&h_failed) == 0 ? 0 : 1;
}

/* Run this program as `jump DB` under libfaketime `offset` from now. */
static void run_jumped(const char *lib, const char *db, const char *offset) {
  fflush(stdout);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
      _exit(127);
    self[n] = 0;
    setenv("LD_PRELOAD", lib, 1);
    setenv("FAKETIME", offset, 1);
    setenv("FAKETIME_DONT_FAKE_MONOTONIC", "1", 1);
    /* libfaketime is preloaded ahead of the ASan runtime */
    setenv("ASAN_OPTIONS", "detect_leaks=1:verify_asan_link_order=0", 1);
    char *args[] = {self, "jump", (char *)db, NULL};
    execv(self, args);
    _exit(127);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* Random operations with the real clock, then the statistics against the
 * scan two hours back (reads classify at the high-water mark) and two
 * hours ahead (every lease expired; the jump back first, so the mark is
 * still the real clock's). */
static void clock_jumps(const char *dir, unsigned seed) {
  const char *lib = getenv("TENURE_FAKETIME_LIB");
  REQUIRE(lib != NULL && access(lib, R_OK) == 0);
  char name[64];
  snprintf(name, sizeof name, "jump%u.db", seed);
  const char *db = store_addr(dir, name);
  tenure_authority *a = open_store(dir, name);
  tenure_lease *leases[64] = {0};
  size_t nl = populate(a, seed, leases);
  free_leases(leases, nl);
  tenure_authority_free(a);
  run_jumped(lib, db, "-2h");
  run_jumped(lib, db, "+2h");
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
  /* The gate accessors: false for a NULL handle or out pointer, nothing written. */
  int64_t us = 5;
  uint32_t k = 6, c = 7, b = 8;
  CHECK(!tenure_production_stats_paused(NULL));
  CHECK(!tenure_production_stats_paused_us(NULL, &us) && us == 5);
  CHECK(!tenure_production_stats_concurrency_limit(NULL, &k) && k == 6);
  CHECK(!tenure_production_stats_rate_limit(NULL, &c, &us, &b) && c == 7 && b == 8);
  OK(tenure_authority_pause_production(a, "p", &(bool){false}));
  OK(tenure_authority_set_concurrency_limit(a, "p", 4));
  OK(tenure_authority_set_rate_limit(a, "p", 10, 1000000, 3));
  OK(tenure_authority_stats(a, "p", 0, 0, &s));
  const tenure_production_stats *p = tenure_stats_get(s, 0);
  CHECK(tenure_production_stats_paused(p));
  CHECK(!tenure_production_stats_paused_us(p, NULL));
  CHECK(!tenure_production_stats_concurrency_limit(p, NULL));
  CHECK(!tenure_production_stats_rate_limit(p, &c, NULL, &b) && c == 7 && b == 8);
  CHECK(tenure_production_stats_paused_us(p, &us) && us > 0);
  CHECK(tenure_production_stats_concurrency_limit(p, &k) && k == 4);
  CHECK(tenure_production_stats_rate_limit(p, &c, &us, &b) && c == 10 && us == 1000000 && b == 3);
  tenure_stats_free(s);
  tenure_authority_free(a);
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "jump") == 0)
    return child_jump(argv[2]);
  if (argc != 2) {
    fprintf(stderr, "usage: %s SCRATCH_DIR | jump DB\n", argv[0]);
    return 2;
  }
  for (unsigned seed = 1; seed <= 6; seed++)
    random_run(argv[1], seed);
  if (!skip_on_postgres("clock jumps", "libfaketime moves the local clock of a SQLite store"))
    for (unsigned seed = 1; seed <= 3; seed++)
      clock_jumps(argv[1], seed);
  bad_arguments(argv[1]);
  return finish();
}
