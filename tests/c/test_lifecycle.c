/* The whole lease life cycle through the C ABI, and every status that C can
 * reach (TENURE_CLOCK_ROLLBACK is in test_clock.c, under libfaketime;
 * TENURE_INTERNAL needs a caught panic and is covered by the Rust unit test;
 * TENURE_HOLD_LIMIT, which needs a job submitted with a hold limit, is in
 * test_schedule.c).
 * Usage: test_lifecycle DIR (an empty scratch directory). Runs against
 * PostgreSQL instead when TENURE_TEST_BACKEND=postgres (see harness.h); the
 * SQLite-file checks (a foreign file, a raised user_version) are skipped
 * there. */
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static void sleep_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static void versions(void) {
  CHECK(tenure_abi_version() == (uint32_t)TENURE_ABI_VERSION);
  CHECK(tenure_abi_version() >> 16 == TENURE_ABI_MAJOR);
  CHECK(tenure_version() != NULL && strlen(tenure_version()) >= 5);
  CHECK(streq(tenure_status_name(TENURE_OK), "ok"));
  CHECK(streq(tenure_status_name(TENURE_STALE_LEASE), "stale_lease"));
  CHECK(streq(tenure_status_name(TENURE_INTERNAL), "internal"));
  CHECK(streq(tenure_status_name(TENURE_HISTORY_PRUNED), "history_pruned"));
  CHECK(streq(tenure_status_name(TENURE_PRODUCTION_LIVE), "production_live"));
  CHECK(streq(tenure_status_name(TENURE_PRODUCTION_PAUSED), "production_paused"));
  CHECK(streq(tenure_status_name(TENURE_CONCURRENCY_LIMIT), "concurrency_limit"));
  CHECK(streq(tenure_status_name(TENURE_RATE_LIMITED), "rate_limited"));
  CHECK(streq(tenure_status_name(TENURE_HOLD_LIMIT), "hold_limit"));
  CHECK(streq(tenure_status_name(TENURE_JOB_LIVE), "job_live"));
  CHECK(streq(tenure_status_name(29), "unknown"));
  CHECK(streq(tenure_status_name(UINT32_MAX), "unknown"));
  CHECK(streq(tenure_job_state_name(TENURE_JOB_COMPLETED), "completed"));
  CHECK(streq(tenure_job_state_name(99), "unknown"));
}

