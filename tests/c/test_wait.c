/* Waiting for work and keep-alive through the C ABI (ABI 1.1):
 * tenure_authority_claim_next_wait wakes on a submit from another thread,
 * ends at its timeout, on its cancel handle and on
 * tenure_authority_cancel_waits (changing nothing); a tenure_keeper keeps a
 * short lease alive, makes no renewal after tenure_keeper_stop, never
 * releases, reports a refused renewal with its status and message, stops
 * quietly when the owner closes the lease, and outlives the lease and
 * authority handles it came from.
 * Usage: test_wait DIR */
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "harness.h"

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int64_t ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static tenure_job_state state_of(tenure_authority *a, const char *p, const char *j) {
  tenure_job_view *v = NULL;
  REQUIRE(tenure_authority_job(a, p, j, &v) == TENURE_OK);
  tenure_job_state s = tenure_job_view_state(v);
  tenure_job_view_free(v);
  return s;
}

/* One waiter thread: its arguments and what it saw. */
struct waiter {
  tenure_authority *a;
  const char *production;
  int64_t timeout_us;
  tenure_wait_cancel *cancel;
  tenure_status st;
  tenure_lease *lease;
  int64_t took_ms;
};

static void *wait_thread(void *arg) {
  struct waiter *w = arg;
  int64_t t0 = now_ms();
  w->st = tenure_authority_claim_next_wait(w->a, w->production, "waiter", 60000000,
                                           w->timeout_us, w->cancel, &w->lease);
  w->took_ms = now_ms() - t0;
  return NULL;
}

static void wakes_on_submit_from_another_thread(const char *dir) {
  tenure_authority *a = open_store(dir, "wake.db");
  make_production(a, "p");
  struct waiter w = {a, "p", INT64_C(30000000), NULL, 99, NULL, 0};
  pthread_t t;
  REQUIRE(pthread_create(&t, NULL, wait_thread, &w) == 0);
  sleep_ms(300);
  submit_job(a, "p", "late", 3);
  int64_t submitted = now_ms();
  REQUIRE(pthread_join(t, NULL) == 0);
  EXPECT(w.st, TENURE_OK);
  CHECK(w.took_ms >= 250);                   /* it really waited */
  CHECK(now_ms() - submitted < 10000);       /* and woke long before its timeout */
  CHECK(streq(tenure_lease_job(w.lease), "late"));
  CHECK(streq(tenure_lease_holder(w.lease), "waiter"));
  CHECK(tenure_lease_status_get(w.lease) == TENURE_LEASE_STATUS_ACTIVE);
  CHECK(state_of(a, "p", "late") == TENURE_JOB_CLAIMED);
  tenure_lease_free(w.lease);
  tenure_authority_free(a);
}

static void times_out_and_changes_nothing(const char *dir) {
  tenure_authority *a = open_store(dir, "timeout.db");
  make_production(a, "p");
  size_t before = event_count(a);
  tenure_wait_cancel *c = NULL;
  OK(tenure_wait_cancel_new(&c));
  tenure_lease *l = (tenure_lease *)0x1;
  int64_t t0 = now_ms();
  EXPECT(tenure_authority_claim_next_wait(a, "p", "w", 1000000, 300000, c, &l),
         TENURE_NO_JOB_AVAILABLE);
  int64_t took = now_ms() - t0;
  CHECK(took >= 290 && took < 10000);
  CHECK(!tenure_wait_cancel_is_cancelled(c)); /* a timeout, not a cancel */
  /* zero: one attempt, no wait */
  t0 = now_ms();
  EXPECT(tenure_authority_claim_next_wait(a, "p", "w", 1000000, 0, NULL, &l),
         TENURE_NO_JOB_AVAILABLE);
  CHECK(now_ms() - t0 < 5000);
  CHECK(l == (tenure_lease *)0x1);
  CHECK(event_count(a) == before);
  /* a claimable job is claimed at once, with the first attempt */
  submit_job(a, "p", "ready", 3);
  l = NULL;
  OK(tenure_authority_claim_next_wait(a, "p", "w", 1000000, 0, NULL, &l));
  CHECK(streq(tenure_lease_job(l), "ready"));
  tenure_lease_free(l);
  /* other errors end the wait at once */
  l = (tenure_lease *)0x1;
  EXPECT(tenure_authority_claim_next_wait(a, "nope", "w", 1000000, 30000000, c, &l),
         TENURE_NOT_FOUND);
  CHECK(l == (tenure_lease *)0x1);
  tenure_wait_cancel_free(c);
  tenure_authority_free(a);
}

