/* Idempotent calls through the C ABI 1.1 and their 1.2 names (docs/design.md, "Idempotent
 * calls"): a claim retried under its request handle answers with the same
 * lease and changes nothing; another secret under the same ID or other
 * arguments is TENURE_CONFLICT; transitions retried by a copy of the lease
 * that never heard the answer (an imported token) are replays; other facts
 * are TENURE_CONFLICT; bad request IDs and NULL out-parameters are
 * TENURE_INVALID_ARGUMENT and change nothing. A batch claimed under one
 * request replays member by member (a member that ended answers its own
 * status in its slot); the batched idempotent transitions give each lease
 * its own status and replayed flag; the claims under a request inside an
 * edit are pending until the commit and replay after it. The `_idempotent`
 * names of the claims (ABI 1.2) are the same functions.
 * Usage: test_idempotent DIR (runs against PostgreSQL when the harness says so). */
#include <stdint.h>

#include "harness.h"

#define TTL INT64_C(60000000)

/* A second handle on `l` whose local state never heard of `l`'s calls. */
static tenure_lease *copy_of(tenure_authority *a, tenure_lease *l) {
  char tok[2100];
  size_t n = 0;
  REQUIRE(tenure_lease_export_token(l, tok, sizeof tok, &n) == TENURE_OK);
  tenure_lease *c = NULL;
  REQUIRE(tenure_authority_import_lease(a, tok, &c) == TENURE_OK);
  return c;
}

static void a_claim_retried_under_its_request_returns_the_same_lease(const char *dir) {
  tenure_authority *a = open_store(dir, "claim.db");
  make_production(a, "p");
  submit_job(a, "p", "j0", 3);
  submit_job(a, "p", "j1", 3);
  tenure_claim_request *r = NULL, *other = NULL;
  OK(tenure_claim_request_new("req-1", &r));
  OK(tenure_claim_request_new("req-1", &other));
  tenure_lease *l1 = NULL, *l2 = NULL, *untouched = NULL;
  bool replayed = true;
  OK(tenure_authority_claim_with(a, "p", "j0", "w", TTL, r, &l1, &replayed));
  CHECK(!replayed);
  size_t events = event_count(a);
  OK(tenure_authority_claim_with(a, "p", "j0", "w", TTL, r, &l2, &replayed));
  CHECK(replayed);
  CHECK(strcmp(tenure_lease_claim_id(l1), tenure_lease_claim_id(l2)) == 0);
  CHECK(tenure_lease_attempt(l2) == 1 && event_count(a) == events);
  EXPECT(tenure_authority_claim_with(a, "p", "j0", "w", TTL, other, &untouched, &replayed),
         TENURE_CONFLICT);
  EXPECT(tenure_authority_claim_with(a, "p", "j0", "w2", TTL, r, &untouched, &replayed),
         TENURE_CONFLICT);
  EXPECT(tenure_authority_claim_next_with(a, "p", "w", TTL, r, &untouched, &replayed),
         TENURE_CONFLICT);
  CHECK(untouched == NULL && event_count(a) == events);
  /* Claim-next under its own request replays its job. */
  tenure_claim_request *n = NULL;
  OK(tenure_claim_request_new("req-2", &n));
  tenure_lease *n1 = NULL, *n2 = NULL;
  OK(tenure_authority_claim_next_with(a, "p", "w", TTL, n, &n1, &replayed));
  CHECK(!replayed && strcmp(tenure_lease_job(n1), "j1") == 0);
  OK(tenure_authority_claim_next_with(a, "p", "w", TTL, n, &n2, &replayed));
  CHECK(replayed && strcmp(tenure_lease_claim_id(n1), tenure_lease_claim_id(n2)) == 0);
  tenure_job_state st = 0;
  OK(tenure_lease_release(l1, &st));
  OK(tenure_lease_release(n1, &st));
  tenure_lease_free(l1);
  tenure_lease_free(l2);
  tenure_lease_free(n1);
  tenure_lease_free(n2);
  tenure_claim_request_free(r);
  tenure_claim_request_free(other);
  tenure_claim_request_free(n);
  tenure_authority_free(a);
}