static void life_cycle(const char *dir) {
  tenure_authority *a = NULL;
  tenure_open_options opts;
  OK(tenure_open_options_init(&opts));
  CHECK(opts.struct_size == sizeof opts);
  opts.synchronous = TENURE_SYNCHRONOUS_NORMAL;
  OK(tenure_authority_open(store_addr(dir, "life.db"), &opts, &a));
  REQUIRE(a != NULL);

  bool created = false;
  OK(tenure_authority_create_production(a, "nightly", &created));
  CHECK(created);
  OK(tenure_authority_create_production(a, "nightly", &created));
  CHECK(!created);

  tenure_job_spec spec;
  OK(tenure_job_spec_init(&spec));
  CHECK(spec.max_attempts == 3 && spec.priority == 0);
  spec.job = "build-1";
  spec.payload = (const uint8_t *)"make all";
  spec.payload_len = 8;
  tenure_submitted sub = 0;
  OK(tenure_authority_submit(a, "nightly", &spec, &sub));
  CHECK(sub == TENURE_SUBMITTED_CREATED);
  OK(tenure_authority_submit(a, "nightly", &spec, &sub));
  CHECK(sub == TENURE_SUBMITTED_EXISTING);
  spec.priority = 5; /* same ID, different content */
  sub = 0;
  EXPECT(tenure_authority_submit(a, "nightly", &spec, &sub), TENURE_CONFLICT);
  CHECK(sub == 0); /* out-parameter untouched on failure */
  CHECK(strstr(last_error(), "build-1") != NULL);

  /* payload: size query, too small, exact */
  size_t len = 0;
  uint8_t small[4];
  uint8_t payload[64];
  EXPECT(tenure_authority_payload(a, "nightly", "build-1", NULL, 0, &len),
         TENURE_INVALID_ARGUMENT);
  CHECK(len == 8);
  len = 0;
  EXPECT(tenure_authority_payload(a, "nightly", "build-1", small, sizeof small,
                                  &len),
         TENURE_INVALID_ARGUMENT);
  CHECK(len == 8);
  OK(tenure_authority_payload(a, "nightly", "build-1", payload, sizeof payload,
                              &len));
  CHECK(len == 8 && memcmp(payload, "make all", 8) == 0);

  /* claim, accessors */
  tenure_lease *l = NULL;
  OK(tenure_authority_claim(a, "nightly", "build-1", "worker-7@host-3",
                            30000000, &l));
  REQUIRE(l != NULL);
  CHECK(streq(tenure_lease_production(l), "nightly"));
  CHECK(streq(tenure_lease_job(l), "build-1"));
  CHECK(streq(tenure_lease_holder(l), "worker-7@host-3"));
  const char *cid = tenure_lease_claim_id(l);
  CHECK(cid != NULL && strlen(cid) == 36 && cid[8] == '-' && cid[14] == '4');
  CHECK(tenure_lease_attempt(l) == 1);
  CHECK(tenure_lease_status_get(l) == TENURE_LEASE_STATUS_ACTIVE);
  int64_t exp1 = tenure_lease_expires_us(l);
  CHECK(exp1 > 0);

  /* the job view shows attribution, never the secret */
  tenure_job_view *v = NULL;
  OK(tenure_authority_job(a, "nightly", "build-1", &v));
  REQUIRE(v != NULL);
  CHECK(tenure_job_view_state(v) == TENURE_JOB_CLAIMED);
  CHECK(streq(tenure_job_view_production(v), "nightly"));
  CHECK(streq(tenure_job_view_job(v), "build-1"));
  CHECK(streq(tenure_job_view_holder(v), "worker-7@host-3"));
  CHECK(streq(tenure_job_view_claim_id(v), cid));
  int64_t vexp = 0;
  CHECK(tenure_job_view_expires_us(v, &vexp) && vexp == exp1);
  CHECK(tenure_job_view_attempts(v) == 1);
  CHECK(tenure_job_view_max_attempts(v) == 3);
  CHECK(tenure_job_view_priority(v) == 0);
  CHECK(tenure_job_view_payload_len(v) == 8);
  CHECK(tenure_job_view_created_us(v) > 0);
  CHECK(tenure_job_view_updated_us(v) >= tenure_job_view_created_us(v));
  CHECK(tenure_job_view_last_error(v) == NULL);
  tenure_job_view_free(v);

  /* not claimable while held; renew; not extended */
  tenure_lease *l2 = NULL;
  EXPECT(tenure_authority_claim(a, "nightly", "build-1", "other", 1000000, &l2),
         TENURE_NOT_CLAIMABLE);
  CHECK(l2 == NULL);
  OK(tenure_lease_renew(l, 60000000));
  CHECK(tenure_lease_expires_us(l) > exp1);
  EXPECT(tenure_lease_renew(l, 1), TENURE_NOT_EXTENDED);
  EXPECT(tenure_lease_renew(l, 0), TENURE_INVALID_DURATION);

  /* complete with facts; closed afterwards */
  tenure_fact facts[2] = {{"artifact", "build-1.tar"}, {"size", "42"}};
  OK(tenure_lease_complete(l, facts, 2));
  CHECK(tenure_lease_status_get(l) == TENURE_LEASE_STATUS_CLOSED);
  /* borrowed text stays the same pointer for the handle's life */
  CHECK(tenure_lease_claim_id(l) == cid && strlen(cid) == 36);
  const char *prod = tenure_lease_production(l);
  CHECK(tenure_lease_production(l) == prod && streq(prod, "nightly"));
  EXPECT(tenure_lease_complete(l, NULL, 0), TENURE_LEASE_CLOSED);
  EXPECT(tenure_lease_renew(l, 1000000), TENURE_LEASE_CLOSED);
  char tok[4096];
  size_t tsz = 0;
  EXPECT(tenure_lease_export_token(l, tok, sizeof tok, &tsz),
         TENURE_LEASE_CLOSED);
  tenure_job_state js = 0;
  EXPECT(tenure_lease_release(l, &js), TENURE_LEASE_CLOSED);
  tenure_lease_free(l);

  /* facts read back, provenance included */
  tenure_fact_list *fl = NULL;
  OK(tenure_authority_facts(a, "nightly", "build-1", &fl));
  REQUIRE(fl != NULL);
  size_t nf = tenure_fact_list_len(fl);
  int saw_artifact = 0, saw_claim = 0;
  for (size_t i = 0; i < nf; i++) {
    CHECK(streq(tenure_fact_list_job(fl, i), "build-1"));
    if (streq(tenure_fact_list_key(fl, i), "artifact"))
      saw_artifact = streq(tenure_fact_list_value(fl, i), "build-1.tar");
    if (streq(tenure_fact_list_key(fl, i), "tenure.claim_id"))
      saw_claim = 1;
  }
  CHECK(saw_artifact && saw_claim);
  CHECK(tenure_fact_list_key(fl, nf) == NULL);
  tenure_fact_list_free(fl);
  OK(tenure_authority_production_facts(a, "nightly", &fl));
  CHECK(tenure_fact_list_len(fl) == nf);
  tenure_fact_list_free(fl);

  /* cancelling a completed job is job_terminal */
  tenure_cancelled cres = 0;
  EXPECT(tenure_authority_cancel(a, "nightly", "build-1", &cres),
         TENURE_JOB_TERMINAL);
  CHECK(cres == 0);

  /* release and fail */
  submit_job(a, "nightly", "build-2", 2);
  OK(tenure_authority_claim_next(a, "nightly", "w", 30000000, &l));
  CHECK(streq(tenure_lease_job(l), "build-2"));
  OK(tenure_lease_release(l, &js));
  CHECK(js == TENURE_JOB_REQUESTED);
  tenure_lease_free(l);
  OK(tenure_authority_claim_next(a, "nightly", "w", 30000000, &l));
  CHECK(tenure_lease_attempt(l) == 2);
  OK(tenure_lease_fail(l, "compiler crashed", false, &js));
  CHECK(js == TENURE_JOB_FAILED); /* out of attempts */
  tenure_lease_free(l);
  OK(tenure_authority_job(a, "nightly", "build-2", &v));
  CHECK(streq(tenure_job_view_last_error(v), "compiler crashed"));
  CHECK(tenure_job_view_state(v) == TENURE_JOB_FAILED);
  tenure_job_view_free(v);
  l = NULL;
  EXPECT(tenure_authority_claim_next(a, "nightly", "w", 30000000, &l),
         TENURE_NO_JOB_AVAILABLE);
  CHECK(l == NULL);

  /* cancel: the lease is dead afterwards */
  submit_job(a, "nightly", "build-3", 3);
  OK(tenure_authority_claim(a, "nightly", "build-3", "w", 30000000, &l));
  OK(tenure_authority_cancel(a, "nightly", "build-3", &cres));
  CHECK(cres == TENURE_CANCELLED_NOW);
  OK(tenure_authority_cancel(a, "nightly", "build-3", &cres));
  CHECK(cres == TENURE_CANCELLED_ALREADY);
  EXPECT(tenure_lease_complete(l, NULL, 0), TENURE_CANCELLED);
  CHECK(tenure_lease_status_get(l) == TENURE_LEASE_STATUS_ACTIVE);
  tenure_lease_free(l);

  /* not found */
  EXPECT(tenure_authority_job(a, "nightly", "nope", &v), TENURE_NOT_FOUND);
  EXPECT(tenure_authority_claim(a, "ghost", "x", "w", 1000000, &l),
         TENURE_NOT_FOUND);

  /* expiry: expired, then stale once someone else claims */
  submit_job(a, "nightly", "build-4", 3);
  OK(tenure_authority_claim(a, "nightly", "build-4", "slow", 3000000, &l));
  sleep_us(3500000); /* waits past the expiry; no upper bound is asserted */
  OK(tenure_authority_job(a, "nightly", "build-4", &v));
  CHECK(tenure_job_view_state(v) == TENURE_JOB_EXPIRED);
  tenure_job_view_free(v);
  EXPECT(tenure_lease_renew(l, 30000000), TENURE_LEASE_EXPIRED);
  EXPECT(tenure_lease_complete(l, NULL, 0), TENURE_LEASE_EXPIRED);
  OK(tenure_authority_claim(a, "nightly", "build-4", "fast", 30000000, &l2));
  CHECK(tenure_lease_attempt(l2) == 2);
  EXPECT(tenure_lease_complete(l, NULL, 0), TENURE_STALE_LEASE);
  OK(tenure_lease_complete(l2, NULL, 0));
  tenure_lease_free(l);
  tenure_lease_free(l2);

  /* production cancel refuses new submissions */
  make_production(a, "doomed");
  submit_job(a, "doomed", "d1", 3);
  submit_job(a, "doomed", "d2", 3);
  uint64_t ncancelled = 0;
  OK(tenure_authority_cancel_production(a, "doomed", &ncancelled));
  CHECK(ncancelled == 2);
  OK(tenure_job_spec_init(&spec));
  spec.job = "d3";
  EXPECT(tenure_authority_submit(a, "doomed", &spec, &sub), TENURE_CANCELLED);

  /* productions listing */
  tenure_production_list *pl = NULL;
  OK(tenure_authority_productions(a, &pl));
  CHECK(tenure_production_list_len(pl) == 2);
  CHECK(streq(tenure_production_list_name(pl, 0), "doomed"));
  CHECK(streq(tenure_production_list_name(pl, 1), "nightly"));
  int64_t cus = 0;
  CHECK(tenure_production_list_cancelled_us(pl, 0, &cus) && cus > 0);
  CHECK(!tenure_production_list_cancelled_us(pl, 1, &cus));
  CHECK(tenure_production_list_created_us(pl, 1) > 0);
  CHECK(tenure_production_list_name(pl, 2) == NULL);
  tenure_production_list_free(pl);

  /* clock and check */
  int64_t now = 0, mark = 0;
  bool blocked = true;
  OK(tenure_authority_clock(a, &now, &mark, &blocked));
  CHECK(now > 0 && mark > 0 && !blocked);
  uint64_t violations = 99;
  OK(tenure_authority_check(a, &violations));
  CHECK(violations == 0);
  tenure_authority_free(a);
}

