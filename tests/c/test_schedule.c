/* Scheduling, back-off and hold limits through the C ABI 1.1
 * (docs/design.md, "Scheduling and hold limits"): a job submitted with a
 * not-before delay is not claimable before it and is after (a waiting
 * claim-next takes it when it becomes due); fail_retry_after parks the job
 * for its delay (0: at once, whatever back-off applies); a production's
 * back-off applies when no delay is named, a job's own back-off overrides
 * it, and clearing it makes retries due at once; a hold limit caps claims
 * and renewals and refuses a renewal it stops with TENURE_HOLD_LIMIT,
 * changing nothing; the job options are content (hold limit, back-off) or
 * not (delay) for resubmissions; the edit forms do the same inside an edit.
 * Bad input for these calls is in test_bad_input.c.
 * Usage: test_schedule DIR (runs against PostgreSQL when the harness says so). */
#include <stdint.h>

#include "harness.h"

#define TTL INT64_C(60000000)
#define SEC INT64_C(1000000)

static int64_t now_us(tenure_authority *a) {
  int64_t now = 0, mark = 0;
  bool blocked = false;
  REQUIRE(tenure_authority_clock(a, &now, &mark, &blocked) == TENURE_OK);
  return now > mark ? now : mark;
}

static tenure_job_view *view(tenure_authority *a, const char *p, const char *job) {
  tenure_job_view *v = NULL;
  REQUIRE(tenure_authority_job(a, p, job, &v) == TENURE_OK);
  return v;
}

/* The job's due time, or -1 if it has none. */
static int64_t due_of(tenure_authority *a, const char *p, const char *job) {
  tenure_job_view *v = view(a, p, job);
  int64_t due = -1;
  if (!tenure_job_view_due_us(v, &due)) due = -1;
  tenure_job_view_free(v);
  return due;
}

static tenure_job_options *options(int64_t not_before, int64_t max_hold, int64_t base, int64_t cap) {
  tenure_job_options *o = NULL;
  REQUIRE(tenure_job_options_new(&o) == TENURE_OK);
  if (not_before >= 0) REQUIRE(tenure_job_options_set_not_before(o, not_before) == TENURE_OK);
  if (max_hold >= 0) REQUIRE(tenure_job_options_set_max_hold(o, max_hold) == TENURE_OK);
  if (base >= 0) REQUIRE(tenure_job_options_set_backoff(o, base, cap) == TENURE_OK);
  return o;
}

static tenure_submitted submit_with(tenure_authority *a, const char *p, const char *job,
                                    const tenure_job_options *o, tenure_status want) {
  tenure_job_spec spec;
  REQUIRE(tenure_job_spec_init(&spec) == TENURE_OK);
  spec.job = job;
  spec.max_attempts = 5;
  tenure_submitted s = 0;
  EXPECT(tenure_authority_submit_with(a, p, &spec, o, &s), want);
  return s;
}

static tenure_lease *claim(tenure_authority *a, const char *p, const char *job, int64_t ttl) {
  tenure_lease *l = NULL;
  REQUIRE(tenure_authority_claim(a, p, job, "w", ttl, &l) == TENURE_OK);
  return l;
}

/* A job with a not-before delay: due at submission + delay; neither a named
 * claim nor claim-next takes it before; a waiting claim-next takes it once
 * due, not before. Zero delay and NULL options are due at once. */