static void transitions_retried_after_they_committed_are_replays(const char *dir) {
  tenure_authority *a = open_store(dir, "transitions.db");
  make_production(a, "p");
  submit_job(a, "p", "j0", 3);
  submit_job(a, "p", "j1", 3);
  tenure_lease *l = NULL;
  OK(tenure_authority_claim(a, "p", "j0", "w", TTL, &l));
  tenure_lease *c = copy_of(a, l), *d = copy_of(a, l);
  tenure_fact facts[1] = {{"out", "o1"}};
  tenure_fact others[1] = {{"out", "o2"}};
  OK(tenure_lease_complete(l, facts, 1));
  size_t events = event_count(a);
  bool replayed = false;
  EXPECT(tenure_lease_complete_idempotent(d, others, 1, &replayed), TENURE_CONFLICT);
  EXPECT(tenure_lease_complete(d, facts, 1), TENURE_LEASE_CLOSED);
  OK(tenure_lease_complete_idempotent(c, facts, 1, &replayed));
  CHECK(replayed && event_count(a) == events);
  tenure_lease_free(l);
  tenure_lease_free(c);
  tenure_lease_free(d);

  OK(tenure_authority_claim(a, "p", "j1", "w", TTL, &l));
  c = copy_of(a, l);
  d = copy_of(a, l);
  tenure_job_state st = 0;
  OK(tenure_lease_fail(l, "boom", false, &st));
  events = event_count(a);
  EXPECT(tenure_lease_fail_idempotent(d, "other", false, &st, &replayed), TENURE_CONFLICT);
  EXPECT(tenure_lease_release_idempotent(d, &st, &replayed), TENURE_LEASE_CLOSED);
  st = 0;
  OK(tenure_lease_fail_idempotent(c, "boom", false, &st, &replayed));
  CHECK(replayed && st == TENURE_JOB_REQUESTED && event_count(a) == events);
  tenure_lease_free(l);
  tenure_lease_free(c);
  tenure_lease_free(d);

  OK(tenure_authority_claim(a, "p", "j1", "w", TTL, &l));
  c = copy_of(a, l);
  OK(tenure_lease_release(l, &st));
  OK(tenure_lease_release_idempotent(c, &st, &replayed));
  CHECK(replayed && st == TENURE_JOB_REQUESTED);
  tenure_lease_free(l);
  tenure_lease_free(c);

  OK(tenure_authority_claim(a, "p", "j1", "w", TTL, &l));
  int64_t exp = 0;
  OK(tenure_lease_renew_idempotent(l, 2 * TTL, &exp, &replayed));
  CHECK(!replayed && exp == tenure_lease_expires_us(l));
  OK(tenure_lease_release(l, &st));
  tenure_lease_free(l);
  tenure_authority_free(a);
}

#define NONE_YET ((tenure_lease *)0x1)

/* Jobs j0 .. j<n-1> in production "p", 3 attempts each. */
static void submit_jobs(tenure_authority *a, int n) {
  for (int i = 0; i < n; i++) {
    char job[16];
    snprintf(job, sizeof job, "j%d", i);
    submit_job(a, "p", job, 3);
  }
}

