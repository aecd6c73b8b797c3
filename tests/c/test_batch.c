/* The batched calls of ABI 1.1: claim-next of many jobs, and complete,
 * release, fail and renew of many leases, on an authority (one outcome per
 * lease) and inside an edit (all or nothing). Mixed batches with stale,
 * expired, cancelled, closed and foreign leases and a duplicate give each
 * lease its own status and leave the refused jobs untouched (state, event
 * log, facts). Bad input for these calls is in test_bad_input.c.
 * Usage: test_batch DIR (runs against PostgreSQL when the harness says so). */
#include <stdint.h>
#include <time.h>

#include "harness.h"

#define TTL INT64_C(60000000)

static void sleep_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static tenure_job_state state_of(tenure_authority *a, const char *p, const char *job) {
  tenure_job_view *v = NULL;
  REQUIRE(tenure_authority_job(a, p, job, &v) == TENURE_OK);
  tenure_job_state s = tenure_job_view_state(v);
  tenure_job_view_free(v);
  return s;
}

static size_t fact_count(tenure_authority *a, const char *p, const char *job) {
  tenure_fact_list *fl = NULL;
  REQUIRE(tenure_authority_facts(a, p, job, &fl) == TENURE_OK);
  size_t n = tenure_fact_list_len(fl);
  tenure_fact_list_free(fl);
  return n;
}

static tenure_lease *claim(tenure_authority *a, const char *p, const char *job, int64_t ttl) {
  tenure_lease *l = NULL;
  REQUIRE(tenure_authority_claim(a, p, job, "w", ttl, &l) == TENURE_OK);
  return l;
}

/* A lease that is no longer its job's current claim (but still locally
 * active): released through an imported copy, then the job claimed again. */
static tenure_lease *stale_lease(tenure_authority *a, const char *p, const char *job,
                                 tenure_lease **current) {
  tenure_lease *old = claim(a, p, job, TTL);
  char token[2100];
  size_t size = 0;
  REQUIRE(tenure_lease_export_token(old, token, sizeof token, &size) == TENURE_OK);
  tenure_lease *copy = NULL;
  REQUIRE(tenure_authority_import_lease(a, token, &copy) == TENURE_OK);
  memset(token, 0, sizeof token);
  tenure_job_state js = 0;
  REQUIRE(tenure_lease_release(copy, &js) == TENURE_OK);
  tenure_lease_free(copy);
  *current = claim(a, p, job, TTL);
  return old;
}

/* The mixed batch every transition is tried with: leases[0] good,
 * [1] stale, [2] expired, [3] cancelled, [4] closed, [5] foreign (another
 * handle's), [6] the same lease as [0], [7] good. */
enum { MIXED = 8 };
static const tenure_status WANT[MIXED] = {
    TENURE_OK,        TENURE_STALE_LEASE,      TENURE_LEASE_EXPIRED,
    TENURE_CANCELLED, TENURE_LEASE_CLOSED,     TENURE_INVALID_ARGUMENT,
    TENURE_INVALID_ARGUMENT, TENURE_OK};

typedef struct {
  tenure_lease *own[MIXED]; /* to free (NULL where shared) */
  tenure_lease *current;    /* the stale job's current lease */
  const tenure_lease *leases[MIXED];
  char jobs[MIXED][32];
} mixed;

static void make_mixed(tenure_authority *a, tenure_authority *b, const char *p,
                       const char *tag, mixed *m) {
  memset(m, 0, sizeof *m);
  make_production(a, p);
  for (int i = 0; i < MIXED; i++) {
    snprintf(m->jobs[i], sizeof m->jobs[i], "%s-%d", tag, i);
    if (i != 6)
      submit_job(a, p, m->jobs[i], 3);
  }
  m->own[2] = claim(a, p, m->jobs[2], 1000000); /* expires first */
  m->own[0] = claim(a, p, m->jobs[0], TTL);
  m->own[1] = stale_lease(a, p, m->jobs[1], &m->current);
  m->own[3] = claim(a, p, m->jobs[3], TTL);
  tenure_cancelled c = 0;
  REQUIRE(tenure_authority_cancel(a, p, m->jobs[3], &c) == TENURE_OK);
  m->own[4] = claim(a, p, m->jobs[4], TTL);
  REQUIRE(tenure_lease_complete(m->own[4], NULL, 0) == TENURE_OK);
  REQUIRE(tenure_authority_claim(b, p, m->jobs[5], "w", TTL, &m->own[5]) == TENURE_OK);
  m->own[7] = claim(a, p, m->jobs[7], TTL);
  for (int i = 0; i < MIXED; i++)
    m->leases[i] = i == 6 ? m->own[0] : m->own[i];
  snprintf(m->jobs[6], sizeof m->jobs[6], "%s", m->jobs[0]);
  sleep_us(1500000); /* past leases[2]'s expiry */
}