static void a_delayed_job_is_not_claimable_until_due(const char *dir) {
  tenure_authority *a = open_store(dir, "delay.db");
  make_production(a, "p");
  tenure_job_options *o = options(3 * SEC / 2, -1, -1, 0);
  int64_t before = now_us(a);
  CHECK(submit_with(a, "p", "later", o, TENURE_OK) == TENURE_SUBMITTED_CREATED);
  int64_t after = now_us(a);
  tenure_job_view *v = view(a, "p", "later");
  int64_t due = 0;
  CHECK(tenure_job_view_due_us(v, &due));
  CHECK(due == tenure_job_view_created_us(v) + 3 * SEC / 2);
  CHECK(due >= before + 3 * SEC / 2 && due <= after + 3 * SEC / 2);
  int64_t us = 7;
  CHECK(!tenure_job_view_max_hold_us(v, &us) && !tenure_job_view_backoff_base_us(v, &us) &&
        !tenure_job_view_backoff_cap_us(v, &us) && us == 7);
  tenure_job_view_free(v);

  tenure_lease *l = NULL;
  EXPECT(tenure_authority_claim(a, "p", "later", "w", TTL, &l), TENURE_NOT_CLAIMABLE);
  CHECK(l == NULL);
  EXPECT(tenure_authority_claim_next(a, "p", "w", TTL, &l), TENURE_NO_JOB_AVAILABLE);
  CHECK(l == NULL);

  /* a waiting claim-next wakes when the job becomes due */
  OK(tenure_authority_claim_next_wait(a, "p", "w", TTL, 10 * SEC, NULL, &l));
  REQUIRE(l != NULL);
  CHECK(streq(tenure_lease_job(l), "later"));
  CHECK(tenure_lease_expires_us(l) - TTL >= due);
  CHECK(due_of(a, "p", "later") == -1); /* a claim clears it */
  OK(tenure_lease_complete(l, NULL, 0));
  tenure_lease_free(l);

  /* zero delay and no options: claimable at once, no due time shown */
  tenure_job_options *zero = options(0, -1, -1, 0);
  submit_with(a, "p", "zero", zero, TENURE_OK);
  submit_with(a, "p", "plain", NULL, TENURE_OK);
  CHECK(due_of(a, "p", "plain") == -1);
  tenure_lease *z = claim(a, "p", "zero", TTL);
  tenure_lease *n = claim(a, "p", "plain", TTL);
  tenure_lease_free(z);
  tenure_lease_free(n);

  /* the handle is reusable and read only during the call: freed, the job
   * keeps its delay */
  submit_with(a, "p", "later-2", o, TENURE_OK);
  tenure_job_options_free(o);
  tenure_job_options_free(zero);
  CHECK(due_of(a, "p", "later-2") > now_us(a));
  EXPECT(tenure_authority_claim(a, "p", "later-2", "w", TTL, &l), TENURE_NOT_CLAIMABLE);
  tenure_authority_free(a);
}

/* A refused setter leaves the handle as it was. The delay is not content;
 * the hold limit and the back-off are. */
static void job_options_and_resubmission(const char *dir) {
  tenure_authority *a = open_store(dir, "content.db");
  make_production(a, "p");
  tenure_job_options *o = options(3600 * SEC, 5 * SEC, SEC, 4 * SEC);
  EXPECT(tenure_job_options_set_not_before(o, -1), TENURE_INVALID_DURATION);
  EXPECT(tenure_job_options_set_max_hold(o, INT64_MAX), TENURE_INVALID_DURATION);
  EXPECT(tenure_job_options_set_backoff(o, 2 * SEC, SEC), TENURE_INVALID_DURATION);
  submit_with(a, "p", "j", o, TENURE_OK);
  tenure_job_view *v = view(a, "p", "j");
  int64_t due = 0, hold = 0, base = 0, cap = 0;
  CHECK(tenure_job_view_due_us(v, &due) && due == tenure_job_view_created_us(v) + 3600 * SEC);
  CHECK(tenure_job_view_max_hold_us(v, &hold) && hold == 5 * SEC);
  CHECK(tenure_job_view_backoff_base_us(v, &base) && base == SEC);
  CHECK(tenure_job_view_backoff_cap_us(v, &cap) && cap == 4 * SEC);
  tenure_job_view_free(v);

  /* another delay: existing, due time unchanged */
  OK(tenure_job_options_set_not_before(o, 0));
  CHECK(submit_with(a, "p", "j", o, TENURE_OK) == TENURE_SUBMITTED_EXISTING);
  CHECK(due_of(a, "p", "j") == due);
  /* no options at all: different content (no hold limit, no back-off) */
  size_t events = event_count(a);
  submit_with(a, "p", "j", NULL, TENURE_CONFLICT);
  /* another hold limit, another back-off: conflict */
  OK(tenure_job_options_set_max_hold(o, 6 * SEC));
  submit_with(a, "p", "j", o, TENURE_CONFLICT);
  OK(tenure_job_options_set_max_hold(o, 5 * SEC));
  OK(tenure_job_options_set_backoff(o, SEC, 8 * SEC));
  submit_with(a, "p", "j", o, TENURE_CONFLICT);
  OK(tenure_job_options_set_backoff(o, SEC, 4 * SEC));
  CHECK(submit_with(a, "p", "j", o, TENURE_OK) == TENURE_SUBMITTED_EXISTING);
  CHECK(event_count(a) == events);
  /* a zero hold limit is refused by the core at submission */
  OK(tenure_job_options_set_max_hold(o, 0));
  submit_with(a, "p", "zero-hold", o, TENURE_INVALID_DURATION);
  tenure_job_view *none = NULL;
  EXPECT(tenure_authority_job(a, "p", "zero-hold", &none), TENURE_NOT_FOUND);
  CHECK(event_count(a) == events);
  tenure_job_options_free(o);
  tenure_authority_free(a);
}