static void a_batch_claimed_under_one_request_replays_member_by_member(const char *dir) {
  tenure_authority *a = open_store(dir, "batch_claim.db");
  make_production(a, "p");
  submit_jobs(a, 4);
  tenure_claim_request *r = NULL, *other = NULL;
  OK(tenure_claim_request_new("batch", &r));
  OK(tenure_claim_request_new("batch", &other));
  tenure_lease *ls[3] = {NULL, NULL, NULL}, *rs[3] = {NULL, NULL, NULL};
  tenure_status sts[3];
  size_t count = 0;
  bool replayed = true;
  OK(tenure_authority_claim_next_many_with(a, "p", "w", TTL, 3, r, ls, sts, &count, &replayed));
  CHECK(count == 3 && !replayed);
  for (size_t i = 0; i < 3; i++) {
    CHECK(sts[i] == TENURE_OK && ls[i] != NULL);
  }
  CHECK(streq(tenure_lease_job(ls[0]), "j0") && streq(tenure_lease_job(ls[2]), "j2"));
  size_t events = event_count(a);
  OK(tenure_authority_claim_next_many_with(a, "p", "w", TTL, 3, r, rs, sts, &count, &replayed));
  CHECK(count == 3 && replayed && event_count(a) == events);
  for (size_t i = 0; i < 3; i++) {
    CHECK(sts[i] == TENURE_OK);
    CHECK(streq(tenure_lease_claim_id(rs[i]), tenure_lease_claim_id(ls[i])));
    CHECK(tenure_lease_attempt(rs[i]) == 1);
    CHECK(tenure_lease_expires_us(rs[i]) == tenure_lease_expires_us(ls[i]));
    tenure_lease_free(rs[i]);
  }
  /* One member completed: its slot is its own status, the others replay. */
  OK(tenure_lease_complete(ls[1], NULL, 0));
  OK(tenure_authority_claim_next_many_with(a, "p", "w", TTL, 3, r, rs, sts, &count, &replayed));
  CHECK(count == 3 && replayed && event_count(a) == events + 1);
  CHECK(sts[0] == TENURE_OK && sts[1] == TENURE_LEASE_CLOSED && sts[2] == TENURE_OK);
  CHECK(rs[1] == NULL && rs[0] != NULL && rs[2] != NULL);
  CHECK(streq(tenure_lease_claim_id(rs[2]), tenure_lease_claim_id(ls[2])));
  tenure_lease_free(rs[0]);
  tenure_lease_free(rs[2]);
  /* Conflicts: another secret, another n, the ID used by a single claim. */
  tenure_lease *untouched[4] = {NULL, NULL, NULL, NULL};
  tenure_lease *one = NULL;
  tenure_status four[4];
  events = event_count(a);
  EXPECT(tenure_authority_claim_next_many_with(a, "p", "w", TTL, 3, other, untouched, sts, &count,
                                               &replayed),
         TENURE_CONFLICT);
  EXPECT(tenure_authority_claim_next_many_with(a, "p", "w", TTL, 4, r, untouched, four, &count,
                                               &replayed),
         TENURE_CONFLICT);
  EXPECT(tenure_authority_claim_next_with(a, "p", "w", TTL, r, &one, &replayed), TENURE_CONFLICT);
  CHECK(untouched[0] == NULL && one == NULL && event_count(a) == events);
  tenure_claim_request *single = NULL;
  OK(tenure_claim_request_new("single", &single));
  OK(tenure_authority_claim_next_with(a, "p", "w", TTL, single, &one, &replayed));
  events = event_count(a);
  EXPECT(tenure_authority_claim_next_many_with(a, "p", "w", TTL, 1, single, untouched, sts, &count,
                                               &replayed),
         TENURE_CONFLICT);
  CHECK(untouched[0] == NULL && event_count(a) == events);
  /* Nothing claimable: OK with no leases, the request stays unused; fewer
   * claimable than asked fills fewer slots and leaves the rest untouched. */
  make_production(a, "empty");
  tenure_claim_request *later = NULL;
  OK(tenure_claim_request_new("later", &later));
  tenure_lease *slots[4] = {NONE_YET, NONE_YET, NONE_YET, NONE_YET};
  tenure_status slot_st[4] = {TENURE_INTERNAL, TENURE_INTERNAL, TENURE_INTERNAL, TENURE_INTERNAL};
  count = 99;
  OK(tenure_authority_claim_next_many_with(a, "empty", "w", TTL, 4, later, slots, slot_st, &count,
                                           &replayed));
  CHECK(count == 0 && !replayed && slots[0] == NONE_YET && slot_st[0] == TENURE_INTERNAL);
  submit_job(a, "empty", "e0", 3);
  OK(tenure_authority_claim_next_many_with(a, "empty", "w", TTL, 4, later, slots, slot_st, &count,
                                           &replayed));
  CHECK(count == 1 && !replayed && slot_st[0] == TENURE_OK);
  CHECK(slots[1] == NONE_YET && slot_st[1] == TENURE_INTERNAL && slots[3] == NONE_YET);
  tenure_lease_free(slots[0]);
  tenure_job_state st = 0;
  OK(tenure_lease_release(one, &st));
  tenure_lease_free(one);
  for (size_t i = 0; i < 3; i++) {
    tenure_lease_free(ls[i]);
  }
  tenure_claim_request_free(r);
  tenure_claim_request_free(other);
  tenure_claim_request_free(single);
  tenure_claim_request_free(later);
  tenure_authority_free(a);
}

