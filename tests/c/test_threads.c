/* Threads sharing one tenure_authority claim and complete a whole
 * production: every job is completed exactly once, with group commit on
 * (the default of tenure_authority_open) and off (tenure_options_set_group_commit
 * through tenure_authority_open_with, ABI 1.1). Also: one lease handle
 * shared by several threads, and the per-thread last error message.
 * Usage: test_threads DIR (or PostgreSQL, see harness.h) */
#include <pthread.h>
#include <stdint.h>

#include "harness.h"

#define THREADS 4
#define JOBS 40

static tenure_authority *auth;
static atomic_int completed_by_job[JOBS];
static atomic_int completions;
static const char *production;

static void *worker(void *arg) {
  char holder[32];
  snprintf(holder, sizeof holder, "thread-%d", (int)(intptr_t)arg);
  for (;;) {
    tenure_lease *l = NULL;
    tenure_status st = tenure_authority_claim_next(auth, production, holder,
                                                   INT64_C(600000000), &l);
    if (st == TENURE_NO_JOB_AVAILABLE)
      break;
    OK(st);
    if (st != TENURE_OK)
      break;
    CHECK(streq(tenure_lease_holder(l), holder));
    int idx = atoi(tenure_lease_job(l) + 4);
    char value[32];
    snprintf(value, sizeof value, "%d", idx);
    tenure_fact f = {"by", holder};
    tenure_fact facts[2] = {f, {"index", value}};
    st = tenure_lease_complete(l, facts, 2);
    OK(st);
    if (st == TENURE_OK && idx >= 0 && idx < JOBS) {
      atomic_fetch_add(&completed_by_job[idx], 1);
      atomic_fetch_add(&completions, 1);
    }
    tenure_lease_free(l);
  }
  return NULL;
}

static tenure_lease *shared_lease;
static atomic_int renew_ok, completes_ok, closed_seen;

static void *shared_user(void *arg) {
  (void)arg;
  for (int i = 0; i < 5; i++) {
    tenure_status st = tenure_lease_renew(shared_lease, INT64_C(600000000));
    if (st == TENURE_OK)
      atomic_fetch_add(&renew_ok, 1);
    else
      CHECK(st == TENURE_NOT_EXTENDED || st == TENURE_LEASE_CLOSED);
  }
  tenure_status st = tenure_lease_complete(shared_lease, NULL, 0);
  if (st == TENURE_OK)
    atomic_fetch_add(&completes_ok, 1);
  else if (st == TENURE_LEASE_CLOSED)
    atomic_fetch_add(&closed_seen, 1);
  else
    CHECK(!"unexpected status from a concurrent complete");
  /* this thread's last error is its own */
  size_t sz = 0;
  char buf[512];
  OK(tenure_last_error_message(buf, sizeof buf, &sz));
  return NULL;
}

static void *fresh_thread_error(void *arg) {
  (void)arg;
  size_t sz = 99;
  char buf[8] = "xxxxxxx";
  OK(tenure_last_error_message(buf, sizeof buf, &sz));
  CHECK(sz == 1 && buf[0] == 0); /* another thread's failure is not visible */
  return NULL;
}

/* THREADS threads complete the JOBS jobs of a new production of `auth`;
 * every job exactly once. */
static void drain(const char *prod) {
  production = prod;
  atomic_store(&completions, 0);
  for (int i = 0; i < JOBS; i++)
    atomic_store(&completed_by_job[i], 0);
  make_production(auth, prod);
  char id[32];
  for (int i = 0; i < JOBS; i++) {
    snprintf(id, sizeof id, "job-%02d", i);
    submit_job(auth, prod, id, 3);
  }

  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++)
    REQUIRE(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i) == 0);
  for (int i = 0; i < THREADS; i++)
    pthread_join(t[i], NULL);

  CHECK(atomic_load(&completions) == JOBS);
  for (int i = 0; i < JOBS; i++)
    CHECK(atomic_load(&completed_by_job[i]) == 1);
  tenure_list_query q;
  OK(tenure_list_query_init(&q));
  q.state = TENURE_JOB_COMPLETED;
  q.limit = 1000;
  tenure_job_list *jl = NULL;
  OK(tenure_authority_jobs(auth, prod, &q, &jl));
  CHECK(tenure_job_list_len(jl) == JOBS);
  for (size_t i = 0; i < tenure_job_list_len(jl); i++)
    CHECK(tenure_job_view_attempts(tenure_job_list_get(jl, i)) == 1);
  tenure_job_list_free(jl);
  /* the event log shows exactly one completion per job */
  tenure_event_list *el = NULL;
  OK(tenure_authority_production_events(auth, prod, 0, 10000, &el));
  int completed_events = 0;
  for (size_t i = 0; i < tenure_event_list_len(el); i++)
    if (streq(tenure_event_list_kind(el, i), "completed"))
      completed_events++;
  CHECK(completed_events == JOBS);
  tenure_event_list_free(el);
  uint64_t violations = 1;
  OK(tenure_authority_check(auth, &violations));
  CHECK(violations == 0);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s SCRATCH_DIR\n", argv[0]);
    return 2;
  }
  tenure_open_options o;
  REQUIRE(tenure_open_options_init(&o) == TENURE_OK);
  o.busy_timeout_us = INT64_C(120000000); /* generous: shared, noisy machines */

  /* group commit off: its own store, opened through an options handle */
  tenure_options *off = NULL;
  REQUIRE(tenure_options_new(&o, &off) == TENURE_OK);
  OK(tenure_options_set_group_commit(off, false));
  REQUIRE(tenure_authority_open_with(store_addr(argv[1], "threads-off.db"), off,
                                     &auth) == TENURE_OK);
  tenure_options_free(off); /* the authority keeps its settings */
  drain("prod-off");
  tenure_authority_free(auth);

  /* group commit on (the default) */
  REQUIRE(tenure_authority_open(store_addr(argv[1], "threads.db"), &o, &auth) ==
          TENURE_OK);
  drain("prod");

  /* one lease handle shared by several threads */
  pthread_t t[THREADS];
  submit_job(auth, "prod", "shared", 3);
  OK(tenure_authority_claim(auth, "prod", "shared", "main", INT64_C(600000000),
                            &shared_lease));
  for (int i = 0; i < THREADS; i++)
    REQUIRE(pthread_create(&t[i], NULL, shared_user, NULL) == 0);
  for (int i = 0; i < THREADS; i++)
    pthread_join(t[i], NULL);
  CHECK(atomic_load(&completes_ok) == 1);
  CHECK(atomic_load(&closed_seen) == THREADS - 1);
  CHECK(tenure_lease_status_get(shared_lease) == TENURE_LEASE_STATUS_CLOSED);
  tenure_lease_free(shared_lease);

  /* last error is per thread */
  tenure_lease *none = NULL;
  EXPECT(tenure_authority_claim_next(auth, "prod", "main", 1000000, &none),
         TENURE_NO_JOB_AVAILABLE);
  pthread_t f;
  REQUIRE(pthread_create(&f, NULL, fresh_thread_error, NULL) == 0);
  pthread_join(f, NULL);
  CHECK(strstr(last_error(), "nothing claimable") != NULL);

  tenure_authority_free(auth);
  return finish();
}