static void free_mixed(mixed *m) {
  for (int i = 0; i < MIXED; i++)
    tenure_lease_free(m->own[i]);
  tenure_lease_free(m->current);
}

/* States of the refused jobs before the batch, to compare after. */
static void refused_states(tenure_authority *a, const char *p, const mixed *m,
                           tenure_job_state out[MIXED]) {
  for (int i = 1; i <= 5; i++)
    out[i] = state_of(a, p, m->jobs[i]);
}

static void check_statuses(const tenure_status *got, const char *what) {
  for (int i = 0; i < MIXED; i++) {
    if (got[i] != WANT[i])
      fprintf(stderr, "%s: lease %d got %s, want %s\n", what, i,
              tenure_status_name(got[i]), tenure_status_name(WANT[i]));
    CHECK(got[i] == WANT[i]);
  }
}

static void check_refused_untouched(tenure_authority *a, const char *p, const mixed *m,
                                    const tenure_job_state before[MIXED]) {
  for (int i = 1; i <= 5; i++)
    CHECK(state_of(a, p, m->jobs[i]) == before[i]);
  /* the local status of a refused lease stays as it was */
  CHECK(tenure_lease_status_get(m->leases[1]) == TENURE_LEASE_STATUS_ACTIVE);
  CHECK(tenure_lease_status_get(m->leases[3]) == TENURE_LEASE_STATUS_ACTIVE);
  CHECK(tenure_lease_status_get(m->leases[5]) == TENURE_LEASE_STATUS_ACTIVE);
}

static void mixed_complete(tenure_authority *a, tenure_authority *b) {
  mixed m;
  make_mixed(a, b, "pc", "c", &m);
  tenure_job_state before[MIXED];
  refused_states(a, "pc", &m, before);
  size_t events = event_count(a);
  size_t facts_closed = fact_count(a, "pc", m.jobs[4]);

  tenure_fact f0[] = {{"artifact", "zero"}};
  tenure_fact f7[] = {{"artifact", "seven"}, {"size", "7"}};
  const tenure_fact *facts[MIXED] = {f0, f0, NULL, f0, f0, f0, f0, f7};
  size_t n_facts[MIXED] = {1, 1, 0, 1, 1, 1, 1, 2};
  tenure_status st[MIXED];
  OK(tenure_authority_complete_many(a, m.leases, facts, n_facts, MIXED, st));
  check_statuses(st, "complete_many");

  CHECK(state_of(a, "pc", m.jobs[0]) == TENURE_JOB_COMPLETED);
  CHECK(state_of(a, "pc", m.jobs[7]) == TENURE_JOB_COMPLETED);
  CHECK(tenure_lease_status_get(m.leases[0]) == TENURE_LEASE_STATUS_CLOSED);
  check_refused_untouched(a, "pc", &m, before);
  CHECK(event_count(a) == events + 2); /* one `completed` per accepted lease */
  CHECK(fact_count(a, "pc", m.jobs[1]) == 0);
  CHECK(fact_count(a, "pc", m.jobs[3]) == 0);
  CHECK(fact_count(a, "pc", m.jobs[4]) == facts_closed);
  /* each accepted lease got its own facts (plus provenance), the duplicate's
   * were not applied */
  tenure_fact_list *fl = NULL;
  OK(tenure_authority_facts(a, "pc", m.jobs[7], &fl));
  int seven = 0, zero = 0;
  for (size_t i = 0; i < tenure_fact_list_len(fl); i++)
    seven += streq(tenure_fact_list_value(fl, i), "seven");
  tenure_fact_list_free(fl);
  OK(tenure_authority_facts(a, "pc", m.jobs[0], &fl));
  for (size_t i = 0; i < tenure_fact_list_len(fl); i++)
    zero += streq(tenure_fact_list_key(fl, i), "artifact");
  tenure_fact_list_free(fl);
  CHECK(seven == 1 && zero == 1);

  /* the stale job's current lease is still good */
  OK(tenure_lease_complete(m.current, NULL, 0));
  free_mixed(&m);
}