static void batched_transitions_give_each_lease_its_status_and_replay(const char *dir) {
  tenure_authority *a = open_store(dir, "batch_transitions.db");
  make_production(a, "p");
  submit_jobs(a, 4);
  tenure_lease *l[4] = {NULL, NULL, NULL, NULL}, *c[4];
  size_t count = 0;
  OK(tenure_authority_claim_next_many(a, "p", "w", TTL, 4, l, &count));
  REQUIRE(count == 4);
  for (size_t i = 0; i < 4; i++) {
    c[i] = copy_of(a, l[i]);
  }
  /* Second copies: a copy that was answered settles like the lease. */
  tenure_lease *e[2] = {copy_of(a, l[2]), copy_of(a, l[3])};
  tenure_status sts[2];
  bool rep[2] = {true, true};
  int64_t exp[2] = {-1, -1};
  /* Renew: fresh for both, each expiry written. */
  const tenure_lease *renew[2] = {l[0], l[1]};
  OK(tenure_authority_renew_many_idempotent(a, renew, 2, 2 * TTL, sts, exp, rep));
  CHECK(sts[0] == TENURE_OK && sts[1] == TENURE_OK && !rep[0] && !rep[1]);
  CHECK(exp[0] == tenure_lease_expires_us(l[0]) && exp[1] > 0);
  OK(tenure_authority_renew_many_idempotent(a, renew, 2, 2 * TTL, sts, NULL, NULL));
  /* Fail: c0 retries a failure l0 made (replay), c1 is fresh. */
  tenure_job_state st = 0;
  OK(tenure_lease_fail(l[0], "boom", false, &st));
  size_t events = event_count(a);
  const tenure_lease *fail[2] = {c[0], c[1]};
  const char *reasons[2] = {"boom", "bust"};
  const bool permanent[2] = {false, true};
  tenure_job_state states[2] = {0, 0};
  OK(tenure_authority_fail_many_idempotent(a, fail, reasons, permanent, 2, sts, states, rep));
  CHECK(sts[0] == TENURE_OK && sts[1] == TENURE_OK);
  CHECK(rep[0] && !rep[1]);
  CHECK(states[0] == TENURE_JOB_REQUESTED && states[1] == TENURE_JOB_FAILED);
  CHECK(event_count(a) == events + 1);
  /* Complete: c2 retries l2's completion (replay), c3 fresh; then other
   * facts for l2's other copy are a conflict in its slot, next to a
   * replay. */
  tenure_fact facts[1] = {{"out", "o"}};
  tenure_fact others[1] = {{"out", "x"}};
  OK(tenure_lease_complete(l[2], facts, 1));
  const tenure_lease *done[2] = {c[2], c[3]};
  const tenure_fact *fs[2] = {facts, facts};
  const size_t nf[2] = {1, 1};
  OK(tenure_authority_complete_many_idempotent(a, done, fs, nf, 2, sts, rep));
  CHECK(sts[0] == TENURE_OK && sts[1] == TENURE_OK && rep[0] && !rep[1]);
  const tenure_fact *ofs[2] = {others, facts};
  const tenure_lease *done_again[2] = {e[0], e[1]};
  events = event_count(a);
  OK(tenure_authority_complete_many_idempotent(a, done_again, ofs, nf, 2, sts, rep));
  CHECK(sts[0] == TENURE_CONFLICT && !rep[0]);
  CHECK(sts[1] == TENURE_OK && rep[1]);
  CHECK(event_count(a) == events);
  /* Release in a mixed batch: a replay next to a lease that failed
   * (LEASE_CLOSED: a release after a failure is no replay). */
  tenure_lease *again = NULL;
  OK(tenure_authority_claim(a, "p", "j0", "w", TTL, &again));
  tenure_lease *again_copy = copy_of(a, again);
  OK(tenure_lease_release(again, &st));
  const tenure_lease *rel[2] = {again_copy, c[1]};
  states[0] = states[1] = 0;
  OK(tenure_authority_release_many_idempotent(a, rel, 2, sts, states, rep));
  CHECK(sts[0] == TENURE_OK && rep[0] && states[0] == TENURE_JOB_REQUESTED);
  CHECK(sts[1] == TENURE_LEASE_CLOSED && !rep[1] && states[1] == TENURE_JOB_ANY);
  OK(tenure_authority_release_many_idempotent(a, rel, 2, sts, NULL, NULL));
  /* A failure with a retry delay, retried: a replay; another delay: a
   * conflict. */
  submit_job(a, "p", "k", 3);
  tenure_lease *d = NULL;
  OK(tenure_authority_claim(a, "p", "k", "w", TTL, &d));
  tenure_lease *dc = copy_of(a, d), *dd = copy_of(a, d);
  OK(tenure_lease_fail_retry_after(d, "later", INT64_C(5000000), &st));
  events = event_count(a);
  bool replayed = false;
  EXPECT(tenure_lease_fail_retry_after_idempotent(dd, "later", INT64_C(6000000), &st, &replayed),
         TENURE_CONFLICT);
  st = 0;
  OK(tenure_lease_fail_retry_after_idempotent(dc, "later", INT64_C(5000000), &st, &replayed));
  CHECK(replayed && st == TENURE_JOB_REQUESTED && event_count(a) == events);
  tenure_lease_free(d);
  tenure_lease_free(dc);
  tenure_lease_free(dd);
  tenure_lease_free(again);
  tenure_lease_free(again_copy);
  for (size_t i = 0; i < 4; i++) {
    tenure_lease_free(l[i]);
    tenure_lease_free(c[i]);
  }
  tenure_lease_free(e[0]);
  tenure_lease_free(e[1]);
  tenure_authority_free(a);
}