static void listing_and_events(const char *dir) {
  tenure_authority *a = open_store(dir, "list.db");
  make_production(a, "p");
  char id[32];
  for (int i = 0; i < 25; i++) {
    snprintf(id, sizeof id, "job-%02d", i);
    submit_job(a, "p", id, 3);
  }
  tenure_lease *l = NULL;
  OK(tenure_authority_claim(a, "p", "job-03", "w", 30000000, &l));

  /* page through all jobs, 10 at a time */
  tenure_list_query q;
  OK(tenure_list_query_init(&q));
  q.limit = 10;
  char after[64] = "";
  int seen = 0, pages = 0;
  for (;;) {
    q.after = after[0] ? after : NULL;
    tenure_job_list *jl = NULL;
    OK(tenure_authority_jobs(a, "p", &q, &jl));
    REQUIRE(jl != NULL);
    size_t n = tenure_job_list_len(jl);
    for (size_t i = 0; i < n; i++) {
      snprintf(id, sizeof id, "job-%02d", seen);
      CHECK(streq(tenure_job_view_job(tenure_job_list_get(jl, i)), id));
      seen++;
    }
    CHECK(tenure_job_list_get(jl, n) == NULL);
    if (n > 0)
      snprintf(after, sizeof after, "%s",
               tenure_job_view_job(tenure_job_list_get(jl, n - 1)));
    tenure_job_list_free(jl);
    pages++;
    if (n < 10)
      break;
  }
  CHECK(seen == 25 && pages == 3);

  /* filter by state; NULL query */
  OK(tenure_list_query_init(&q));
  q.state = TENURE_JOB_CLAIMED;
  tenure_job_list *jl = NULL;
  OK(tenure_authority_jobs(a, "p", &q, &jl));
  CHECK(tenure_job_list_len(jl) == 1);
  CHECK(streq(tenure_job_view_holder(tenure_job_list_get(jl, 0)), "w"));
  tenure_job_list_free(jl);
  OK(tenure_authority_jobs(a, "p", NULL, &jl));
  CHECK(tenure_job_list_len(jl) == 25);
  tenure_job_list_free(jl);
  q.state = 77;
  jl = NULL;
  EXPECT(tenure_authority_jobs(a, "p", &q, &jl), TENURE_INVALID_ARGUMENT);
  CHECK(jl == NULL);

  /* events: page by sequence number; they carry attribution */
  OK(tenure_lease_complete(l, NULL, 0));
  tenure_lease_free(l);
  uint64_t last = 0;
  size_t total = 0;
  int saw_claimed = 0, saw_completed = 0;
  for (;;) {
    tenure_event_list *el = NULL;
    OK(tenure_authority_events(a, last, 7, &el));
    REQUIRE(el != NULL);
    size_t n = tenure_event_list_len(el);
    for (size_t i = 0; i < n; i++) {
      CHECK(tenure_event_list_seq(el, i) > last);
      last = tenure_event_list_seq(el, i);
      CHECK(tenure_event_list_at_us(el, i) > 0);
      CHECK(streq(tenure_event_list_production(el, i), "p"));
      const char *kind = tenure_event_list_kind(el, i);
      if (streq(kind, "claimed")) {
        saw_claimed = 1;
        CHECK(streq(tenure_event_list_job(el, i), "job-03"));
        CHECK(streq(tenure_event_list_holder(el, i), "w"));
        CHECK(tenure_event_list_attempt(el, i) == 1);
        CHECK(strlen(tenure_event_list_claim_id(el, i)) == 36);
        int64_t e = 0;
        CHECK(tenure_event_list_expires_us(el, i, &e) && e > 0);
        CHECK(tenure_event_list_state(el, i) == TENURE_JOB_CLAIMED);
      }
      if (streq(kind, "completed"))
        saw_completed = 1;
      if (streq(kind, "production_created")) {
        CHECK(tenure_event_list_job(el, i) == NULL);
        CHECK(tenure_event_list_state(el, i) == 0);
      }
      CHECK(tenure_event_list_detail(el, i) != NULL);
    }
    total += n;
    tenure_event_list_free(el);
    if (n < 7)
      break;
  }
  CHECK(total == 1 + 25 + 2);
  CHECK(saw_claimed && saw_completed);
  tenure_event_list *el = NULL;
  OK(tenure_authority_production_events(a, "p", 0, 0, &el));
  CHECK(tenure_event_list_len(el) == total);
  CHECK(tenure_event_list_kind(el, total) == NULL);
  tenure_event_list_free(el);
  tenure_authority_free(a);
}

