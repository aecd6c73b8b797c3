/* Requeue, progress checkpoints, claims across productions and claim gates
 * through the C ABI 1.2 (docs/design.md, "Requeue", "Progress checkpoints",
 * "Claims across productions", "Claim gates"): a failed job requeued is claimable again with a new
 * claim ID while the old lease stays stale, a live job is refused with
 * TENURE_JOB_LIVE changing nothing; the current lease stores a checkpoint
 * that the job view shows and the next attempt after an expiry reads, a
 * stale lease's checkpoint is refused; claims across productions rotate;
 * a paused production, one at its concurrency limit and one over its rate
 * limit refuse a named claim with their own status, and
 * tenure_authority_production_gates() shows what is set.
 * Bad input: oversized progress, 0 or absurd extra attempts, unknown
 * productions and jobs, empty or NULL lists.
 * Usage: test_steering DIR (runs against PostgreSQL when the harness says so). */
#include <stdint.h>
#include <string.h>

#include "harness.h"

#define SEC INT64_C(1000000)

static tenure_lease *claim(tenure_authority *a, const char *p, const char *job, int64_t ttl) {
  tenure_lease *l = NULL;
  REQUIRE(tenure_authority_claim(a, p, job, "w", ttl, &l) == TENURE_OK);
  return l;
}

static void requeue_of_a_failed_job(const char *dir) {
  tenure_authority *a = open_store(dir, "requeue.db");
  make_production(a, "p");
  submit_job(a, "p", "j", 2);
  submit_job(a, "p", "live", 2);
  tenure_lease *old = claim(a, "p", "j", 60 * SEC);
  tenure_job_state st = 0;
  OK(tenure_lease_fail(old, "bad input", true, &st));
  CHECK(st == TENURE_JOB_FAILED);

  size_t events = event_count(a);
  EXPECT(tenure_authority_requeue(a, "p", "live", -1, 0), TENURE_JOB_LIVE);
  EXPECT(tenure_authority_requeue(a, "p", "j", 0, 0), TENURE_INVALID_ARGUMENT);
  EXPECT(tenure_authority_requeue(a, "p", "j", 1001, 0), TENURE_INVALID_ARGUMENT);
  EXPECT(tenure_authority_requeue(a, "p", "j", -2, 0), TENURE_INVALID_ARGUMENT);
  EXPECT(tenure_authority_requeue(a, "p", "j", -1, -1), TENURE_INVALID_DURATION);
  EXPECT(tenure_authority_requeue(a, "p", "nope", -1, 0), TENURE_NOT_FOUND);
  EXPECT(tenure_authority_requeue(a, "nope", "j", -1, 0), TENURE_NOT_FOUND);
  EXPECT(tenure_authority_requeue(a, "p", NULL, -1, 0), TENURE_INVALID_ARGUMENT);
  CHECK(event_count(a) == events);

  OK(tenure_authority_requeue(a, "p", "j", -1, 0));
  CHECK(event_count(a) == events + 1);
  tenure_job_view *v = NULL;
  OK(tenure_authority_job(a, "p", "j", &v));
  CHECK(tenure_job_view_state(v) == TENURE_JOB_REQUESTED && tenure_job_view_attempts(v) == 0);
  tenure_job_view_free(v);
  tenure_lease *l = claim(a, "p", "j", 60 * SEC);
  CHECK(strcmp(tenure_lease_claim_id(l), tenure_lease_claim_id(old)) != 0);
  OK(tenure_lease_fail(l, "again", true, &st));
  tenure_lease_free(l);

  uint64_t n = 99;
  bool more = true;
  EXPECT(tenure_authority_requeue_all(a, "p", -1, 0, 0, &n, &more), TENURE_INVALID_ARGUMENT);
  CHECK(n == 99 && more);
  OK(tenure_authority_requeue_all(a, "p", 1, 0, 10, &n, &more));
  CHECK(n == 1 && !more);
  tenure_lease_free(old);
  tenure_authority_free(a);
}