static void a_cancel_handle_ends_the_wait(const char *dir) {
  tenure_authority *a = open_store(dir, "cancel.db");
  make_production(a, "p");
  size_t before = event_count(a);
  tenure_wait_cancel *c = NULL;
  OK(tenure_wait_cancel_new(&c));
  CHECK(!tenure_wait_cancel_is_cancelled(c));
  struct waiter w = {a, "p", INT64_C(60000000), c, 99, NULL, 0};
  pthread_t t;
  REQUIRE(pthread_create(&t, NULL, wait_thread, &w) == 0);
  sleep_ms(300);
  int64_t t0 = now_ms();
  OK(tenure_wait_cancel_cancel(c));
  REQUIRE(pthread_join(t, NULL) == 0);
  EXPECT(w.st, TENURE_NO_JOB_AVAILABLE);
  CHECK(w.lease == NULL);
  CHECK(w.took_ms >= 250);
  CHECK(now_ms() - t0 < 5000);
  CHECK(tenure_wait_cancel_is_cancelled(c));
  OK(tenure_wait_cancel_cancel(c)); /* idempotent */
  /* cancellation is final: a later wait with the handle ends at once, even
   * with a job ready (it makes no attempt) */
  submit_job(a, "p", "j", 3);
  size_t after_submit = event_count(a);
  CHECK(after_submit == before + 1);
  tenure_lease *l = (tenure_lease *)0x1;
  t0 = now_ms();
  EXPECT(tenure_authority_claim_next_wait(a, "p", "w", 1000000, 60000000, c, &l),
         TENURE_NO_JOB_AVAILABLE);
  CHECK(now_ms() - t0 < 5000);
  CHECK(l == (tenure_lease *)0x1);
  CHECK(strstr(last_error(), "cancelled") != NULL);
  CHECK(event_count(a) == after_submit);
  CHECK(state_of(a, "p", "j") == TENURE_JOB_REQUESTED);
  tenure_wait_cancel_free(c);
  tenure_wait_cancel_free(NULL);
  tenure_authority_free(a);
}

static void cancel_waits_ends_every_wait_of_the_authority(const char *dir) {
  tenure_authority *a = open_store(dir, "cancel_waits.db");
  make_production(a, "p");
  struct waiter w[2] = {{a, "p", INT64_C(60000000), NULL, 99, NULL, 0},
                        {a, "p", INT64_C(60000000), NULL, 99, NULL, 0}};
  pthread_t t[2];
  for (int i = 0; i < 2; i++)
    REQUIRE(pthread_create(&t[i], NULL, wait_thread, &w[i]) == 0);
  sleep_ms(300);
  int64_t t0 = now_ms();
  OK(tenure_authority_cancel_waits(a));
  for (int i = 0; i < 2; i++) {
    REQUIRE(pthread_join(t[i], NULL) == 0);
    EXPECT(w[i].st, TENURE_NO_JOB_AVAILABLE);
    CHECK(w[i].lease == NULL);
  }
  CHECK(now_ms() - t0 < 5000);
  /* waits that start later are not affected */
  submit_job(a, "p", "j", 3);
  tenure_lease *l = NULL;
  OK(tenure_authority_claim_next_wait(a, "p", "w", 1000000, 1000000, NULL, &l));
  tenure_lease_free(l);
  tenure_authority_free(a);
}

static void keeper_state(tenure_keeper *k, tenure_keeper_state *s, tenure_status *e) {
  REQUIRE(tenure_keeper_status(k, s, e) == TENURE_OK);
}

/* Poll until the keeper leaves RUNNING (at most 10 s). */
static tenure_keeper_state wait_until_stopped(tenure_keeper *k, tenure_status *err) {
  tenure_keeper_state s = TENURE_KEEPER_RUNNING;
  for (int i = 0; i < 1000 && s == TENURE_KEEPER_RUNNING; i++) {
    keeper_state(k, &s, err);
    if (s == TENURE_KEEPER_RUNNING)
      sleep_ms(10);
  }
  return s;
}