static void mixed_release_fail_renew(tenure_authority *a, tenure_authority *b) {
  tenure_status st[MIXED];
  tenure_job_state js[MIXED];
  tenure_job_state before[MIXED];

  mixed m;
  make_mixed(a, b, "pr", "r", &m);
  refused_states(a, "pr", &m, before);
  size_t events = event_count(a);
  memset(js, 0xff, sizeof js);
  OK(tenure_authority_release_many(a, m.leases, MIXED, st, js));
  check_statuses(st, "release_many");
  CHECK(js[0] == TENURE_JOB_REQUESTED && js[7] == TENURE_JOB_REQUESTED);
  CHECK(js[1] == TENURE_JOB_ANY && js[6] == TENURE_JOB_ANY);
  CHECK(state_of(a, "pr", m.jobs[0]) == TENURE_JOB_REQUESTED);
  CHECK(tenure_lease_status_get(m.leases[0]) == TENURE_LEASE_STATUS_CLOSED);
  check_refused_untouched(a, "pr", &m, before);
  CHECK(event_count(a) == events + 2);
  free_mixed(&m);

  make_mixed(a, b, "pf", "f", &m);
  refused_states(a, "pf", &m, before);
  events = event_count(a);
  const char *reasons[MIXED] = {"disk full", "x", "x", "x", "x", "x", "x", "bad input"};
  bool permanent[MIXED] = {false, false, false, false, false, false, true, true};
  OK(tenure_authority_fail_many(a, m.leases, reasons, permanent, MIXED, st, NULL));
  check_statuses(st, "fail_many");
  CHECK(state_of(a, "pf", m.jobs[0]) == TENURE_JOB_REQUESTED); /* retryable */
  CHECK(state_of(a, "pf", m.jobs[7]) == TENURE_JOB_FAILED);    /* permanent */
  check_refused_untouched(a, "pf", &m, before);
  CHECK(event_count(a) == events + 2);
  free_mixed(&m);

  make_mixed(a, b, "pn", "n", &m);
  refused_states(a, "pn", &m, before);
  events = event_count(a);
  int64_t exp0 = tenure_lease_expires_us(m.leases[0]);
  int64_t exp1 = tenure_lease_expires_us(m.leases[1]);
  OK(tenure_authority_renew_many(a, m.leases, MIXED, TTL * 2, st));
  check_statuses(st, "renew_many");
  CHECK(tenure_lease_expires_us(m.leases[0]) > exp0);
  CHECK(tenure_lease_expires_us(m.leases[1]) == exp1);
  CHECK(tenure_lease_status_get(m.leases[0]) == TENURE_LEASE_STATUS_ACTIVE);
  check_refused_untouched(a, "pn", &m, before);
  CHECK(event_count(a) == events + 2);
  free_mixed(&m);
}

static void claim_many(tenure_authority *a) {
  make_production(a, "cm");
  tenure_lease *out[8];
  size_t count = 99;
  for (int i = 0; i < 8; i++)
    out[i] = (tenure_lease *)0x1;
  OK(tenure_authority_claim_next_many(a, "cm", "w", TTL, 8, out, &count));
  CHECK(count == 0 && out[0] == (tenure_lease *)0x1); /* none: not an error */

  char job[16];
  for (int i = 0; i < 5; i++) {
    snprintf(job, sizeof job, "j%d", i);
    submit_job(a, "cm", job, 3);
  }
  OK(tenure_authority_claim_next_many(a, "cm", "w", TTL, 3, out, &count));
  CHECK(count == 3);
  CHECK(streq(tenure_lease_job(out[0]), "j0") && streq(tenure_lease_job(out[2]), "j2"));
  CHECK(strcmp(tenure_lease_claim_id(out[0]), tenure_lease_claim_id(out[1])) != 0);
  CHECK(tenure_lease_attempt(out[1]) == 1);
  tenure_lease *rest[8];
  for (int i = 0; i < 8; i++)
    rest[i] = (tenure_lease *)0x1;
  OK(tenure_authority_claim_next_many(a, "cm", "w", TTL, 8, rest, &count));
  CHECK(count == 2 && rest[2] == (tenure_lease *)0x1); /* fewer: the rest untouched */
  CHECK(state_of(a, "cm", "j4") == TENURE_JOB_CLAIMED);
  /* An out array of TENURE_MAX_BATCH is enough for any n: a larger n is
   * refused before the array is touched. */
  tenure_lease *room[TENURE_MAX_BATCH];
  room[0] = (tenure_lease *)0x1;
  count = 77;
  CHECK(tenure_authority_claim_next_many(a, "cm", "w", TTL, SIZE_MAX, room, &count) ==
        TENURE_INVALID_ARGUMENT);
  CHECK(count == 77 && room[0] == (tenure_lease *)0x1);

  tenure_lease *all[5] = {out[0], out[1], out[2], rest[0], rest[1]};
  tenure_status st[5];
  OK(tenure_authority_complete_many(a, (const tenure_lease *const *)all, NULL, NULL, 5, st));
  for (int i = 0; i < 5; i++) {
    CHECK(st[i] == TENURE_OK);
    tenure_lease_free(all[i]);
  }
  CHECK(state_of(a, "cm", "j3") == TENURE_JOB_COMPLETED);
}