static void checkpoints_carry_to_the_next_attempt(const char *dir) {
  tenure_authority *a = open_store(dir, "progress.db");
  make_production(a, "p");
  submit_job(a, "p", "j", 3);
  tenure_lease *first = claim(a, "p", "j", SEC / 2);
  const uint8_t mark[] = {'o', 'f', 'f', '=', '7'};
  OK(tenure_lease_checkpoint(first, mark, sizeof mark));
  OK(tenure_lease_renew_checkpoint(first, SEC / 2, mark, sizeof mark));
  static uint8_t big[4097];
  size_t events = event_count(a);
  EXPECT(tenure_lease_checkpoint(first, big, sizeof big), TENURE_INVALID_ARGUMENT);
  EXPECT(tenure_lease_checkpoint(first, NULL, 3), TENURE_INVALID_ARGUMENT);
  EXPECT(tenure_lease_checkpoint(NULL, mark, 1), TENURE_INVALID_ARGUMENT);
  CHECK(event_count(a) == events);

  tenure_job_view *v = NULL;
  OK(tenure_authority_job(a, "p", "j", &v));
  CHECK(tenure_job_view_has_progress(v));
  CHECK(tenure_job_view_progress_len(v) == sizeof mark);
  CHECK(memcmp(tenure_job_view_progress(v), mark, sizeof mark) == 0);
  tenure_job_view_free(v);
  CHECK(!tenure_job_view_has_progress(NULL) && tenure_job_view_progress(NULL) == NULL);

  /* after the expiry: the old lease is refused, the next attempt reads it */
  tenure_lease *second = NULL;
  OK(tenure_authority_claim_next_wait(a, "p", "w2", 60 * SEC, 10 * SEC, NULL, &second));
  REQUIRE(second != NULL);
  CHECK(tenure_lease_attempt(second) == 2);
  EXPECT(tenure_lease_checkpoint(first, mark, 1), TENURE_STALE_LEASE);
  OK(tenure_authority_job(a, "p", "j", &v));
  CHECK(tenure_job_view_progress_len(v) == sizeof mark);
  CHECK(memcmp(tenure_job_view_progress(v), mark, sizeof mark) == 0);
  tenure_job_view_free(v);
  OK(tenure_lease_checkpoint(second, NULL, 0));
  tenure_lease_free(first);
  tenure_lease_free(second);
  tenure_authority_free(a);
}

static void claims_across_productions_rotate(const char *dir) {
  tenure_authority *a = open_store(dir, "across.db");
  const char *list[] = {"x", "y"};
  make_production(a, "x");
  make_production(a, "y");
  submit_job(a, "x", "x1", 1);
  submit_job(a, "x", "x2", 1);
  submit_job(a, "y", "y1", 1);
  const char *want[] = {"x", "y", "x"};
  for (int i = 0; i < 3; i++) {
    tenure_lease *l = NULL;
    OK(tenure_authority_claim_next_across(a, list, 2, "w", 60 * SEC, &l));
    REQUIRE(l != NULL);
    CHECK(streq(tenure_lease_production(l), want[i]));
    tenure_lease_free(l);
  }
  tenure_lease *l = NULL;
  EXPECT(tenure_authority_claim_next_across(a, list, 2, "w", 60 * SEC, &l), TENURE_NO_JOB_AVAILABLE);
  EXPECT(tenure_authority_claim_next_wait_across(a, list, 2, "w", 60 * SEC, 1000, NULL, &l),
         TENURE_NO_JOB_AVAILABLE);
  const char *bad[] = {"x", "nope"};
  EXPECT(tenure_authority_claim_next_across(a, bad, 2, "w", 60 * SEC, &l), TENURE_NOT_FOUND);
  const char *twice[] = {"x", "x"};
  EXPECT(tenure_authority_claim_next_across(a, twice, 2, "w", 60 * SEC, &l), TENURE_INVALID_ARGUMENT);
  EXPECT(tenure_authority_claim_next_across(a, list, 0, "w", 60 * SEC, &l), TENURE_INVALID_ARGUMENT);
  EXPECT(tenure_authority_claim_next_across(a, NULL, 2, "w", 60 * SEC, &l), TENURE_INVALID_ARGUMENT);
  CHECK(l == NULL);
  tenure_authority_free(a);
}

/* A batch across productions is shared out in rounds: each production
 * still in the round asked for its share of the claims still wanted, one
 * that gives fewer dropping out; nothing left is TENURE_OK with 0 leases. */
