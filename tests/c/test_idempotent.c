/* Idempotent calls through the C ABI 1.1 (docs/design.md, "Idempotent
 * calls"): a claim retried under its request handle answers with the same
 * lease and changes nothing; another secret under the same ID or other
 * arguments is TENURE_CONFLICT; transitions retried by a copy of the lease
 * that never heard the answer (an imported token) are replays; other facts
 * are TENURE_CONFLICT; bad request IDs and NULL out-parameters are
 * TENURE_INVALID_ARGUMENT and change nothing.
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
  bad_input_is_invalid_and_changes_nothing(argv[1]);
  return finish();
}