static void edits(const char *dir) {
  tenure_authority *a = open_store(dir, "edit.db");
  tenure_edit *e = NULL;
  OK(tenure_edit_begin(a, &e));
  REQUIRE(e != NULL);
  bool created = false;
  OK(tenure_edit_create_production(e, "p", &created));
  CHECK(created);
  tenure_job_spec spec;
  OK(tenure_job_spec_init(&spec));
  spec.job = "a";
  tenure_submitted sub = 0;
  OK(tenure_edit_submit(e, "p", &spec, &sub));
  spec.job = "b";
  OK(tenure_edit_submit(e, "p", &spec, &sub));
  spec.job = "c";
  OK(tenure_edit_submit(e, "p", &spec, &sub));
  /* claim and complete atomically */
  tenure_lease *l = NULL;
  OK(tenure_edit_claim(e, "p", "a", "w", 30000000, &l));
  CHECK(tenure_lease_status_get(l) == TENURE_LEASE_STATUS_PENDING);
  EXPECT(tenure_lease_renew(l, 30000000), TENURE_LEASE_PENDING);
  char tok[4096];
  size_t tsz = 0;
  EXPECT(tenure_lease_export_token(l, tok, sizeof tok, &tsz),
         TENURE_LEASE_PENDING);
  OK(tenure_edit_renew(e, l, 40000000));
  tenure_fact f = {"k", "v"};
  OK(tenure_edit_complete(e, l, &f, 1));
  tenure_lease *lb = NULL, *lc = NULL;
  OK(tenure_edit_claim_next(e, "p", "w", 30000000, &lb));
  CHECK(streq(tenure_lease_job(lb), "b"));
  tenure_job_state js = 0;
  OK(tenure_edit_release(e, lb, &js));
  CHECK(js == TENURE_JOB_REQUESTED);
  OK(tenure_edit_claim(e, "p", "c", "w", 30000000, &lc));
  OK(tenure_edit_fail(e, lc, "nope", true, &js));
  CHECK(js == TENURE_JOB_FAILED);
  tenure_cancelled cres = 0;
  OK(tenure_edit_cancel(e, "p", "b", &cres));
  CHECK(cres == TENURE_CANCELLED_NOW);
  OK(tenure_edit_commit(e));
  CHECK(tenure_lease_status_get(l) == TENURE_LEASE_STATUS_CLOSED);
  /* commit consumed the transaction; the handle still needs freeing */
  EXPECT(tenure_edit_commit(e), TENURE_INVALID_ARGUMENT);
  EXPECT(tenure_edit_abort(e), TENURE_INVALID_ARGUMENT);
  EXPECT(tenure_edit_create_production(e, "q", &created),
         TENURE_INVALID_ARGUMENT);
  tenure_edit_free(e);
  tenure_lease_free(l);
  tenure_lease_free(lb);
  tenure_lease_free(lc);

  tenure_job_view *v = NULL;
  OK(tenure_authority_job(a, "p", "a", &v));
  CHECK(tenure_job_view_state(v) == TENURE_JOB_COMPLETED);
  tenure_job_view_free(v);
  OK(tenure_authority_job(a, "p", "b", &v));
  CHECK(tenure_job_view_state(v) == TENURE_JOB_CANCELLED);
  tenure_job_view_free(v);

  /* abort closes pending leases and writes nothing */
  make_production(a, "q");
  submit_job(a, "q", "x", 3);
  OK(tenure_edit_begin(a, &e));
  OK(tenure_edit_claim(e, "q", "x", "w", 30000000, &l));
  uint64_t n = 0;
  OK(tenure_edit_cancel_production(e, "q", &n));
  CHECK(n == 1);
  OK(tenure_edit_abort(e));
  CHECK(tenure_lease_status_get(l) == TENURE_LEASE_STATUS_CLOSED);
  EXPECT(tenure_lease_complete(l, NULL, 0), TENURE_LEASE_CLOSED);
  tenure_edit_free(e);
  tenure_lease_free(l);
  OK(tenure_authority_job(a, "q", "x", &v));
  CHECK(tenure_job_view_state(v) == TENURE_JOB_REQUESTED);
  CHECK(tenure_job_view_attempts(v) == 0);
  tenure_job_view_free(v);

  /* freeing an open edit aborts it (and releases the writer lock) */
  OK(tenure_edit_begin(a, &e));
  OK(tenure_edit_claim(e, "q", "x", "w", 30000000, &l));
  tenure_edit_free(e);
  CHECK(tenure_lease_status_get(l) == TENURE_LEASE_STATUS_CLOSED);
  tenure_lease_free(l);
  OK(tenure_authority_claim(a, "q", "x", "w", 30000000, &l));
  CHECK(tenure_lease_attempt(l) == 1);
  tenure_lease_free(l);
  tenure_authority_free(a);
}