static void in_an_edit(tenure_authority *a) {
  make_production(a, "ed");
  submit_job(a, "ed", "e0", 3);
  submit_job(a, "ed", "e1", 3);
  submit_job(a, "ed", "e2", 3);
  tenure_edit *e = NULL;
  OK(tenure_edit_begin(a, &e));
  tenure_lease *l[3] = {NULL, NULL, NULL};
  size_t count = 0;
  OK(tenure_edit_claim_next_many(e, "ed", "w", TTL, 3, l, &count));
  REQUIRE(count == 3);
  CHECK(tenure_lease_status_get(l[0]) == TENURE_LEASE_STATUS_PENDING);
  OK(tenure_edit_commit(e));
  tenure_edit_free(e);
  CHECK(tenure_lease_status_get(l[2]) == TENURE_LEASE_STATUS_ACTIVE);

  /* a duplicate refuses the whole batch; nothing changes, the edit stays
   * usable */
  tenure_lease *dup[3] = {l[0], l[1], l[0]};
  tenure_status st[3] = {77, 77, 77};
  size_t events = event_count(a);
  OK(tenure_edit_begin(a, &e));
  EXPECT(tenure_edit_complete_many(e, (const tenure_lease *const *)dup, NULL, NULL, 3, st),
         TENURE_INVALID_ARGUMENT);
  CHECK(st[0] == 77); /* out-array untouched on failure */
  const char *reasons[3] = {"a", "b", "c"};
  bool perm[3] = {false, false, false};
  tenure_job_state js[3];
  EXPECT(tenure_edit_fail_many(e, (const tenure_lease *const *)dup, reasons, perm, 3, st, js),
         TENURE_INVALID_ARGUMENT);
  EXPECT(tenure_edit_release_many(e, (const tenure_lease *const *)dup, 3, st, js),
         TENURE_INVALID_ARGUMENT);
  EXPECT(tenure_edit_renew_many(e, (const tenure_lease *const *)dup, 3, TTL, st),
         TENURE_INVALID_ARGUMENT);
  OK(tenure_edit_renew_many(e, (const tenure_lease *const *)l, 3, TTL * 2, st));
  CHECK(st[0] == TENURE_OK && st[2] == TENURE_OK);
  OK(tenure_edit_release_many(e, (const tenure_lease *const *)l, 2, st, js));
  CHECK(js[0] == TENURE_JOB_REQUESTED);
  CHECK(tenure_lease_status_get(l[0]) == TENURE_LEASE_STATUS_ACTIVE); /* until commit */
  OK(tenure_edit_commit(e));
  tenure_edit_free(e);
  CHECK(event_count(a) == events + 5); /* 3 renewals, 2 releases */
  CHECK(tenure_lease_status_get(l[0]) == TENURE_LEASE_STATUS_CLOSED);
  CHECK(state_of(a, "ed", "e1") == TENURE_JOB_REQUESTED);

  /* a refused lease (closed) makes the whole edit batch fail with its status */
  tenure_lease *mix[2] = {l[2], l[0]};
  OK(tenure_edit_begin(a, &e));
  EXPECT(tenure_edit_complete_many(e, (const tenure_lease *const *)mix, NULL, NULL, 2, st),
         TENURE_LEASE_CLOSED);
  tenure_fact f[] = {{"k", "v"}};
  const tenure_fact *fs[1] = {f};
  size_t nf[1] = {1};
  OK(tenure_edit_complete_many(e, (const tenure_lease *const *)&l[2], fs, nf, 1, st));
  OK(tenure_edit_commit(e));
  tenure_edit_free(e);
  CHECK(state_of(a, "ed", "e2") == TENURE_JOB_COMPLETED);
  CHECK(state_of(a, "ed", "e0") == TENURE_JOB_REQUESTED);
  for (int i = 0; i < 3; i++)
    tenure_lease_free(l[i]);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s SCRATCH_DIR\n", argv[0]);
    return 2;
  }
  tenure_authority *a = open_store(argv[1], "batch.db");
  tenure_authority *b = open_store(argv[1], "batch.db"); /* another handle */
  mixed_complete(a, b);
  mixed_release_fail_renew(a, b);
  claim_many(a);
  in_an_edit(a);
  tenure_authority_free(b);
  tenure_authority_free(a);
  return finish();
}