/* fail_retry_after parks the job for its delay; zero is at once even with
 * a production back-off. */
static void fail_retry_after_parks_the_job(const char *dir) {
  tenure_authority *a = open_store(dir, "retry.db");
  make_production(a, "p");
  OK(tenure_authority_set_production_backoff(a, "p", 3600 * SEC, 3600 * SEC));
  submit_with(a, "p", "j", NULL, TENURE_OK);
  tenure_lease *l = claim(a, "p", "j", TTL);
  int64_t before = now_us(a);
  tenure_job_state st = 0;
  OK(tenure_lease_fail_retry_after(l, "try later", 3 * SEC / 2, &st));
  int64_t after = now_us(a);
  CHECK(st == TENURE_JOB_REQUESTED);
  CHECK(tenure_lease_status_get(l) == TENURE_LEASE_STATUS_CLOSED);
  tenure_lease_free(l);
  int64_t due = due_of(a, "p", "j");
  CHECK(due >= before + 3 * SEC / 2 && due <= after + 3 * SEC / 2);
  tenure_job_view *v = view(a, "p", "j");
  CHECK(streq(tenure_job_view_last_error(v), "try later"));
  tenure_job_view_free(v);
  l = NULL;
  EXPECT(tenure_authority_claim(a, "p", "j", "w", TTL, &l), TENURE_NOT_CLAIMABLE);
  EXPECT(tenure_authority_claim_next(a, "p", "w", TTL, &l), TENURE_NO_JOB_AVAILABLE);
  OK(tenure_authority_claim_next_wait(a, "p", "w", TTL, 10 * SEC, NULL, &l));
  REQUIRE(l != NULL);
  CHECK(tenure_lease_attempt(l) == 2 && tenure_lease_expires_us(l) - TTL >= due);

  /* zero: at once, whatever back-off the production has */
  OK(tenure_lease_fail_retry_after(l, "again", 0, &st));
  CHECK(st == TENURE_JOB_REQUESTED && due_of(a, "p", "j") == -1);
  tenure_lease_free(l);
  l = claim(a, "p", "j", TTL);

  /* in an edit: parked when the edit commits */
  tenure_edit *e = NULL;
  OK(tenure_edit_begin(a, &e));
  OK(tenure_edit_fail_retry_after(e, l, "edit", 3600 * SEC, &st));
  CHECK(st == TENURE_JOB_REQUESTED);
  OK(tenure_edit_commit(e));
  tenure_edit_free(e);
  CHECK(due_of(a, "p", "j") >= after + 3600 * SEC);
  tenure_lease_free(l);

  /* the last attempt fails the job whatever the delay */
  submit_job(a, "p", "once", 1);
  l = claim(a, "p", "once", TTL);
  OK(tenure_lease_fail_retry_after(l, "last", SEC, &st));
  CHECK(st == TENURE_JOB_FAILED && due_of(a, "p", "once") == -1);
  tenure_lease_free(l);
  tenure_authority_free(a);
}