static void claims_under_a_request_in_an_edit_replay_after_the_commit(const char *dir) {
  tenure_authority *a = open_store(dir, "edit.db");
  make_production(a, "p");
  submit_jobs(a, 4);
  tenure_claim_request *rw = NULL, *rn = NULL, *rm = NULL;
  OK(tenure_claim_request_new("with", &rw));
  OK(tenure_claim_request_new("next", &rn));
  OK(tenure_claim_request_new("many", &rm));
  tenure_edit *e = NULL;
  OK(tenure_edit_begin(a, &e));
  tenure_lease *lw = NULL, *ln = NULL, *lm[2] = {NULL, NULL};
  tenure_status sts[2];
  size_t count = 0;
  bool replayed = true;
  OK(tenure_edit_claim_with(e, "p", "j3", "w", TTL, rw, &lw, &replayed));
  CHECK(!replayed && tenure_lease_status_get(lw) == TENURE_LEASE_STATUS_PENDING);
  OK(tenure_edit_claim_next_with(e, "p", "w", TTL, rn, &ln, &replayed));
  CHECK(!replayed && streq(tenure_lease_job(ln), "j0"));
  OK(tenure_edit_claim_next_many_with(e, "p", "w", TTL, 2, rm, lm, sts, &count, &replayed));
  CHECK(!replayed && count == 2 && sts[0] == TENURE_OK && sts[1] == TENURE_OK);
  CHECK(tenure_lease_status_get(lm[1]) == TENURE_LEASE_STATUS_PENDING);
  /* Inside the edit, a retry replays too. */
  tenure_lease *again = NULL;
  OK(tenure_edit_claim_with(e, "p", "j3", "w", TTL, rw, &again, &replayed));
  CHECK(replayed && streq(tenure_lease_claim_id(again), tenure_lease_claim_id(lw)));
  tenure_lease_free(again);
  OK(tenure_edit_commit(e));
  tenure_edit_free(e);
  CHECK(tenure_lease_status_get(lw) == TENURE_LEASE_STATUS_ACTIVE);
  size_t events = event_count(a);
  OK(tenure_authority_claim_with(a, "p", "j3", "w", TTL, rw, &again, &replayed));
  CHECK(replayed && streq(tenure_lease_claim_id(again), tenure_lease_claim_id(lw)));
  tenure_lease_free(again);
  OK(tenure_authority_claim_next_with(a, "p", "w", TTL, rn, &again, &replayed));
  CHECK(replayed && streq(tenure_lease_claim_id(again), tenure_lease_claim_id(ln)));
  tenure_lease_free(again);
  tenure_lease *rs[2] = {NULL, NULL};
  OK(tenure_authority_claim_next_many_with(a, "p", "w", TTL, 2, rm, rs, sts, &count, &replayed));
  CHECK(replayed && count == 2 && streq(tenure_lease_claim_id(rs[1]), tenure_lease_claim_id(lm[1])));
  CHECK(event_count(a) == events);
  tenure_lease_free(rs[0]);
  tenure_lease_free(rs[1]);
  /* An aborted edit recorded nothing: the request is fresh afterwards. */
  submit_job(a, "p", "j4", 3);
  tenure_claim_request *ra = NULL;
  OK(tenure_claim_request_new("aborted", &ra));
  OK(tenure_edit_begin(a, &e));
  tenure_lease *la = NULL;
  OK(tenure_edit_claim_next_with(e, "p", "w", TTL, ra, &la, &replayed));
  OK(tenure_edit_abort(e));
  tenure_edit_free(e);
  tenure_lease_free(la);
  la = NULL;
  OK(tenure_authority_claim_next_with(a, "p", "w", TTL, ra, &la, &replayed));
  CHECK(!replayed && streq(tenure_lease_job(la), "j4") && tenure_lease_attempt(la) == 1);
  tenure_lease_free(la);
  tenure_lease_free(lw);
  tenure_lease_free(ln);
  tenure_lease_free(lm[0]);
  tenure_lease_free(lm[1]);
  tenure_claim_request_free(rw);
  tenure_claim_request_free(rn);
  tenure_claim_request_free(rm);
  tenure_claim_request_free(ra);
  tenure_authority_free(a);
}