static void a_keeper_keeps_a_short_lease_alive_and_stops(const char *dir) {
  tenure_authority *a = open_store(dir, "keeper.db");
  make_production(a, "p");
  submit_job(a, "p", "j", 3);
  tenure_lease *l = NULL;
  REQUIRE(tenure_authority_claim(a, "p", "j", "w", 400000, &l) == TENURE_OK);
  int64_t first_expiry = tenure_lease_expires_us(l);
  tenure_keeper *k = NULL;
  OK(tenure_lease_keep_alive(l, 400000, 80000, &k));
  REQUIRE(k != NULL);
  sleep_ms(1200); /* three TTLs */
  tenure_keeper_state s = 0;
  tenure_status err = 99;
  keeper_state(k, &s, &err);
  CHECK(s == TENURE_KEEPER_RUNNING);
  CHECK(err == TENURE_OK);
  CHECK(tenure_keeper_renewals(k) >= 3);
  CHECK(tenure_lease_expires_us(l) > first_expiry + 700000); /* renewals show */
  CHECK(state_of(a, "p", "j") == TENURE_JOB_CLAIMED);
  OK(tenure_lease_renew(l, 400000)); /* still the current, live claim */

  OK(tenure_keeper_stop(k));
  keeper_state(k, &s, &err);
  CHECK(s == TENURE_KEEPER_STOPPED && err == TENURE_OK);
  uint64_t renewals = tenure_keeper_renewals(k);
  size_t events = event_count(a);
  sleep_ms(700);
  /* no renewal after stop, and nothing was released: the lease expires */
  CHECK(tenure_keeper_renewals(k) == renewals);
  CHECK(event_count(a) == events);
  CHECK(state_of(a, "p", "j") == TENURE_JOB_EXPIRED);
  EXPECT(tenure_lease_renew(l, 400000), TENURE_LEASE_EXPIRED);
  OK(tenure_keeper_stop(k)); /* idempotent */
  char msg[16];
  size_t need = 0;
  OK(tenure_keeper_error_message(k, msg, sizeof msg, &need));
  CHECK(need == 1 && msg[0] == 0);
  tenure_keeper_free(k);
  tenure_keeper_free(NULL);

  /* freeing a running keeper stops it and never releases */
  submit_job(a, "p", "f", 3);
  tenure_lease *l2 = NULL;
  REQUIRE(tenure_authority_claim(a, "p", "f", "w", 60000000, &l2) == TENURE_OK);
  OK(tenure_lease_keep_alive(l2, 60000000, 20000, &k));
  sleep_ms(100);
  tenure_keeper_free(k);
  events = event_count(a);
  sleep_ms(200);
  CHECK(event_count(a) == events);
  CHECK(state_of(a, "p", "f") == TENURE_JOB_CLAIMED);
  CHECK(tenure_lease_status_get(l2) == TENURE_LEASE_STATUS_ACTIVE);
  tenure_lease_free(l2);
  tenure_lease_free(l);
  tenure_authority_free(a);
}

static void a_keeper_reports_refusals_and_closed_leases(const char *dir) {
  tenure_authority *a = open_store(dir, "refused.db");
  make_production(a, "p");
  submit_job(a, "p", "c", 3);
  submit_job(a, "p", "d", 3);

  /* a coordinator cancel: the next renewal is refused with TENURE_CANCELLED */
  tenure_lease *l = NULL;
  REQUIRE(tenure_authority_claim(a, "p", "c", "w", 60000000, &l) == TENURE_OK);
  tenure_keeper *k = NULL;
  OK(tenure_lease_keep_alive(l, 60000000, 50000, &k));
  tenure_cancelled cres = 0;
  OK(tenure_authority_cancel(a, "p", "c", &cres));
  tenure_status err = 99;
  CHECK(wait_until_stopped(k, &err) == TENURE_KEEPER_REFUSED);
  CHECK(err == TENURE_CANCELLED);
  size_t need = 0;
  EXPECT(tenure_keeper_error_message(k, NULL, 0, &need), TENURE_INVALID_ARGUMENT);
  CHECK(need > 1);
  char *msg = malloc(need);
  REQUIRE(msg != NULL);
  OK(tenure_keeper_error_message(k, msg, need, &need));
  CHECK(strstr(msg, "cancelled") != NULL && strstr(msg, "p/c") != NULL);
  CHECK(strlen(msg) + 1 == need);
  free(msg);
  uint64_t r = tenure_keeper_renewals(k);
  sleep_ms(200);
  CHECK(tenure_keeper_renewals(k) == r); /* a refusal stops it */
  tenure_keeper_free(k);
  tenure_lease_free(l);

  /* the owner completes the lease: the keeper stops quietly */
  REQUIRE(tenure_authority_claim(a, "p", "d", "w", 60000000, &l) == TENURE_OK);
  OK(tenure_lease_keep_alive(l, 60000000, 50000, &k));
  OK(tenure_lease_complete(l, NULL, 0));
  CHECK(wait_until_stopped(k, &err) == TENURE_KEEPER_LEASE_CLOSED);
  CHECK(err == TENURE_OK);
  /* only an active lease can be kept alive */
  tenure_keeper *k2 = (tenure_keeper *)0x1;
  EXPECT(tenure_lease_keep_alive(l, 60000000, 50000, &k2), TENURE_LEASE_CLOSED);
  CHECK(k2 == (tenure_keeper *)0x1);
  tenure_keeper_free(k);
  tenure_lease_free(l);
  tenure_authority_free(a);
}