static void production_backoff(tenure_authority *a, const char *p, int64_t *base, int64_t *cap,
                               bool *has) {
  tenure_production_list *pl = NULL;
  REQUIRE(tenure_authority_productions(a, &pl) == TENURE_OK);
  *has = false;
  for (size_t i = 0; i < tenure_production_list_len(pl); i++) {
    if (!streq(tenure_production_list_name(pl, i), p)) continue;
    bool b = tenure_production_list_backoff_base_us(pl, i, base);
    bool c = tenure_production_list_backoff_cap_us(pl, i, cap);
    CHECK(b == c);
    *has = b;
  }
  tenure_production_list_free(pl);
}

/* The delay of a retryable failure that names none: the job's back-off,
 * else the production's (exponential, capped), else at once. */
static void back_off_applies_when_no_delay_is_named(const char *dir) {
  tenure_authority *a = open_store(dir, "backoff.db");
  make_production(a, "p");
  int64_t base = 0, cap = 0;
  bool has = true;
  production_backoff(a, "p", &base, &cap, &has);
  CHECK(!has);
  OK(tenure_authority_set_production_backoff(a, "p", 10 * SEC, 25 * SEC));
  production_backoff(a, "p", &base, &cap, &has);
  CHECK(has && base == 10 * SEC && cap == 25 * SEC);

  submit_with(a, "p", "j", NULL, TENURE_OK);

  /* attempts 1, 2, 3 of "j": base 400 ms, then 800 ms capped at 700 ms,
   * each claimed again by a waiting claim-next once due */
  OK(tenure_authority_set_production_backoff(a, "p", 400000, 700000));
  const int64_t want[3] = {400000, 700000, 700000};
  tenure_lease *l = claim(a, "p", "j", TTL);
  for (int i = 0; i < 3; i++) {
    CHECK(tenure_lease_attempt(l) == (uint32_t)i + 1);
    int64_t before = now_us(a);
    tenure_job_state st = 0;
    OK(tenure_lease_fail(l, "r", false, &st));
    int64_t after = now_us(a);
    CHECK(st == TENURE_JOB_REQUESTED);
    tenure_lease_free(l);
    int64_t due = due_of(a, "p", "j");
    CHECK(due >= before + want[i] && due <= after + want[i]);
    l = NULL;
    EXPECT(tenure_authority_claim(a, "p", "j", "w", TTL, &l), TENURE_NOT_CLAIMABLE);
    OK(tenure_authority_claim_next_wait(a, "p", "w", TTL, 10 * SEC, NULL, &l));
    REQUIRE(l != NULL);
    CHECK(streq(tenure_lease_job(l), "j") && tenure_lease_expires_us(l) - TTL >= due);
  }
  tenure_job_state st = 0;
  OK(tenure_lease_complete(l, NULL, 0));
  tenure_lease_free(l);

  /* the job's own back-off overrides the production's */
  tenure_job_options *own = options(-1, -1, 100 * SEC, 100 * SEC);
  submit_with(a, "p", "own", own, TENURE_OK);
  tenure_job_options_free(own);
  l = claim(a, "p", "own", TTL);
  int64_t before = now_us(a);
  OK(tenure_lease_fail(l, "r", false, &st));
  int64_t after = now_us(a);
  tenure_lease_free(l);
  int64_t due = due_of(a, "p", "own");
  CHECK(due >= before + 100 * SEC && due <= after + 100 * SEC);

  /* a permanent failure and a release never delay */
  submit_with(a, "p", "rel", NULL, TENURE_OK);
  l = claim(a, "p", "rel", TTL);
  OK(tenure_lease_release(l, &st));
  CHECK(st == TENURE_JOB_REQUESTED && due_of(a, "p", "rel") == -1);
  tenure_lease_free(l);

  /* cleared (inside an edit): at once */
  tenure_edit *e = NULL;
  OK(tenure_edit_begin(a, &e));
  OK(tenure_edit_clear_production_backoff(e, "p"));
  OK(tenure_edit_commit(e));
  tenure_edit_free(e);
  production_backoff(a, "p", &base, &cap, &has);
  CHECK(!has);
  l = claim(a, "p", "rel", TTL);
  OK(tenure_lease_fail(l, "r", false, &st));
  CHECK(st == TENURE_JOB_REQUESTED && due_of(a, "p", "rel") == -1);
  tenure_lease_free(l);
  l = claim(a, "p", "rel", TTL); /* claimable at once */
  tenure_lease_free(l);

  /* set inside an edit, cleared on the authority */
  OK(tenure_edit_begin(a, &e));
  OK(tenure_edit_set_production_backoff(e, "p", SEC, 2 * SEC));
  OK(tenure_edit_commit(e));
  tenure_edit_free(e);
  production_backoff(a, "p", &base, &cap, &has);
  CHECK(has && base == SEC && cap == 2 * SEC);
  OK(tenure_authority_clear_production_backoff(a, "p"));
  OK(tenure_authority_clear_production_backoff(a, "p")); /* no-op */
  production_backoff(a, "p", &base, &cap, &has);
  CHECK(!has);
  EXPECT(tenure_authority_set_production_backoff(a, "nope", SEC, SEC), TENURE_NOT_FOUND);
  tenure_authority_free(a);
}