/* ABI 1.2: the `_idempotent` names of the claims under a request are the
 * `_with` functions: a request used by one name is replayed by the other,
 * on an authority and inside an edit, with the same statuses. */
static void the_idempotent_names_are_the_claims_under_a_request(const char *dir) {
  tenure_authority *a = open_store(dir, "names.db");
  make_production(a, "p");
  submit_jobs(a, 8);
  tenure_claim_request *r = NULL, *other = NULL, *n = NULL, *m = NULL;
  OK(tenure_claim_request_new("one", &r));
  OK(tenure_claim_request_new("one", &other));
  OK(tenure_claim_request_new("next", &n));
  OK(tenure_claim_request_new("many", &m));
  tenure_lease *l1 = NULL, *l2 = NULL, *l3 = NULL, *untouched = NULL;
  bool replayed = true;
  OK(tenure_authority_claim_idempotent(a, "p", "j5", "w", TTL, r, &l1, &replayed));
  CHECK(!replayed && streq(tenure_lease_job(l1), "j5"));
  size_t events = event_count(a);
  OK(tenure_authority_claim_with(a, "p", "j5", "w", TTL, r, &l2, &replayed));
  CHECK(replayed && streq(tenure_lease_claim_id(l1), tenure_lease_claim_id(l2)));
  replayed = false;
  OK(tenure_authority_claim_idempotent(a, "p", "j5", "w", TTL, r, &l3, &replayed));
  CHECK(replayed && streq(tenure_lease_claim_id(l1), tenure_lease_claim_id(l3)));
  EXPECT(tenure_authority_claim_idempotent(a, "p", "j5", "w", TTL, other, &untouched, &replayed),
         TENURE_CONFLICT);
  EXPECT(tenure_authority_claim_next_idempotent(a, "p", "w", TTL, r, &untouched, &replayed),
         TENURE_CONFLICT);
  EXPECT(tenure_authority_claim_idempotent(a, "p", "j5", "w", 0, r, &untouched, &replayed),
         TENURE_INVALID_DURATION);
  EXPECT(tenure_authority_claim_idempotent(a, "p", "j5", "w", TTL, NULL, &untouched, &replayed),
         TENURE_INVALID_ARGUMENT);
  CHECK(untouched == NULL && event_count(a) == events);

  tenure_lease *n1 = NULL, *n2 = NULL;
  OK(tenure_authority_claim_next_idempotent(a, "p", "w", TTL, n, &n1, &replayed));
  CHECK(!replayed && streq(tenure_lease_job(n1), "j0"));
  OK(tenure_authority_claim_next_with(a, "p", "w", TTL, n, &n2, &replayed));
  CHECK(replayed && streq(tenure_lease_claim_id(n1), tenure_lease_claim_id(n2)));

  tenure_lease *m1[2] = {NULL, NULL}, *m2[2] = {NULL, NULL};
  tenure_status sts[2] = {77, 77};
  size_t count = 0;
  OK(tenure_authority_claim_next_many_idempotent(a, "p", "w", TTL, 2, m, m1, sts, &count,
                                                 &replayed));
  CHECK(!replayed && count == 2 && sts[0] == TENURE_OK && sts[1] == TENURE_OK);
  OK(tenure_authority_claim_next_many_with(a, "p", "w", TTL, 2, m, m2, sts, &count, &replayed));
  CHECK(replayed && count == 2 && streq(tenure_lease_claim_id(m1[1]), tenure_lease_claim_id(m2[1])));
  tenure_lease *m3[3] = {NONE_YET, NONE_YET, NONE_YET};
  tenure_status sts3[3] = {77, 77, 77};
  EXPECT(tenure_authority_claim_next_many_idempotent(a, "p", "w", TTL, 3, m, m3, sts3, &count,
                                                     &replayed),
         TENURE_CONFLICT);
  CHECK(m3[0] == NONE_YET && sts3[0] == 77 && count == 2);

  /* Inside an edit: claimed under one name, replayed under the other, and
   * after the commit on the authority. */
  tenure_claim_request *er = NULL, *en = NULL, *em = NULL;
  OK(tenure_claim_request_new("edit-one", &er));
  OK(tenure_claim_request_new("edit-next", &en));
  OK(tenure_claim_request_new("edit-many", &em));
  tenure_edit *e = NULL;
  OK(tenure_edit_begin(a, &e));
  tenure_lease *e1 = NULL, *e2 = NULL, *again = NULL, *em1[2] = {NULL, NULL};
  OK(tenure_edit_claim_idempotent(e, "p", "j7", "w", TTL, er, &e1, &replayed));
  CHECK(!replayed && tenure_lease_status_get(e1) == TENURE_LEASE_STATUS_PENDING);
  OK(tenure_edit_claim_with(e, "p", "j7", "w", TTL, er, &again, &replayed));
  CHECK(replayed && streq(tenure_lease_claim_id(again), tenure_lease_claim_id(e1)));
  tenure_lease_free(again);
  OK(tenure_edit_claim_next_idempotent(e, "p", "w", TTL, en, &e2, &replayed));
  CHECK(!replayed && streq(tenure_lease_job(e2), "j3"));
  OK(tenure_edit_claim_next_with(e, "p", "w", TTL, en, &again, &replayed));
  CHECK(replayed && streq(tenure_lease_claim_id(again), tenure_lease_claim_id(e2)));
  tenure_lease_free(again);
  OK(tenure_edit_claim_next_many_idempotent(e, "p", "w", TTL, 1, em, em1, sts, &count, &replayed));
  CHECK(!replayed && count == 1 && streq(tenure_lease_job(em1[0]), "j4"));
  OK(tenure_edit_claim_next_many_with(e, "p", "w", TTL, 1, em, &em1[1], sts, &count, &replayed));
  CHECK(replayed && count == 1 && streq(tenure_lease_claim_id(em1[0]), tenure_lease_claim_id(em1[1])));
  OK(tenure_edit_commit(e));
  tenure_edit_free(e);
  events = event_count(a);
  OK(tenure_authority_claim_idempotent(a, "p", "j7", "w", TTL, er, &again, &replayed));
  CHECK(replayed && streq(tenure_lease_claim_id(again), tenure_lease_claim_id(e1)));
  tenure_lease_free(again);
  OK(tenure_authority_claim_next_idempotent(a, "p", "w", TTL, en, &again, &replayed));
  CHECK(replayed && streq(tenure_lease_claim_id(again), tenure_lease_claim_id(e2)));
  tenure_lease_free(again);
  tenure_lease *rs[1] = {NULL};
  OK(tenure_authority_claim_next_many_idempotent(a, "p", "w", TTL, 1, em, rs, sts, &count,
                                                 &replayed));
  CHECK(replayed && count == 1 && streq(tenure_lease_claim_id(rs[0]), tenure_lease_claim_id(em1[0])));
  tenure_lease_free(rs[0]);
  CHECK(event_count(a) == events);

  tenure_lease *all[] = {l1, l2, l3, n1, n2, m1[0], m1[1], m2[0], m2[1], e1, e2, em1[0], em1[1]};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tenure_lease_free(all[i]);
  tenure_claim_request *reqs[] = {r, other, n, m, er, en, em};
  for (size_t i = 0; i < sizeof reqs / sizeof reqs[0]; i++) tenure_claim_request_free(reqs[i]);
  tenure_authority_free(a);
}