static void a_keeper_outlives_its_lease_and_authority_handles(const char *dir) {
  tenure_authority *a = open_store(dir, "outlive.db");
  make_production(a, "p");
  submit_job(a, "p", "j", 3);
  tenure_lease *l = NULL;
  REQUIRE(tenure_authority_claim(a, "p", "j", "w", 300000, &l) == TENURE_OK);
  tenure_keeper *k = NULL;
  OK(tenure_lease_keep_alive(l, 300000, 50000, &k));
  tenure_lease_free(l);
  tenure_authority_free(a);
  sleep_ms(900);
  tenure_keeper_state s = 0;
  tenure_status err = 99;
  keeper_state(k, &s, &err);
  CHECK(s == TENURE_KEEPER_RUNNING);
  CHECK(tenure_keeper_renewals(k) >= 3);
  a = open_store(dir, "outlive.db");
  CHECK(state_of(a, "p", "j") == TENURE_JOB_CLAIMED); /* alive past its first TTL */
  tenure_keeper_free(k);
  tenure_authority_free(a);
}

/* The core's outage rule (tenure_outage, ABI 1.2): a server that is away
 * gives pauses growing from 50 ms to 2 s (each from the upper half of its
 * step), BEGAN once, the outage's length when it ends, STOP past the
 * limit; any other failure is a 1 s pause and no outage. */
#define AWAY "store error: lost the connection to the store server: connection refused"
#define TRY_AGAIN "busy: the store server asked to try again: too many connections"

static void the_outage_rule_backs_off_reports_once_and_stops(void) {
  tenure_outage *o = NULL;
  OK(tenure_outage_new(INT64_MIN, 1, &o));
  REQUIRE(o != NULL);
  int64_t us = 7;
  OK(tenure_outage_succeeded(o, 0, &us));
  CHECK(us == -1); /* no outage was on */
  int64_t full = 50000, prev_full = 0;
  int began = 0;
  for (int i = 0; i < 12; i++) {
    int64_t d = -1;
    tenure_outage_step step = 99;
    OK(tenure_outage_failed(o, 0, i % 2 ? TENURE_BUSY : TENURE_STORE, i % 2 ? TRY_AGAIN : AWAY, &d, &step));
    if (i > 0) CHECK(step == TENURE_OUTAGE_RETRY);
    if (step == TENURE_OUTAGE_BEGAN) began++;
    CHECK(d >= full / 2 && d <= full);
    CHECK(d <= 2000000);
    prev_full = full;
    full = full * 2 > 2000000 ? 2000000 : full * 2;
  }
  CHECK(began == 1);
  CHECK(prev_full == 2000000); /* the cap was reached */
  sleep_ms(20);
  OK(tenure_outage_succeeded(o, 0, &us));
  CHECK(us >= 20000);
  OK(tenure_outage_succeeded(o, 0, &us));
  CHECK(us == -1);
  /* A new outage begins again from 50 ms. */
  int64_t d = -1;
  tenure_outage_step step = 99;
  OK(tenure_outage_failed(o, 0, TENURE_BUSY, TRY_AGAIN, &d, &step));
  CHECK(step == TENURE_OUTAGE_BEGAN && d >= 25000 && d <= 50000);
  /* Other failures are no outage: 1 s, RETRY, and they do not end one. */
  OK(tenure_outage_failed(o, 0, TENURE_INVALID_ARGUMENT, AWAY, &d, &step));
  CHECK(step == TENURE_OUTAGE_RETRY && d == 1000000);
  OK(tenure_outage_failed(o, 0, TENURE_STORE, "store error: disk full", &d, &step));
  CHECK(step == TENURE_OUTAGE_RETRY && d == 1000000);
  OK(tenure_outage_failed(o, 0, TENURE_BUSY, "busy: the writer lock is held", &d, &step));
  CHECK(step == TENURE_OUTAGE_RETRY && d == 1000000);
  OK(tenure_outage_failed(o, 0, TENURE_NOT_FOUND, "not found: p", &d, &step));
  CHECK(step == TENURE_OUTAGE_RETRY && d == 1000000);
  OK(tenure_outage_succeeded(o, 0, &us));
  CHECK(us >= 0); /* the outage begun above */
  tenure_outage_free(o);

  /* A limit: STOP once the server has been away that long, with how long. */
  OK(tenure_outage_new(100000, 1, &o));
  OK(tenure_outage_failed(o, 0, TENURE_STORE, AWAY, &d, &step));
  CHECK(step == TENURE_OUTAGE_BEGAN);
  OK(tenure_outage_failed(o, 0, TENURE_STORE, AWAY, &d, &step));
  CHECK(step == TENURE_OUTAGE_RETRY);
  sleep_ms(120);
  OK(tenure_outage_failed(o, 0, TENURE_STORE, AWAY, &d, &step));
  CHECK(step == TENURE_OUTAGE_STOP && d >= 100000);
  OK(tenure_outage_failed(o, 0, TENURE_STORE, AWAY, &d, &step));
  CHECK(step == TENURE_OUTAGE_STOP);
  tenure_outage_free(o);
  OK(tenure_outage_new(0, 1, &o));
  OK(tenure_outage_failed(o, 0, TENURE_STORE, AWAY, &d, &step));
  CHECK(step == TENURE_OUTAGE_STOP);
  tenure_outage_free(o);
}