static void tokens(const char *dir) {
  tenure_authority *a = open_store(dir, "token.db");
  make_production(a, "p");
  submit_job(a, "p", "j", 3);
  tenure_lease *l = NULL;
  OK(tenure_authority_claim(a, "p", "j", "w", 30000000, &l));
  size_t need = 0;
  EXPECT(tenure_lease_export_token(l, NULL, 0, &need), TENURE_INVALID_ARGUMENT);
  CHECK(need > 17 && need <= 2049);
  char small[8] = "XXXXXXX";
  size_t got = 0;
  EXPECT(tenure_lease_export_token(l, small, sizeof small, &got),
         TENURE_INVALID_ARGUMENT);
  CHECK(got == need);
  CHECK(strcmp(small, "XXXXXXX") == 0); /* untouched */
  char *tok = malloc(need);
  REQUIRE(tok != NULL);
  OK(tenure_lease_export_token(l, tok, need, &got));
  CHECK(got == need && strlen(tok) == need - 1);
  CHECK(strncmp(tok, "tenure-lease-v1.", 16) == 0);
  /* the token never shows up in the last error message */
  EXPECT(tenure_authority_claim(a, "p", "j", "x", 1000000, &l),
         TENURE_NOT_CLAIMABLE);
  CHECK(strstr(last_error(), tok + 16) == NULL);

  tenure_lease *imp = NULL;
  OK(tenure_authority_import_lease(a, tok, &imp));
  REQUIRE(imp != NULL);
  CHECK(streq(tenure_lease_claim_id(imp), tenure_lease_claim_id(l)));
  CHECK(streq(tenure_lease_job(imp), "j"));
  CHECK(tenure_lease_status_get(imp) == TENURE_LEASE_STATUS_ACTIVE);
  OK(tenure_lease_complete(imp, NULL, 0));
  tenure_lease *again = NULL;
  EXPECT(tenure_authority_import_lease(a, tok, &again), TENURE_LEASE_CLOSED);
  CHECK(again == NULL);
  tenure_lease_free(imp);
  tenure_lease_free(l);
  memset(tok, 0, need);
  free(tok);

  /* malformed, oversize, unknown version */
  EXPECT(tenure_authority_import_lease(a, "hello", &again),
         TENURE_TOKEN_MALFORMED);
  EXPECT(tenure_authority_import_lease(a, "tenure-lease-v2.AAAA", &again),
         TENURE_TOKEN_UNSUPPORTED_VERSION);
  char *big = malloc(3000);
  REQUIRE(big != NULL);
  memset(big, 'A', 2999);
  big[2999] = 0;
  EXPECT(tenure_authority_import_lease(a, big, &again), TENURE_TOKEN_TOO_LARGE);
  free(big);
  tenure_authority_free(a);
}