static void bad_input_is_invalid_and_changes_nothing(const char *dir) {
  tenure_authority *a = open_store(dir, "bad.db");
  make_production(a, "p");
  submit_job(a, "p", "j0", 3);
  tenure_claim_request *r = NULL;
  char long_id[200];
  memset(long_id, 'r', sizeof long_id - 1);
  long_id[sizeof long_id - 1] = '\0';
  const char *bad[] = {"", " r", "a/b", long_id};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    EXPECT(tenure_claim_request_new(bad[i], &r), TENURE_INVALID_ARGUMENT);
    CHECK(r == NULL);
  }
  EXPECT(tenure_claim_request_new(NULL, &r), TENURE_INVALID_ARGUMENT);
  EXPECT(tenure_claim_request_new("r", NULL), TENURE_INVALID_ARGUMENT);
  OK(tenure_claim_request_new("r", &r));
  size_t events = event_count(a);
  tenure_lease *l = NULL;
  bool replayed = false;
  EXPECT(tenure_authority_claim_with(a, "p", "j0", "w", TTL, NULL, &l, &replayed),
         TENURE_INVALID_ARGUMENT);
  EXPECT(tenure_authority_claim_with(a, "p", "j0", "w", TTL, r, &l, NULL), TENURE_INVALID_ARGUMENT);
  EXPECT(tenure_authority_claim_next_with(a, "p", "w", TTL, r, NULL, &replayed),
         TENURE_INVALID_ARGUMENT);
  EXPECT(tenure_authority_claim_with(a, "p", "j0", "w", 0, r, &l, &replayed),
         TENURE_INVALID_DURATION);
  CHECK(l == NULL && event_count(a) == events);
  tenure_claim_request_free(r);
  tenure_claim_request_free(NULL);
  tenure_authority_free(a);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s SCRATCH_DIR\n", argv[0]);
    return 2;
  }
  a_claim_retried_under_its_request_returns_the_same_lease(argv[1]);
  transitions_retried_after_they_committed_are_replays(argv[1]);
  a_batch_claimed_under_one_request_replays_member_by_member(argv[1]);
  batched_transitions_give_each_lease_its_status_and_replay(argv[1]);
  claims_under_a_request_in_an_edit_replay_after_the_commit(argv[1]);
  the_idempotent_names_are_the_claims_under_a_request(argv[1]);
  bad_input_is_invalid_and_changes_nothing(argv[1]);
  return finish();
}