static void batched_claims_across_productions_share_in_rounds(const char *dir) {
  tenure_authority *a = open_store(dir, "many-across.db");
  const char *list[] = {"x", "y", "z"};
  make_production(a, "x");
  make_production(a, "y");
  make_production(a, "z");
  submit_job(a, "x", "x1", 1);
  submit_job(a, "x", "x2", 1);
  submit_job(a, "x", "x3", 1);
  submit_job(a, "y", "y1", 1);
  submit_job(a, "z", "z1", 1);
  submit_job(a, "z", "z2", 1);
  tenure_lease *slots[5];
  size_t count = 99;
  for (int i = 0; i < 5; i++) slots[i] = NULL;
  OK(tenure_authority_claim_next_many_across(a, list, 3, "w", 60 * SEC, 4, slots, &count));
  REQUIRE(count == 4);
  const char *first[] = {"x", "x", "y", "z"};
  for (size_t i = 0; i < count; i++) {
    REQUIRE(slots[i] != NULL);
    CHECK(streq(tenure_lease_production(slots[i]), first[i]));
    tenure_lease_free(slots[i]);
    slots[i] = NULL;
  }
  CHECK(slots[4] == NULL);
  /* The rotation starts after z: x gives its last job, y none, z its last. */
  OK(tenure_authority_claim_next_many_across(a, list, 3, "w", 60 * SEC, 5, slots, &count));
  REQUIRE(count == 2);
  CHECK(streq(tenure_lease_production(slots[0]), "x") && streq(tenure_lease_job(slots[0]), "x3"));
  CHECK(streq(tenure_lease_production(slots[1]), "z") && streq(tenure_lease_job(slots[1]), "z2"));
  tenure_lease_free(slots[0]);
  tenure_lease_free(slots[1]);
  slots[0] = slots[1] = NULL;
  count = 99;
  OK(tenure_authority_claim_next_many_across(a, list, 3, "w", 60 * SEC, 5, slots, &count));
  CHECK(count == 0 && slots[0] == NULL);
  const char *bad[] = {"x", "nope"};
  count = 99;
  EXPECT(tenure_authority_claim_next_many_across(a, bad, 2, "w", 60 * SEC, 2, slots, &count), TENURE_NOT_FOUND);
  EXPECT(tenure_authority_claim_next_many_across(a, list, 3, "w", 60 * SEC, 1001, slots, &count),
         TENURE_INVALID_ARGUMENT);
  CHECK(count == 99 && slots[0] == NULL);
  tenure_authority_free(a);
}

static void gates_refuse_claims_and_read_back(const char *dir) {
  tenure_authority *a = open_store(dir, "gates.db");
  make_production(a, "p");
  submit_job(a, "p", "j1", 1);
  submit_job(a, "p", "j2", 1);
  submit_job(a, "p", "j3", 1);
  tenure_gates *g = NULL;
  OK(tenure_authority_production_gates(a, "p", &g));
  REQUIRE(g != NULL);
  int64_t us = 7;
  uint32_t k = 7, n = 7, b = 7;
  CHECK(!tenure_gates_paused(g) && !tenure_gates_paused_us(g, &us) && us == 7);
  CHECK(!tenure_gates_concurrency_limit(g, &k) && k == 7);
  CHECK(!tenure_gates_rate_limit(g, &n, &us, &b) && n == 7 && us == 7 && b == 7);
  tenure_gates_free(g);

  bool changed = false;
  OK(tenure_authority_pause_production(a, "p", &changed));
  CHECK(changed);
  OK(tenure_authority_pause_production(a, "p", &changed));
  CHECK(!changed);
  tenure_lease *l = NULL;
  EXPECT(tenure_authority_claim(a, "p", "j1", "w", 60 * SEC, &l), TENURE_PRODUCTION_PAUSED);
  EXPECT(tenure_authority_claim_next(a, "p", "w", 60 * SEC, &l), TENURE_NO_JOB_AVAILABLE);
  CHECK(l == NULL);
  g = NULL;
  OK(tenure_authority_production_gates(a, "p", &g));
  CHECK(tenure_gates_paused(g) && tenure_gates_paused_us(g, &us) && us > 0);
  CHECK(!tenure_gates_paused_us(g, NULL));
  tenure_gates_free(g);
  OK(tenure_authority_resume_production(a, "p", &changed));
  CHECK(changed);

  OK(tenure_authority_set_concurrency_limit(a, "p", 1));
  tenure_lease *held = claim(a, "p", "j1", 60 * SEC);
  EXPECT(tenure_authority_claim(a, "p", "j2", "w", 60 * SEC, &l), TENURE_CONCURRENCY_LIMIT);
  CHECK(l == NULL);
  OK(tenure_authority_clear_concurrency_limit(a, "p"));

  OK(tenure_authority_set_rate_limit(a, "p", 1, 3600 * SEC, 1));
  g = NULL;
  OK(tenure_authority_production_gates(a, "p", &g));
  CHECK(!tenure_gates_paused(g) && !tenure_gates_concurrency_limit(g, &k));
  CHECK(tenure_gates_rate_limit(g, &n, &us, &b) && n == 1 && us == 3600 * SEC && b == 1);
  CHECK(!tenure_gates_rate_limit(g, &n, NULL, &b));
  tenure_gates_free(g);
  tenure_lease *second = claim(a, "p", "j2", 60 * SEC);
  EXPECT(tenure_authority_claim(a, "p", "j3", "w", 60 * SEC, &l), TENURE_RATE_LIMITED);
  CHECK(l == NULL);
  OK(tenure_authority_clear_rate_limit(a, "p"));

  OK(tenure_authority_set_concurrency_limit(a, "p", 5));
  g = NULL;
  OK(tenure_authority_production_gates(a, "p", &g));
  CHECK(tenure_gates_concurrency_limit(g, &k) && k == 5);
  CHECK(!tenure_gates_concurrency_limit(g, NULL));
  CHECK(!tenure_gates_rate_limit(g, &n, &us, &b));
  tenure_gates_free(g);
  tenure_gates_free(NULL);
  g = NULL;
  EXPECT(tenure_authority_production_gates(a, "nope", &g), TENURE_NOT_FOUND);
  CHECK(g == NULL);
  tenure_lease_free(held);
  tenure_lease_free(second);
  tenure_authority_free(a);
}