static void busy_and_store_errors(const char *dir) {
  tenure_open_options o;
  OK(tenure_open_options_init(&o));
  o.busy_timeout_us = 0;
  tenure_authority *a = NULL, *b = NULL;
  const char *busy = store_addr(dir, "busy.db");
  OK(tenure_authority_open(busy, &o, &a));
  OK(tenure_authority_open(busy, &o, &b));
  make_production(a, "p");
  submit_job(a, "p", "held", 3);
  tenure_edit *e = NULL;
  OK(tenure_edit_begin(a, &e)); /* SQLite: holds the writer lock */
  tenure_lease *pending = NULL;
  /* PostgreSQL: holds the job's row lock until the edit ends */
  OK(tenure_edit_claim(e, "p", "held", "editor", 30000000, &pending));
  tenure_lease *l = NULL;
  EXPECT(tenure_authority_claim(b, "p", "held", "other", 30000000, &l),
         TENURE_BUSY);
  CHECK(l == NULL);
  bool created = false;
  if (!skip_on_postgres("busy: another production while an edit is open",
                        "PostgreSQL has row locks, no store-wide writer lock"))
    EXPECT(tenure_authority_create_production(b, "q", &created), TENURE_BUSY);
  OK(tenure_edit_abort(e));
  tenure_edit_free(e);
  tenure_lease_free(pending);
  OK(tenure_authority_create_production(b, "q", &created));
  OK(tenure_authority_claim(b, "p", "held", "other", 30000000, &l));
  CHECK(tenure_lease_attempt(l) == 1);
  tenure_lease_free(l);
  tenure_authority_free(a);
  tenure_authority_free(b);

  if (skip_on_postgres("store errors: a foreign file, a raised user_version",
                       "SQLite-file specific (the server's schema version is "
                       "covered by the Rust suite)"))
    return;
  /* a foreign file is a store error */
  FILE *f = fopen(path_in(dir, "garbage.db"), "w");
  REQUIRE(f != NULL);
  for (int i = 0; i < 200; i++)
    fputs("this is not a database file at all\n", f);
  fclose(f);
  a = NULL;
  EXPECT(tenure_authority_open(path_in(dir, "garbage.db"), NULL, &a),
         TENURE_STORE);
  CHECK(a == NULL);

  /* a store from a newer tenure (user_version raised) is refused */
  a = open_store(dir, "newer.db");
  make_production(a, "p");
  tenure_authority_free(a);
  f = fopen(path_in(dir, "newer.db"), "r+b");
  REQUIRE(f != NULL);
  unsigned char v999[4] = {0, 0, 0x03, 0xE7}; /* header offset 60: user_version */
  REQUIRE(fseek(f, 60, SEEK_SET) == 0 && fwrite(v999, 1, 4, f) == 4);
  fclose(f);
  EXPECT(tenure_authority_open(path_in(dir, "newer.db"), NULL, &a),
         TENURE_SCHEMA_TOO_NEW);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s SCRATCH_DIR\n", argv[0]);
    return 2;
  }
  versions();
  life_cycle(argv[1]);
  listing_and_events(argv[1]);
  edits(argv[1]);
  tokens(argv[1]);
  busy_and_store_errors(argv[1]);
  return finish();
}