/* The hold limit caps a claim's expiry at claim time + limit; a renewal it
 * only shortens succeeds with the capped expiry; one it stops is
 * TENURE_HOLD_LIMIT and changes nothing. */
static void the_hold_limit_caps_claims_and_renewals(const char *dir) {
  tenure_authority *a = open_store(dir, "hold.db");
  make_production(a, "p");
  tenure_job_options *o = options(-1, 3 * SEC, -1, 0);
  submit_with(a, "p", "capped", o, TENURE_OK);
  submit_with(a, "p", "short", o, TENURE_OK);
  tenure_job_options_free(o);

  /* claimed for 60 s: the claim itself is capped at claim time + 3 s */
  int64_t before = now_us(a);
  tenure_lease *l = claim(a, "p", "capped", TTL);
  int64_t after = now_us(a);
  int64_t exp = tenure_lease_expires_us(l);
  CHECK(exp >= before + 3 * SEC && exp <= after + 3 * SEC);
  size_t events = event_count(a);
  EXPECT(tenure_lease_renew(l, TTL), TENURE_HOLD_LIMIT);
  CHECK(tenure_lease_expires_us(l) == exp && event_count(a) == events);
  CHECK(tenure_lease_status_get(l) == TENURE_LEASE_STATUS_ACTIVE);
  tenure_job_view *v = view(a, "p", "capped");
  int64_t vexp = 0;
  CHECK(tenure_job_view_expires_us(v, &vexp) && vexp == exp);
  tenure_job_view_free(v);
  /* in an edit: refused the same way, the edit stays usable */
  tenure_edit *e = NULL;
  OK(tenure_edit_begin(a, &e));
  EXPECT(tenure_edit_renew(e, l, TTL), TENURE_HOLD_LIMIT);
  OK(tenure_edit_commit(e));
  tenure_edit_free(e);
  CHECK(tenure_lease_expires_us(l) == exp && event_count(a) == events);
  OK(tenure_lease_complete(l, NULL, 0));
  tenure_lease_free(l);

  /* claimed for 1 s: a renewal for 60 s is shortened to claim time + 3 s,
   * the next one is refused */
  l = claim(a, "p", "short", SEC);
  int64_t claimed_at = tenure_lease_expires_us(l) - SEC;
  OK(tenure_lease_renew(l, TTL));
  CHECK(tenure_lease_expires_us(l) == claimed_at + 3 * SEC);
  events = event_count(a);
  EXPECT(tenure_lease_renew(l, TTL), TENURE_HOLD_LIMIT);
  CHECK(tenure_lease_expires_us(l) == claimed_at + 3 * SEC && event_count(a) == events);
  tenure_job_state st = 0;
  OK(tenure_lease_release(l, &st));
  tenure_lease_free(l);
  tenure_authority_free(a);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s SCRATCH_DIR\n", argv[0]);
    return 2;
  }
  a_delayed_job_is_not_claimable_until_due(argv[1]);
  job_options_and_resubmission(argv[1]);
  fail_retry_after_parks_the_job(argv[1]);
  back_off_applies_when_no_delay_is_named(argv[1]);
  the_hold_limit_caps_claims_and_renewals(argv[1]);
  return finish();
}