/* The gate calls of an edit that commits are in force after the commit,
 * and their clearing in a second committed edit lifts them. */
static void gate_calls_in_a_committed_edit_take_effect(const char *dir) {
  tenure_authority *a = open_store(dir, "gates-edit.db");
  make_production(a, "p");
  make_production(a, "q");
  submit_job(a, "p", "j1", 1);
  submit_job(a, "p", "j2", 1);
  submit_job(a, "q", "q1", 1);
  tenure_edit *e = NULL;
  bool changed = false;
  OK(tenure_edit_begin(a, &e));
  OK(tenure_edit_pause_production(e, "q", &changed));
  CHECK(changed);
  OK(tenure_edit_set_concurrency_limit(e, "p", 1));
  OK(tenure_edit_set_rate_limit(e, "p", 5, 3600 * SEC, 5));
  OK(tenure_edit_commit(e));
  tenure_edit_free(e);

  tenure_gates *g = NULL;
  uint32_t k = 0, n = 0, b = 0;
  int64_t us = 0;
  OK(tenure_authority_production_gates(a, "p", &g));
  CHECK(!tenure_gates_paused(g));
  CHECK(tenure_gates_concurrency_limit(g, &k) && k == 1);
  CHECK(tenure_gates_rate_limit(g, &n, &us, &b) && n == 5 && us == 3600 * SEC && b == 5);
  tenure_gates_free(g);
  g = NULL;
  OK(tenure_authority_production_gates(a, "q", &g));
  CHECK(tenure_gates_paused(g));
  tenure_gates_free(g);
  tenure_lease *l = NULL;
  EXPECT(tenure_authority_claim(a, "q", "q1", "w", 60 * SEC, &l), TENURE_PRODUCTION_PAUSED);
  tenure_lease *held = claim(a, "p", "j1", 60 * SEC);
  EXPECT(tenure_authority_claim(a, "p", "j2", "w", 60 * SEC, &l), TENURE_CONCURRENCY_LIMIT);
  CHECK(l == NULL);

  e = NULL;
  OK(tenure_edit_begin(a, &e));
  OK(tenure_edit_resume_production(e, "q", &changed));
  CHECK(changed);
  OK(tenure_edit_clear_concurrency_limit(e, "p"));
  OK(tenure_edit_clear_rate_limit(e, "p"));
  OK(tenure_edit_commit(e));
  tenure_edit_free(e);
  g = NULL;
  OK(tenure_authority_production_gates(a, "p", &g));
  CHECK(!tenure_gates_paused(g) && !tenure_gates_concurrency_limit(g, &k) &&
        !tenure_gates_rate_limit(g, &n, &us, &b));
  tenure_gates_free(g);
  tenure_lease *q1 = claim(a, "q", "q1", 60 * SEC);
  tenure_lease *j2 = claim(a, "p", "j2", 60 * SEC);
  tenure_lease_free(q1);
  tenure_lease_free(j2);
  tenure_lease_free(held);
  tenure_authority_free(a);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s SCRATCH_DIR\n", argv[0]);
    return 2;
  }
  requeue_of_a_failed_job(argv[1]);
  checkpoints_carry_to_the_next_attempt(argv[1]);
  claims_across_productions_rotate(argv[1]);
  batched_claims_across_productions_share_in_rounds(argv[1]);
  gates_refuse_claims_and_read_back(argv[1]);
  gate_calls_in_a_committed_edit_take_effect(argv[1]);
  return finish();
}