/* Shared by threads: the failures of all are one outage, BEGAN once. */
struct outage_arg {
  tenure_outage *o;
  size_t slot;
  int *began;
};

static void *fail_often(void *p) {
  struct outage_arg *arg = p;
  for (int i = 0; i < 50; i++) {
    int64_t d = 0;
    tenure_outage_step step = 99;
    if (tenure_outage_failed(arg->o, arg->slot, TENURE_STORE, AWAY, &d, &step) != TENURE_OK) return NULL;
    if (step == TENURE_OUTAGE_BEGAN) __atomic_add_fetch(arg->began, 1, __ATOMIC_SEQ_CST);
  }
  return NULL;
}

static void a_shared_outage_counts_once(void) {
  tenure_outage *o = NULL;
  int began = 0;
  OK(tenure_outage_new(INT64_MIN, 5, &o));
  pthread_t t[4];
  struct outage_arg args[4];
  for (size_t i = 0; i < 4; i++) {
    args[i] = (struct outage_arg){o, i, &began};
    REQUIRE(pthread_create(&t[i], NULL, fail_often, &args[i]) == 0);
  }
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  CHECK(began == 1);
  int64_t us = 7;
  OK(tenure_outage_succeeded(o, 4, &us)); /* slot 4 never saw it */
  CHECK(us == -1);
  for (size_t i = 0; i < 3; i++) {
    OK(tenure_outage_succeeded(o, i, &us)); /* slot 3 still sees it */
    CHECK(us == -1);
  }
  OK(tenure_outage_succeeded(o, 3, &us)); /* the last one that saw it */
  CHECK(us >= 0);
  /* Each slot backs off on its own: slot 4's first pause is 50 ms. */
  int64_t d = -1;
  tenure_outage_step step = 99;
  OK(tenure_outage_failed(o, 0, TENURE_STORE, AWAY, &d, &step));
  CHECK(step == TENURE_OUTAGE_BEGAN && d <= 50000);
  OK(tenure_outage_failed(o, 4, TENURE_STORE, AWAY, &d, &step));
  CHECK(step == TENURE_OUTAGE_RETRY && d <= 50000);
  tenure_outage_free(o);
  /* Past the limit every slot is told to stop. */
  OK(tenure_outage_new(0, 2, &o));
  OK(tenure_outage_failed(o, 0, TENURE_STORE, AWAY, &d, &step));
  CHECK(step == TENURE_OUTAGE_STOP);
  OK(tenure_outage_failed(o, 1, TENURE_STORE, AWAY, &d, &step));
  CHECK(step == TENURE_OUTAGE_STOP);
  tenure_outage_free(o);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s SCRATCH_DIR\n", argv[0]);
    return 2;
  }
  wakes_on_submit_from_another_thread(argv[1]);
  times_out_and_changes_nothing(argv[1]);
  a_cancel_handle_ends_the_wait(argv[1]);
  cancel_waits_ends_every_wait_of_the_authority(argv[1]);
  a_keeper_keeps_a_short_lease_alive_and_stops(argv[1]);
  a_keeper_reports_refusals_and_closed_leases(argv[1]);
  a_keeper_outlives_its_lease_and_authority_handles(argv[1]);
  the_outage_rule_backs_off_reports_once_and_stops();
  a_shared_outage_counts_once();
  return finish();
}
