/* Bad input on every entry point: NULL for each pointer argument, invalid
 * UTF-8, empty and oversize IDs/holders/reasons, out-of-range durations,
 * unreadable struct sizes, malformed/oversize/truncated tokens, too-small
 * buffers; the scheduling calls of ABI 1.1 (delays out of range, bad
 * back-offs), the batched calls, and the functions without a status.
 * Each must return the documented status, leave out-parameters untouched
 * and change nothing in the store (the event log does not grow). Every
 * export of tenure.map is called here by name (never built by token
 * pasting): `cargo xtask test` checks that (crates/xtask/src/probes.rs).
 * Usage: test_bad_input DIR */
#include <stdint.h>

#include "harness.h"

#define INV TENURE_INVALID_ARGUMENT
#define DUR TENURE_INVALID_DURATION

static const char BAD_UTF8[] = {(char)0xC3, (char)0x28, 'x', 0};
static char LONG_ID[130];     /* 129 bytes: one over the ID bound */
static char LONG_HOLDER[258]; /* 257 bytes: one over the holder bound */
static char LONG_REASON[1026];

/* Run CALL (which mentions S) with S = NULL, invalid UTF-8, "" and an
 * oversize ID: all must be TENURE_INVALID_ARGUMENT. */
#define BAD_ID(CALL)                                                       \
  do {                                                                     \
    const char *S = NULL;                                                  \
    EXPECT(CALL, INV);                                                     \
    S = BAD_UTF8;                                                          \
    EXPECT(CALL, INV);                                                     \
    S = "";                                                                \
    EXPECT(CALL, INV);                                                     \
    S = LONG_ID;                                                           \
    EXPECT(CALL, INV);                                                     \
    S = "has/slash";                                                       \
    EXPECT(CALL, INV);                                                     \
  } while (0)

#define BAD_HOLDER(CALL)                                                   \
  do {                                                                     \
    const char *S = NULL;                                                  \
    EXPECT(CALL, INV);                                                     \
    S = BAD_UTF8;                                                          \
    EXPECT(CALL, INV);                                                     \
    S = "";                                                                \
    EXPECT(CALL, INV);                                                     \
    S = LONG_HOLDER;                                                       \
    EXPECT(CALL, INV);                                                     \
    S = "line\nbreak";                                                     \
    EXPECT(CALL, INV);                                                     \
  } while (0)

/* Durations: <= 0 and > 24 h are TENURE_INVALID_DURATION. */
#define BAD_TTL(CALL)                                                      \
  do {                                                                     \
    int64_t T = 0;                                                         \
    EXPECT(CALL, DUR);                                                     \
    T = -1;                                                                \
    EXPECT(CALL, DUR);                                                     \
    T = INT64_C(86400000001);                                              \
    EXPECT(CALL, DUR);                                                     \
    T = INT64_MIN;                                                         \
    EXPECT(CALL, DUR);                                                     \
    T = INT64_MAX;                                                         \
    EXPECT(CALL, DUR);                                                     \
  } while (0)

static tenure_lease *const POISON_LEASE = (tenure_lease *)0x1;

static void authority_entry_points(const char *dir) {
  tenure_authority *a = NULL;
  /* open */
  EXPECT(tenure_authority_open(NULL, NULL, &a), INV);
  EXPECT(tenure_authority_open(BAD_UTF8, NULL, &a), INV);
  EXPECT(tenure_authority_open("", NULL, &a), INV);
  EXPECT(tenure_authority_open(path_in(dir, "x.db"), NULL, NULL), INV);
  tenure_open_options o;
  EXPECT(tenure_open_options_init(NULL), INV);
  OK(tenure_open_options_init(&o));
  o.struct_size = 4;
  EXPECT(tenure_authority_open(path_in(dir, "x.db"), &o, &a), INV);
  OK(tenure_open_options_init(&o));
  o.synchronous = 9;
  EXPECT(tenure_authority_open(path_in(dir, "x.db"), &o, &a), INV);
  OK(tenure_open_options_init(&o));
  o.busy_timeout_us = -1;
  EXPECT(tenure_authority_open(path_in(dir, "x.db"), &o, &a), INV);
  o.busy_timeout_us = INT64_C(3600000001);
  EXPECT(tenure_authority_open(path_in(dir, "x.db"), &o, &a), INV);
  CHECK(a == NULL);
  /* a struct from a newer header with an unknown non-zero field */
  struct {
    tenure_open_options o;
    uint64_t future;
  } newer;
  memset(&newer, 0, sizeof newer);
  OK(tenure_open_options_init(&newer.o));
  newer.o.struct_size = sizeof newer;
  newer.future = 1;
  EXPECT(tenure_authority_open(path_in(dir, "x.db"), &newer.o, &a), INV);
  CHECK(a == NULL);
  newer.future = 0; /* zero means "the old behaviour": accepted */
  OK(tenure_authority_open(path_in(dir, "bad.db"), &newer.o, &a));
  REQUIRE(a != NULL);

  /* the options handle and open_with (ABI 1.1): bad settings are refused
   * when the handle is made, NULLs everywhere, nothing is created */
  tenure_options *opts = NULL;
  EXPECT(tenure_options_new(NULL, NULL), INV);
  EXPECT(tenure_options_new(&newer.o, NULL), INV);
  OK(tenure_open_options_init(&o));
  o.struct_size = 4;
  EXPECT(tenure_options_new(&o, &opts), INV);
  OK(tenure_open_options_init(&o));
  o.synchronous = 9;
  EXPECT(tenure_options_new(&o, &opts), INV);
  OK(tenure_open_options_init(&o));
  o.busy_timeout_us = -1;
  EXPECT(tenure_options_new(&o, &opts), INV);
  newer.future = 1;
  EXPECT(tenure_options_new(&newer.o, &opts), INV);
  newer.future = 0;
  CHECK(opts == NULL);
  OK(tenure_options_new(&newer.o, &opts));
  REQUIRE(opts != NULL);
  EXPECT(tenure_options_set_group_commit(NULL, false), INV);
  OK(tenure_options_set_group_commit(opts, false));
  tenure_authority *w = NULL;
  EXPECT(tenure_authority_open_with(NULL, opts, &w), INV);
  EXPECT(tenure_authority_open_with(BAD_UTF8, opts, &w), INV);
  EXPECT(tenure_authority_open_with("", opts, &w), INV);
  EXPECT(tenure_authority_open_with(path_in(dir, "w.db"), NULL, &w), INV);
  EXPECT(tenure_authority_open_with(path_in(dir, "w.db"), opts, NULL), INV);
  CHECK(w == NULL);
  CHECK(access(path_in(dir, "w.db"), F_OK) != 0);
  tenure_options_free(opts);
  tenure_options_free(NULL);

  make_production(a, "p");
  submit_job(a, "p", "j", 3);
  submit_job(a, "p", "k", 3);
  tenure_lease *l = NULL;
  REQUIRE(tenure_authority_claim(a, "p", "j", "w", 60000000, &l) == TENURE_OK);
  size_t events_before = event_count(a);

  bool created = true;
  uint64_t u64 = 77;
  EXPECT(tenure_authority_create_production(NULL, "q", &created), INV);
  BAD_ID(tenure_authority_create_production(a, S, &created));
  EXPECT(tenure_authority_create_production(a, "q", NULL), INV);
  CHECK(created == true);
  EXPECT(tenure_authority_cancel_production(NULL, "p", &u64), INV);
  BAD_ID(tenure_authority_cancel_production(a, S, &u64));
  EXPECT(tenure_authority_cancel_production(a, "p", NULL), INV);
  CHECK(u64 == 77);

  /* submit */
  tenure_job_spec spec;
  EXPECT(tenure_job_spec_init(NULL), INV);
  OK(tenure_job_spec_init(&spec));
  spec.job = "n";
  tenure_submitted sub = 55;
  EXPECT(tenure_authority_submit(NULL, "p", &spec, &sub), INV);
  BAD_ID(tenure_authority_submit(a, S, &spec, &sub));
  EXPECT(tenure_authority_submit(a, "p", NULL, &sub), INV);
  EXPECT(tenure_authority_submit(a, "p", &spec, NULL), INV);
#define SPEC_JOB(S) (spec.job = (S), tenure_authority_submit(a, "p", &spec, &sub))
  BAD_ID(SPEC_JOB(S));
  spec.job = "n";
  spec.struct_size = 0;
  EXPECT(tenure_authority_submit(a, "p", &spec, &sub), INV);
  spec.struct_size = sizeof spec - 1;
  EXPECT(tenure_authority_submit(a, "p", &spec, &sub), INV);
  spec.struct_size = SIZE_MAX;
  EXPECT(tenure_authority_submit(a, "p", &spec, &sub), INV);
  OK(tenure_job_spec_init(&spec));
  spec.job = "n";
  spec.payload = NULL;
  spec.payload_len = 3;
  EXPECT(tenure_authority_submit(a, "p", &spec, &sub), INV);
  spec.payload = (const uint8_t *)"abc";
  spec.payload_len = (1u << 20) + 1;
  EXPECT(tenure_authority_submit(a, "p", &spec, &sub), INV);
  spec.payload_len = 3;
  spec.max_attempts = 0;
  EXPECT(tenure_authority_submit(a, "p", &spec, &sub), INV);
  spec.max_attempts = 1001;
  EXPECT(tenure_authority_submit(a, "p", &spec, &sub), INV);
  CHECK(sub == 55);

  /* cancel */
  tenure_cancelled cres = 66;
  EXPECT(tenure_authority_cancel(NULL, "p", "j", &cres), INV);
  BAD_ID(tenure_authority_cancel(a, S, "j", &cres));
  BAD_ID(tenure_authority_cancel(a, "p", S, &cres));
  EXPECT(tenure_authority_cancel(a, "p", "j", NULL), INV);
  CHECK(cres == 66);

  /* claim / claim_next */
  tenure_lease *out = POISON_LEASE;
  EXPECT(tenure_authority_claim(NULL, "p", "k", "w", 1000000, &out), INV);
  BAD_ID(tenure_authority_claim(a, S, "k", "w", 1000000, &out));
  BAD_ID(tenure_authority_claim(a, "p", S, "w", 1000000, &out));
  BAD_HOLDER(tenure_authority_claim(a, "p", "k", S, 1000000, &out));
  EXPECT(tenure_authority_claim(a, "p", "k", "w", 1000000, NULL), INV);
  BAD_TTL(tenure_authority_claim(a, "p", "k", "w", T, &out));
  EXPECT(tenure_authority_claim_next(NULL, "p", "w", 1000000, &out), INV);
  BAD_ID(tenure_authority_claim_next(a, S, "w", 1000000, &out));
  BAD_HOLDER(tenure_authority_claim_next(a, "p", S, 1000000, &out));
  EXPECT(tenure_authority_claim_next(a, "p", "w", 1000000, NULL), INV);
  BAD_TTL(tenure_authority_claim_next(a, "p", "w", T, &out));
  CHECK(out == POISON_LEASE);

  /* import */
  EXPECT(tenure_authority_import_lease(NULL, "tenure-lease-v1.AAAA", &out), INV);
  EXPECT(tenure_authority_import_lease(a, NULL, &out), INV);
  EXPECT(tenure_authority_import_lease(a, "tenure-lease-v1.AAAA", NULL), INV);
  CHECK(out == POISON_LEASE);

  /* observations */
  tenure_job_view *v = (tenure_job_view *)0x1;
  EXPECT(tenure_authority_job(NULL, "p", "j", &v), INV);
  BAD_ID(tenure_authority_job(a, S, "j", &v));
  BAD_ID(tenure_authority_job(a, "p", S, &v));
  EXPECT(tenure_authority_job(a, "p", "j", NULL), INV);
  CHECK(v == (tenure_job_view *)0x1);
  uint8_t buf[16];
  size_t len = 99;
  EXPECT(tenure_authority_payload(NULL, "p", "j", buf, sizeof buf, &len), INV);
  BAD_ID(tenure_authority_payload(a, S, "j", buf, sizeof buf, &len));
  BAD_ID(tenure_authority_payload(a, "p", S, buf, sizeof buf, &len));
  EXPECT(tenure_authority_payload(a, "p", "j", NULL, 4, &len), INV);
  EXPECT(tenure_authority_payload(a, "p", "j", buf, sizeof buf, NULL), INV);
  CHECK(len == 99);
  EXPECT(tenure_authority_payload(a, "p", "j", buf, 0, &len), INV);
  CHECK(len == 1); /* too small: the required size is reported */

  tenure_job_list *jl = (tenure_job_list *)0x1;
  tenure_list_query q;
  EXPECT(tenure_list_query_init(NULL), INV);
  OK(tenure_list_query_init(&q));
  EXPECT(tenure_authority_jobs(NULL, "p", &q, &jl), INV);
  BAD_ID(tenure_authority_jobs(a, S, &q, &jl));
  EXPECT(tenure_authority_jobs(a, "p", &q, NULL), INV);
#define QUERY_AFTER(S) (q.after = (S), tenure_authority_jobs(a, "p", &q, &jl))
  {
    const char *S = BAD_UTF8;
    EXPECT(QUERY_AFTER(S), INV);
    S = "";
    EXPECT(QUERY_AFTER(S), INV);
    S = LONG_ID;
    EXPECT(QUERY_AFTER(S), INV);
  }
  OK(tenure_list_query_init(&q));
  q.struct_size = 1;
  EXPECT(tenure_authority_jobs(a, "p", &q, &jl), INV);
  OK(tenure_list_query_init(&q));
  q.state = 7;
  EXPECT(tenure_authority_jobs(a, "p", &q, &jl), INV);
  CHECK(jl == (tenure_job_list *)0x1);

  tenure_production_list *pl = (tenure_production_list *)0x1;
  EXPECT(tenure_authority_productions(NULL, &pl), INV);
  EXPECT(tenure_authority_productions(a, NULL), INV);
  CHECK(pl == (tenure_production_list *)0x1);
  tenure_fact_list *fl = (tenure_fact_list *)0x1;
  EXPECT(tenure_authority_facts(NULL, "p", "j", &fl), INV);
  BAD_ID(tenure_authority_facts(a, S, "j", &fl));
  BAD_ID(tenure_authority_facts(a, "p", S, &fl));
  EXPECT(tenure_authority_facts(a, "p", "j", NULL), INV);
  EXPECT(tenure_authority_production_facts(NULL, "p", &fl), INV);
  BAD_ID(tenure_authority_production_facts(a, S, &fl));
  EXPECT(tenure_authority_production_facts(a, "p", NULL), INV);
  CHECK(fl == (tenure_fact_list *)0x1);
  tenure_event_list *el = (tenure_event_list *)0x1;
  EXPECT(tenure_authority_events(NULL, 0, 0, &el), INV);
  EXPECT(tenure_authority_events(a, 0, 0, NULL), INV);
  EXPECT(tenure_authority_production_events(NULL, "p", 0, 0, &el), INV);
  BAD_ID(tenure_authority_production_events(a, S, 0, 0, &el));
  EXPECT(tenure_authority_production_events(a, "p", 0, 0, NULL), INV);
  CHECK(el == (tenure_event_list *)0x1);
  int64_t now = 1, mark = 2;
  bool blocked = true;
  EXPECT(tenure_authority_clock(NULL, &now, &mark, &blocked), INV);
  EXPECT(tenure_authority_clock(a, NULL, &mark, &blocked), INV);
  EXPECT(tenure_authority_clock(a, &now, NULL, &blocked), INV);
  EXPECT(tenure_authority_clock(a, &now, &mark, NULL), INV);
  CHECK(now == 1 && mark == 2 && blocked);
  EXPECT(tenure_authority_check(NULL, &u64), INV);
  EXPECT(tenure_authority_check(a, NULL), INV);

  /* lease operations */
  EXPECT(tenure_lease_renew(NULL, 1000000), INV);
  BAD_TTL(tenure_lease_renew(l, T));
  tenure_job_state js = 44;
  EXPECT(tenure_lease_release(NULL, &js), INV);
  EXPECT(tenure_lease_release(l, NULL), INV);
  EXPECT(tenure_lease_fail(NULL, "r", false, &js), INV);
  EXPECT(tenure_lease_fail(l, NULL, false, &js), INV);
  EXPECT(tenure_lease_fail(l, BAD_UTF8, false, &js), INV);
  EXPECT(tenure_lease_fail(l, LONG_REASON, false, &js), INV);
  EXPECT(tenure_lease_fail(l, "r", false, NULL), INV);
  CHECK(js == 44);
  tenure_fact good = {"k", "v"};
  EXPECT(tenure_lease_complete(NULL, &good, 1), INV);
  EXPECT(tenure_lease_complete(l, NULL, 1), INV);
  tenure_fact bad[] = {{NULL, "v"}, {"k", NULL}, {BAD_UTF8, "v"},
                       {"k", BAD_UTF8}, {"", "v"}, {LONG_ID, "v"},
                       {"tenure.claim_id", "forged"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tenure_fact two[2] = {good, bad[i]};
    EXPECT(tenure_lease_complete(l, two, 2), INV);
  }
  tenure_fact many[65];
  for (int i = 0; i < 65; i++)
    many[i] = good;
  EXPECT(tenure_lease_complete(l, many, 65), INV);
  CHECK(tenure_lease_status_get(l) == TENURE_LEASE_STATUS_ACTIVE);

  char tok[2100];
  size_t need = 5;
  EXPECT(tenure_lease_export_token(NULL, tok, sizeof tok, &need), INV);
  EXPECT(tenure_lease_export_token(l, NULL, 10, &need), INV);
  EXPECT(tenure_lease_export_token(l, tok, sizeof tok, NULL), INV);
  CHECK(need == 5);

  /* waiting for work and keep-alive (ABI 1.1); "k" is claimable, yet no
   * bad call claims it or waits */
  EXPECT(tenure_wait_cancel_new(NULL), INV);
  tenure_wait_cancel *wc = NULL;
  OK(tenure_wait_cancel_new(&wc));
  REQUIRE(wc != NULL);
  EXPECT(tenure_wait_cancel_cancel(NULL), INV);
  CHECK(!tenure_wait_cancel_is_cancelled(NULL));
  CHECK(!tenure_wait_cancel_is_cancelled(wc));
  EXPECT(tenure_authority_cancel_waits(NULL), INV);
  EXPECT(tenure_authority_claim_next_wait(NULL, "p", "w", 1000000, 0, wc, &out), INV);
  BAD_ID(tenure_authority_claim_next_wait(a, S, "w", 1000000, 0, wc, &out));
  BAD_HOLDER(tenure_authority_claim_next_wait(a, "p", S, 1000000, 0, wc, &out));
  EXPECT(tenure_authority_claim_next_wait(a, "p", "w", 1000000, 0, wc, NULL), INV);
  BAD_TTL(tenure_authority_claim_next_wait(a, "p", "w", T, 0, NULL, &out));
  {
    /* a timeout may be 0 (one attempt) but not negative or over 24 h */
    const int64_t bad_timeouts[] = {-1, INT64_MIN, INT64_C(86400000001), INT64_MAX};
    for (size_t i = 0; i < sizeof bad_timeouts / sizeof bad_timeouts[0]; i++)
      EXPECT(tenure_authority_claim_next_wait(a, "p", "w", 1000000, bad_timeouts[i], wc, &out),
             DUR);
  }
  CHECK(out == POISON_LEASE);
  CHECK(!tenure_wait_cancel_is_cancelled(wc));
  tenure_wait_cancel_free(wc);
  tenure_wait_cancel_free(NULL);

  tenure_keeper *kp = (tenure_keeper *)0x1;
  EXPECT(tenure_lease_keep_alive(NULL, 1000000, 100000, &kp), INV);
  EXPECT(tenure_lease_keep_alive(l, 1000000, 100000, NULL), INV);
  BAD_TTL(tenure_lease_keep_alive(l, T, 100000, &kp));
  {
    /* the period: positive, at most 24 h, shorter than the TTL */
    const int64_t bad_every[] = {0, -1, INT64_MIN, 1000000, 1000001, INT64_C(86400000001),
                                 INT64_MAX};
    for (size_t i = 0; i < sizeof bad_every / sizeof bad_every[0]; i++)
      EXPECT(tenure_lease_keep_alive(l, 1000000, bad_every[i], &kp), DUR);
  }
  CHECK(kp == (tenure_keeper *)0x1);
  kp = NULL;
  OK(tenure_lease_keep_alive(l, 60000000, 50000000, &kp)); /* no renewal during this test */
  REQUIRE(kp != NULL);
  EXPECT(tenure_keeper_stop(NULL), INV);
  tenure_keeper_state ks = 77;
  tenure_status kerr = 77;
  EXPECT(tenure_keeper_status(NULL, &ks, &kerr), INV);
  EXPECT(tenure_keeper_status(kp, NULL, &kerr), INV);
  EXPECT(tenure_keeper_status(kp, &ks, NULL), INV);
  CHECK(ks == 77 && kerr == 77);
  CHECK(tenure_keeper_renewals(NULL) == 0);
  char kmsg[8];
  size_t kneed = 5;
  EXPECT(tenure_keeper_error_message(NULL, kmsg, sizeof kmsg, &kneed), INV);
  EXPECT(tenure_keeper_error_message(kp, NULL, 4, &kneed), INV);
  EXPECT(tenure_keeper_error_message(kp, kmsg, sizeof kmsg, NULL), INV);
  CHECK(kneed == 5);
  memset(kmsg, 'Z', sizeof kmsg);
  EXPECT(tenure_keeper_error_message(kp, kmsg, 0, &kneed), INV); /* too small: the size is told */
  CHECK(kneed == 1 && kmsg[0] == 'Z');
  OK(tenure_keeper_status(kp, &ks, &kerr));
  CHECK(ks == TENURE_KEEPER_RUNNING && kerr == TENURE_OK);
  tenure_keeper_free(kp); /* stops; never releases */
  tenure_keeper_free(NULL);

  /* a worker loop's configuration: the Rust worker's checks, no store */
  OK(tenure_worker_config_check("p", "w", 1, 1000000, 300000, 1000000, 0));
  OK(tenure_worker_config_check("p", "w", 1024, 1000000, 999999, INT64_C(86400000000),
                                INT64_C(86400000000)));
  EXPECT(tenure_worker_config_check(NULL, "w", 1, 1000000, 300000, 1000000, 0), INV);
  EXPECT(tenure_worker_config_check("p", NULL, 1, 1000000, 300000, 1000000, 0), INV);
  BAD_ID(tenure_worker_config_check(S, "w", 1, 1000000, 300000, 1000000, 0));
  BAD_HOLDER(tenure_worker_config_check("p", S, 1, 1000000, 300000, 1000000, 0));
  BAD_TTL(tenure_worker_config_check("p", "w", 1, T, 1, 1000000, 0));
  {
    const size_t bad_slots[] = {0, 1025, SIZE_MAX};
    for (size_t i = 0; i < sizeof bad_slots / sizeof bad_slots[0]; i++)
      EXPECT(tenure_worker_config_check("p", "w", bad_slots[i], 1000000, 300000, 1000000, 0), INV);
    /* the period: positive, shorter than the TTL; the wait timeout positive,
     * at most 24 h; the grace period 0 ..= 24 h */
    const int64_t bad_every[] = {0, -1, INT64_MIN, 1000000, INT64_MAX};
    for (size_t i = 0; i < sizeof bad_every / sizeof bad_every[0]; i++)
      EXPECT(tenure_worker_config_check("p", "w", 1, 1000000, bad_every[i], 1000000, 0), DUR);
    const int64_t bad_waits[] = {0, -1, INT64_MIN, INT64_C(86400000001), INT64_MAX};
    for (size_t i = 0; i < sizeof bad_waits / sizeof bad_waits[0]; i++)
      EXPECT(tenure_worker_config_check("p", "w", 1, 1000000, 300000, bad_waits[i], 0), DUR);
    const int64_t bad_grace[] = {-1, INT64_MIN, INT64_C(86400000001), INT64_MAX};
    for (size_t i = 0; i < sizeof bad_grace / sizeof bad_grace[0]; i++)
      EXPECT(tenure_worker_config_check("p", "w", 1, 1000000, 300000, 1000000, bad_grace[i]), DUR);
  }

  /* accessors with NULL / out-of-range arguments */
  CHECK(tenure_lease_production(NULL) == NULL);
  CHECK(tenure_lease_job(NULL) == NULL);
  CHECK(tenure_lease_holder(NULL) == NULL);
  CHECK(tenure_lease_claim_id(NULL) == NULL);
  CHECK(tenure_lease_attempt(NULL) == 0);
  CHECK(tenure_lease_expires_us(NULL) == 0);
  CHECK(tenure_lease_status_get(NULL) == 0);
  int64_t e = 123;
  CHECK(tenure_job_view_production(NULL) == NULL);
  CHECK(tenure_job_view_job(NULL) == NULL);
  CHECK(tenure_job_view_state(NULL) == 0);
  CHECK(tenure_job_view_attempts(NULL) == 0);
  CHECK(tenure_job_view_max_attempts(NULL) == 0);
  CHECK(tenure_job_view_priority(NULL) == 0);
  CHECK(tenure_job_view_holder(NULL) == NULL);
  CHECK(tenure_job_view_claim_id(NULL) == NULL);
  CHECK(!tenure_job_view_expires_us(NULL, &e) && e == 123);
  CHECK(tenure_job_view_created_us(NULL) == 0);
  CHECK(tenure_job_view_updated_us(NULL) == 0);
  CHECK(tenure_job_view_payload_len(NULL) == 0);
  CHECK(tenure_job_view_last_error(NULL) == NULL);
  CHECK(tenure_job_list_len(NULL) == 0);
  CHECK(tenure_job_list_get(NULL, 0) == NULL);
  CHECK(tenure_production_list_len(NULL) == 0);
  CHECK(tenure_production_list_name(NULL, 0) == NULL);
  CHECK(tenure_production_list_created_us(NULL, 0) == 0);
  CHECK(!tenure_production_list_cancelled_us(NULL, 0, &e) && e == 123);
  CHECK(tenure_fact_list_len(NULL) == 0);
  CHECK(tenure_fact_list_job(NULL, 0) == NULL);
  CHECK(tenure_fact_list_key(NULL, 0) == NULL);
  CHECK(tenure_fact_list_value(NULL, 0) == NULL);
  CHECK(tenure_event_list_len(NULL) == 0);
  CHECK(tenure_event_list_seq(NULL, 0) == 0);
  CHECK(tenure_event_list_at_us(NULL, 0) == 0);
  CHECK(tenure_event_list_production(NULL, 0) == NULL);
  CHECK(tenure_event_list_job(NULL, 0) == NULL);
  CHECK(tenure_event_list_kind(NULL, 0) == NULL);
  CHECK(tenure_event_list_state(NULL, 0) == 0);
  CHECK(tenure_event_list_claim_id(NULL, 0) == NULL);
  CHECK(tenure_event_list_holder(NULL, 0) == NULL);
  CHECK(tenure_event_list_attempt(NULL, 0) == 0);
  CHECK(!tenure_event_list_expires_us(NULL, 0, &e) && e == 123);
  CHECK(tenure_event_list_detail(NULL, 0) == NULL);
  OK(tenure_authority_events(a, 0, 0, &el));
  CHECK(!tenure_event_list_expires_us(el, 0, NULL));
  CHECK(tenure_event_list_seq(el, SIZE_MAX) == 0);
  tenure_event_list_free(el);

  /* every _free accepts NULL */
  tenure_authority_free(NULL);
  tenure_lease_free(NULL);
  tenure_edit_free(NULL);
  tenure_job_view_free(NULL);
  tenure_job_list_free(NULL);
  tenure_production_list_free(NULL);
  tenure_fact_list_free(NULL);
  tenure_event_list_free(NULL);

  /* nothing above changed the store */
  CHECK(event_count(a) == events_before);
  OK(tenure_lease_complete(l, &good, 1)); /* the lease still works */
  tenure_lease_free(l);
  tenure_authority_free(a);
}

static void edit_entry_points(const char *dir) {
  tenure_authority *a = open_store(dir, "edit.db");
  make_production(a, "p");
  submit_job(a, "p", "j", 3);
  submit_job(a, "p", "k", 3);
  tenure_lease *l = NULL;
  REQUIRE(tenure_authority_claim(a, "p", "j", "w", 60000000, &l) == TENURE_OK);
  size_t events_before = event_count(a);

  tenure_edit *e = (tenure_edit *)0x1;
  EXPECT(tenure_edit_begin(NULL, &e), INV);
  EXPECT(tenure_edit_begin(a, NULL), INV);
  CHECK(e == (tenure_edit *)0x1);
  e = NULL;
  OK(tenure_edit_begin(a, &e));
  REQUIRE(e != NULL);

  bool created = true;
  uint64_t u64 = 7;
  EXPECT(tenure_edit_create_production(NULL, "q", &created), INV);
  BAD_ID(tenure_edit_create_production(e, S, &created));
  EXPECT(tenure_edit_create_production(e, "q", NULL), INV);
  EXPECT(tenure_edit_cancel_production(NULL, "p", &u64), INV);
  BAD_ID(tenure_edit_cancel_production(e, S, &u64));
  EXPECT(tenure_edit_cancel_production(e, "p", NULL), INV);
  CHECK(created && u64 == 7);
  tenure_job_spec spec;
  OK(tenure_job_spec_init(&spec));
  spec.job = "n";
  tenure_submitted sub = 5;
  EXPECT(tenure_edit_submit(NULL, "p", &spec, &sub), INV);
  BAD_ID(tenure_edit_submit(e, S, &spec, &sub));
  EXPECT(tenure_edit_submit(e, "p", NULL, &sub), INV);
  EXPECT(tenure_edit_submit(e, "p", &spec, NULL), INV);
  spec.struct_size = 3;
  EXPECT(tenure_edit_submit(e, "p", &spec, &sub), INV);
  CHECK(sub == 5);
  tenure_cancelled cres = 6;
  EXPECT(tenure_edit_cancel(NULL, "p", "k", &cres), INV);
  BAD_ID(tenure_edit_cancel(e, S, "k", &cres));
  BAD_ID(tenure_edit_cancel(e, "p", S, &cres));
  EXPECT(tenure_edit_cancel(e, "p", "k", NULL), INV);
  CHECK(cres == 6);
  tenure_lease *out = POISON_LEASE;
  EXPECT(tenure_edit_claim(NULL, "p", "k", "w", 1000000, &out), INV);
  BAD_ID(tenure_edit_claim(e, S, "k", "w", 1000000, &out));
  BAD_ID(tenure_edit_claim(e, "p", S, "w", 1000000, &out));
  BAD_HOLDER(tenure_edit_claim(e, "p", "k", S, 1000000, &out));
  EXPECT(tenure_edit_claim(e, "p", "k", "w", 1000000, NULL), INV);
  BAD_TTL(tenure_edit_claim(e, "p", "k", "w", T, &out));
  EXPECT(tenure_edit_claim_next(NULL, "p", "w", 1000000, &out), INV);
  BAD_ID(tenure_edit_claim_next(e, S, "w", 1000000, &out));
  BAD_HOLDER(tenure_edit_claim_next(e, "p", S, 1000000, &out));
  EXPECT(tenure_edit_claim_next(e, "p", "w", 1000000, NULL), INV);
  BAD_TTL(tenure_edit_claim_next(e, "p", "w", T, &out));
  CHECK(out == POISON_LEASE);
  EXPECT(tenure_edit_renew(NULL, l, 1000000), INV);
  EXPECT(tenure_edit_renew(e, NULL, 1000000), INV);
  BAD_TTL(tenure_edit_renew(e, l, T));
  tenure_job_state js = 3;
  EXPECT(tenure_edit_release(NULL, l, &js), INV);
  EXPECT(tenure_edit_release(e, NULL, &js), INV);
  EXPECT(tenure_edit_release(e, l, NULL), INV);
  EXPECT(tenure_edit_fail(NULL, l, "r", true, &js), INV);
  EXPECT(tenure_edit_fail(e, NULL, "r", true, &js), INV);
  EXPECT(tenure_edit_fail(e, l, NULL, true, &js), INV);
  EXPECT(tenure_edit_fail(e, l, BAD_UTF8, true, &js), INV);
  EXPECT(tenure_edit_fail(e, l, LONG_REASON, true, &js), INV);
  EXPECT(tenure_edit_fail(e, l, "r", true, NULL), INV);
  CHECK(js == 3);
  tenure_fact bad = {"k", BAD_UTF8};
  EXPECT(tenure_edit_complete(NULL, l, NULL, 0), INV);
  EXPECT(tenure_edit_complete(e, NULL, NULL, 0), INV);
  EXPECT(tenure_edit_complete(e, l, NULL, 2), INV);
  EXPECT(tenure_edit_complete(e, l, &bad, 1), INV);
  EXPECT(tenure_edit_commit(NULL), INV);
  EXPECT(tenure_edit_abort(NULL), INV);
  OK(tenure_edit_commit(e)); /* commits nothing: every step above failed */
  tenure_edit_free(e);
  CHECK(event_count(a) == events_before);
  CHECK(tenure_lease_status_get(l) == TENURE_LEASE_STATUS_ACTIVE);
  tenure_lease_free(l);
  tenure_authority_free(a);
}

static void token_input(const char *dir) {
  tenure_authority *a = open_store(dir, "token.db");
  make_production(a, "p");
  submit_job(a, "p", "j", 3);
  tenure_lease *l = NULL;
  REQUIRE(tenure_authority_claim(a, "p", "j", "w", 60000000, &l) == TENURE_OK);
  char tok[2100];
  size_t need = 0;
  REQUIRE(tenure_lease_export_token(l, tok, sizeof tok, &need) == TENURE_OK);
  size_t n = strlen(tok);
  size_t events_before = event_count(a);

  tenure_lease *out = POISON_LEASE;
  /* every truncation fails with a token error, never a crash */
  char cut[2100];
  int all_failed = 1;
  for (size_t k = 0; k < n; k++) {
    memcpy(cut, tok, k);
    cut[k] = 0;
    tenure_status st = tenure_authority_import_lease(a, cut, &out);
    if (st != TENURE_TOKEN_MALFORMED && st != TENURE_TOKEN_UNSUPPORTED_VERSION)
      all_failed = 0;
  }
  CHECK(all_failed);
  EXPECT(tenure_authority_import_lease(a, "", &out), TENURE_TOKEN_MALFORMED);
  EXPECT(tenure_authority_import_lease(a, "tenure-lease-v1.", &out),
         TENURE_TOKEN_MALFORMED);
  EXPECT(tenure_authority_import_lease(a, "tenure-lease-v1.!!!!", &out),
         TENURE_TOKEN_MALFORMED);
  EXPECT(tenure_authority_import_lease(a, "tenure-lease-vX.AAAA", &out),
         TENURE_TOKEN_MALFORMED);
  EXPECT(tenure_authority_import_lease(a, BAD_UTF8, &out), INV);
  EXPECT(tenure_authority_import_lease(a, "tenure-lease-v7.AAAA", &out),
         TENURE_TOKEN_UNSUPPORTED_VERSION);
  /* extra bytes appended */
  memcpy(cut, tok, n);
  memcpy(cut + n, "AAAA", 5);
  EXPECT(tenure_authority_import_lease(a, cut, &out), TENURE_TOKEN_MALFORMED);
  /* oversize: 2049 bytes */
  char big[2050];
  memset(big, 'A', 2049);
  big[2049] = 0;
  EXPECT(tenure_authority_import_lease(a, big, &out), TENURE_TOKEN_TOO_LARGE);
  /* oversize and not UTF-8: not even text */
  memset(big, 0xFF, 2049);
  EXPECT(tenure_authority_import_lease(a, big, &out), INV);
  /* a well-formed token whose secret is wrong: refused, not malformed */
  memcpy(cut, tok, n + 1);
  cut[n - 2] = cut[n - 2] == 'A' ? 'B' : 'A';
  tenure_status st = tenure_authority_import_lease(a, cut, &out);
  CHECK(st != TENURE_OK && st != TENURE_TOKEN_MALFORMED);
  CHECK(out == POISON_LEASE);
  /* trailing newline (from a file) is accepted */
  memcpy(cut, tok, n);
  memcpy(cut + n, "\n", 2);
  OK(tenure_authority_import_lease(a, cut, &out));
  tenure_lease_free(out);

  /* too-small token buffers report the required size */
  size_t got = 0;
  char small[16];
  memset(small, 'Z', sizeof small);
  EXPECT(tenure_lease_export_token(l, small, sizeof small, &got), INV);
  CHECK(got == n + 1);
  EXPECT(tenure_lease_export_token(l, small, 0, &got), INV);
  CHECK(got == n + 1);
  EXPECT(tenure_lease_export_token(l, cut, n, &got), INV); /* no room for NUL */
  CHECK(got == n + 1);
  CHECK(small[0] == 'Z' && small[15] == 'Z');
  OK(tenure_lease_export_token(l, cut, n + 1, &got));
  CHECK(strcmp(cut, tok) == 0);

  /* the last error message buffer */
  EXPECT(tenure_authority_import_lease(a, "nope", &out), TENURE_TOKEN_MALFORMED);
  size_t msz = 0;
  EXPECT(tenure_last_error_message(NULL, 0, &msz), INV);
  CHECK(msz > 10);
  char tiny[4] = "abc";
  size_t msz2 = 0;
  EXPECT(tenure_last_error_message(tiny, sizeof tiny, &msz2), INV);
  CHECK(msz2 == msz && strcmp(tiny, "abc") == 0);
  EXPECT(tenure_last_error_message(tiny, sizeof tiny, NULL), INV);
  EXPECT(tenure_last_error_message(NULL, 8, &msz2), INV);
  char *m = malloc(msz);
  REQUIRE(m != NULL);
  OK(tenure_last_error_message(m, msz, &msz2));
  CHECK(strlen(m) + 1 == msz && strstr(m, "token malformed") != NULL);
  free(m);
  /* a success clears it */
  OK(tenure_lease_renew(l, 60000000));
  OK(tenure_last_error_message(tiny, sizeof tiny, &msz2));
  CHECK(msz2 == 1 && tiny[0] == 0);

  memset(tok, 0, sizeof tok);
  memset(cut, 0, sizeof cut);
  CHECK(event_count(a) == events_before + 1); /* only the renewal */
  tenure_lease_free(l);
  tenure_authority_free(a);
}

/* ABI 1.1 retention: NULLs, bad IDs, out-of-range ages, a NULL sink; each
 * changes nothing (no job, event or production goes, the sink is never
 * called, out-parameters stay). */
static int never_called(const char *line, size_t len, void *ctx) {
  (void)line;
  (void)len;
  *(int *)ctx += 1;
  return 0;
}

static void retention_entry_points(const char *dir) {
  tenure_authority *a = NULL;
  REQUIRE(tenure_authority_open(path_in(dir, "retention.db"), NULL, &a) == TENURE_OK);
  make_production(a, "p");
  submit_job(a, "p", "j", 3);
  tenure_cancelled c = 0;
  REQUIRE(tenure_authority_cancel(a, "p", "j", &c) == TENURE_OK);
  size_t events_before = event_count(a);

  tenure_options *opts = NULL;
  REQUIRE(tenure_options_new(NULL, &opts) == TENURE_OK);
  EXPECT(tenure_options_set_retention(NULL, 1, 1, 1), INV);
  const uint64_t too_old = UINT64_C(315360001); /* 3650 days + 1 s */
  EXPECT(tenure_options_set_retention(opts, too_old, 0, 0), DUR);
  EXPECT(tenure_options_set_retention(opts, 0, too_old, 0), DUR);
  EXPECT(tenure_options_set_retention(opts, 0, 0, too_old), DUR);
  EXPECT(tenure_options_set_retention(opts, UINT64_MAX, 0, 0), DUR);
  tenure_options_free(opts);

  tenure_prune_report r = {7, 7, 7, 7, true};
  EXPECT(tenure_authority_prune(NULL, 1, 1, 1, &r), INV);
  EXPECT(tenure_authority_prune(a, 1, 1, 1, NULL), INV);
  EXPECT(tenure_authority_prune(a, too_old, 1, 1, &r), DUR);
  EXPECT(tenure_authority_prune(a, 1, too_old, 1, &r), DUR);
  EXPECT(tenure_authority_prune(a, 1, 1, too_old, &r), DUR);
  CHECK(r.jobs == 7 && r.tombstones == 7 && r.events == 7 && r.horizon == 7 && r.more);

  tenure_deleted_counts d = {7, 7, 7, 7};
  EXPECT(tenure_authority_delete_production(NULL, "p", &d), INV);
  BAD_ID(tenure_authority_delete_production(a, S, &d));
  EXPECT(tenure_authority_delete_production(a, "p", NULL), INV);
  CHECK(d.jobs == 7 && d.facts == 7 && d.events == 7 && d.tombstones == 7);

  int calls = 0;
  uint64_t records = 7;
  EXPECT(tenure_authority_export_production(NULL, "p", never_called, &calls, &records), INV);
  BAD_ID(tenure_authority_export_production(a, S, never_called, &calls, &records));
  EXPECT(tenure_authority_export_production(a, "p", NULL, &calls, &records), INV);
  EXPECT(tenure_authority_export_production(a, "p", never_called, &calls, NULL), INV);
  CHECK(calls == 0 && records == 7);

  uint64_t horizon = 7;
  EXPECT(tenure_authority_history_horizon(NULL, &horizon), INV);
  EXPECT(tenure_authority_history_horizon(a, NULL), INV);
  CHECK(horizon == 7);
  EXPECT(tenure_authority_vacuum(NULL), INV);

  CHECK(event_count(a) == events_before);
  tenure_job_view *v = NULL;
  OK(tenure_authority_job(a, "p", "j", &v));
  tenure_job_view_free(v);
  tenure_authority_free(a);
}

/* The batched calls (ABI 1.1): NULL handles, arrays and items, batch sizes
 * 0 and over 1000, bad text in an item, bad durations; out-arrays
 * untouched, nothing changed. */
static void batch_entry_points(const char *dir) {
  tenure_authority *a = open_store(dir, "batch.db");
  make_production(a, "p");
  submit_job(a, "p", "j", 3);
  submit_job(a, "p", "k", 3);
  tenure_lease *l = NULL;
  REQUIRE(tenure_authority_claim(a, "p", "j", "w", 60000000, &l) == TENURE_OK);
  size_t events_before = event_count(a);
  tenure_edit *e = NULL;

  tenure_lease *slots[2] = {POISON_LEASE, POISON_LEASE};
  size_t count = 9;
  const tenure_lease *ls[2] = {l, NULL};
  const tenure_lease *none[1] = {NULL};
  tenure_status st[2] = {77, 77};
  tenure_job_state js[2] = {9, 9};
  const char *reasons[1] = {"r"};
  const char *bad_reasons[1] = {BAD_UTF8};
  const char *null_reasons[1] = {NULL};
  const char *long_reasons[1] = {LONG_REASON};
  bool perm[1] = {false};
  tenure_fact bad = {"k", BAD_UTF8};
  tenure_fact null_key = {NULL, "v"};
  const tenure_fact *bad_facts[1] = {&bad};
  const tenure_fact *null_key_facts[1] = {&null_key};
  const tenure_fact *no_facts[1] = {NULL};
  size_t one[1] = {1};

#define CLAIM_MANY(H, FN)                                                  \
  EXPECT(FN(NULL, "p", "w", 1000000, 2, slots, &count), INV);              \
  BAD_ID(FN(H, S, "w", 1000000, 2, slots, &count));                        \
  BAD_HOLDER(FN(H, "p", S, 1000000, 2, slots, &count));                    \
  BAD_TTL(FN(H, "p", "w", T, 2, slots, &count));                           \
  EXPECT(FN(H, "p", "w", 1000000, 0, slots, &count), INV);                 \
  EXPECT(FN(H, "p", "w", 1000000, 1001, slots, &count), INV);              \
  EXPECT(FN(H, "p", "w", 1000000, 2, NULL, &count), INV);                  \
  EXPECT(FN(H, "p", "w", 1000000, 2, slots, NULL), INV);


#define LEASE_MANY(H, RENEW, RELEASE, FAIL, COMPLETE)                       \
  EXPECT(RENEW(NULL, ls, 1, 1000000, st), INV);                             \
  EXPECT(RENEW(H, NULL, 1, 1000000, st), INV);                              \
  EXPECT(RENEW(H, none, 1, 1000000, st), INV);                              \
  EXPECT(RENEW(H, ls, 2, 1000000, st), INV); /* ls[1] NULL */               \
  EXPECT(RENEW(H, ls, 0, 1000000, st), INV);                                \
  EXPECT(RENEW(H, ls, 1001, 1000000, st), INV);                             \
  EXPECT(RENEW(H, ls, 1, 1000000, NULL), INV);                              \
  BAD_TTL(RENEW(H, ls, 1, T, st));                                          \
  EXPECT(RELEASE(NULL, ls, 1, st, js), INV);                                \
  EXPECT(RELEASE(H, NULL, 1, st, js), INV);                                 \
  EXPECT(RELEASE(H, none, 1, st, js), INV);                                 \
  EXPECT(RELEASE(H, ls, 0, st, js), INV);                                   \
  EXPECT(RELEASE(H, ls, 1001, st, js), INV);                                \
  EXPECT(RELEASE(H, ls, 1, NULL, js), INV);                                 \
  EXPECT(FAIL(NULL, ls, reasons, perm, 1, st, js), INV);                    \
  EXPECT(FAIL(H, NULL, reasons, perm, 1, st, js), INV);                     \
  EXPECT(FAIL(H, none, reasons, perm, 1, st, js), INV);                     \
  EXPECT(FAIL(H, ls, NULL, perm, 1, st, js), INV);                          \
  EXPECT(FAIL(H, ls, null_reasons, perm, 1, st, js), INV);                  \
  EXPECT(FAIL(H, ls, bad_reasons, perm, 1, st, js), INV);                   \
  EXPECT(FAIL(H, ls, reasons, NULL, 1, st, js), INV);                       \
  EXPECT(FAIL(H, ls, reasons, perm, 0, st, js), INV);                       \
  EXPECT(FAIL(H, ls, reasons, perm, 1001, st, js), INV);                    \
  EXPECT(FAIL(H, ls, reasons, perm, 1, NULL, js), INV);                     \
  EXPECT(COMPLETE(NULL, ls, NULL, NULL, 1, st), INV);                       \
  EXPECT(COMPLETE(H, NULL, NULL, NULL, 1, st), INV);                        \
  EXPECT(COMPLETE(H, none, NULL, NULL, 1, st), INV);                        \
  EXPECT(COMPLETE(H, ls, bad_facts, NULL, 1, st), INV);                     \
  EXPECT(COMPLETE(H, ls, NULL, one, 1, st), INV);                           \
  EXPECT(COMPLETE(H, ls, no_facts, one, 1, st), INV);                       \
  EXPECT(COMPLETE(H, ls, bad_facts, one, 1, st), INV);                      \
  EXPECT(COMPLETE(H, ls, null_key_facts, one, 1, st), INV);                 \
  EXPECT(COMPLETE(H, ls, NULL, NULL, 0, st), INV);                          \
  EXPECT(COMPLETE(H, ls, NULL, NULL, 1001, st), INV);                       \
  EXPECT(COMPLETE(H, ls, NULL, NULL, 1, NULL), INV);
  /* the authority's rows first: the edit holds the writer lock */
  CLAIM_MANY(a, tenure_authority_claim_next_many)
  LEASE_MANY(a, tenure_authority_renew_many, tenure_authority_release_many,
             tenure_authority_fail_many, tenure_authority_complete_many)
  REQUIRE(tenure_edit_begin(a, &e) == TENURE_OK);
  CLAIM_MANY(e, tenure_edit_claim_next_many)
  LEASE_MANY(e, tenure_edit_renew_many, tenure_edit_release_many, tenure_edit_fail_many,
             tenure_edit_complete_many)
  CHECK(slots[0] == POISON_LEASE && slots[1] == POISON_LEASE && count == 9);
  CHECK(st[0] == 77 && st[1] == 77 && js[0] == 9 && js[1] == 9);
#undef CLAIM_MANY
#undef LEASE_MANY

  /* in the edit an over-long reason is the lease's refusal, so the whole
   * batch's; on the authority it is that lease's status */
  EXPECT(tenure_edit_fail_many(e, ls, long_reasons, perm, 1, st, js), INV);
  CHECK(st[0] == 77);
  OK(tenure_edit_commit(e)); /* commits nothing: every step above failed */
  tenure_edit_free(e);
  OK(tenure_authority_fail_many(a, ls, long_reasons, perm, 1, st, js));
  CHECK(st[0] == INV && js[0] == TENURE_JOB_ANY);
  CHECK(event_count(a) == events_before);
  CHECK(tenure_lease_status_get(l) == TENURE_LEASE_STATUS_ACTIVE);
  tenure_lease_free(l);
  tenure_authority_free(a);
}

/* Scheduling (ABI 1.1): NULL handles, bad IDs, delays out of range
 * (negative, over 366 days), a back-off with base 0 or base > cap, a zero
 * hold limit at submission, bad reasons; each changes nothing (no job, no
 * event, no production back-off, the lease stays active, out-parameters
 * stay); the accessors give false for NULL and out of range. */
#define DAYS_366 INT64_C(31622400000000)
#define BAD_DELAY(CALL)                                                    \
  do {                                                                     \
    int64_t D = -1;                                                        \
    EXPECT(CALL, DUR);                                                     \
    D = DAYS_366 + 1;                                                      \
    EXPECT(CALL, DUR);                                                     \
    D = INT64_MIN;                                                         \
    EXPECT(CALL, DUR);                                                     \
    D = INT64_MAX;                                                         \
    EXPECT(CALL, DUR);                                                     \
  } while (0)

static void schedule_entry_points(const char *dir) {
  tenure_authority *a = open_store(dir, "schedule.db");
  make_production(a, "p");
  submit_job(a, "p", "j", 3);
  tenure_lease *l = NULL;
  REQUIRE(tenure_authority_claim(a, "p", "j", "w", 60000000, &l) == TENURE_OK);
  size_t events_before = event_count(a);

  tenure_job_options *o = NULL;
  EXPECT(tenure_job_options_new(NULL), INV);
  REQUIRE(tenure_job_options_new(&o) == TENURE_OK);
  EXPECT(tenure_job_options_set_not_before(NULL, 0), INV);
  EXPECT(tenure_job_options_set_max_hold(NULL, 1), INV);
  EXPECT(tenure_job_options_set_backoff(NULL, 1, 1), INV);
  BAD_DELAY(tenure_job_options_set_not_before(o, D));
  BAD_DELAY(tenure_job_options_set_max_hold(o, D));
  BAD_DELAY(tenure_job_options_set_backoff(o, D, DAYS_366));
  BAD_DELAY(tenure_job_options_set_backoff(o, 1, D));
  EXPECT(tenure_job_options_set_backoff(o, 0, 1), DUR);  /* base must be positive */
  EXPECT(tenure_job_options_set_backoff(o, 0, 0), DUR);
  EXPECT(tenure_job_options_set_backoff(o, 2, 1), DUR);  /* base > cap */
  OK(tenure_job_options_set_not_before(o, DAYS_366));    /* the bounds */
  OK(tenure_job_options_set_backoff(o, DAYS_366, DAYS_366));
  tenure_job_options_free(NULL);

  tenure_job_spec spec;
  REQUIRE(tenure_job_spec_init(&spec) == TENURE_OK);
  spec.job = "k";
  tenure_submitted sub = 77;
  EXPECT(tenure_authority_submit_with(NULL, "p", &spec, o, &sub), INV);
  BAD_ID(tenure_authority_submit_with(a, S, &spec, o, &sub));
  EXPECT(tenure_authority_submit_with(a, "p", NULL, o, &sub), INV);
  EXPECT(tenure_authority_submit_with(a, "p", &spec, o, NULL), INV);
  spec.job = BAD_UTF8;
  EXPECT(tenure_authority_submit_with(a, "p", &spec, o, &sub), INV);
  spec.job = "k";
  OK(tenure_job_options_set_max_hold(o, 0)); /* the core refuses it at submission */
  EXPECT(tenure_authority_submit_with(a, "p", &spec, o, &sub), DUR);
  CHECK(sub == 77);
  tenure_job_view *v = NULL;
  EXPECT(tenure_authority_job(a, "p", "k", &v), TENURE_NOT_FOUND);

  EXPECT(tenure_authority_set_production_backoff(NULL, "p", 1, 1), INV);
  BAD_ID(tenure_authority_set_production_backoff(a, S, 1, 1));
  BAD_DELAY(tenure_authority_set_production_backoff(a, "p", D, DAYS_366));
  BAD_DELAY(tenure_authority_set_production_backoff(a, "p", 1, D));
  EXPECT(tenure_authority_set_production_backoff(a, "p", 0, 1), DUR);
  EXPECT(tenure_authority_set_production_backoff(a, "p", 2, 1), DUR);
  EXPECT(tenure_authority_clear_production_backoff(NULL, "p"), INV);
  BAD_ID(tenure_authority_clear_production_backoff(a, S));

  /* Claim gates (ABI 1.2): a bad handle, ID, out-parameter or limit, or an
   * unknown production, changes nothing. */
  bool changed = true;
  EXPECT(tenure_authority_pause_production(NULL, "p", &changed), INV);
  BAD_ID(tenure_authority_pause_production(a, S, &changed));
  EXPECT(tenure_authority_pause_production(a, "p", NULL), INV);
  EXPECT(tenure_authority_pause_production(a, "nope", &changed), TENURE_NOT_FOUND);
  EXPECT(tenure_authority_resume_production(NULL, "p", &changed), INV);
  BAD_ID(tenure_authority_resume_production(a, S, &changed));
  EXPECT(tenure_authority_resume_production(a, "p", NULL), INV);
  EXPECT(tenure_authority_resume_production(a, "nope", &changed), TENURE_NOT_FOUND);
  CHECK(changed);
  EXPECT(tenure_authority_set_concurrency_limit(NULL, "p", 1), INV);
  BAD_ID(tenure_authority_set_concurrency_limit(a, S, 1));
  EXPECT(tenure_authority_set_concurrency_limit(a, "p", 0), INV);
  EXPECT(tenure_authority_set_concurrency_limit(a, "p", 1000001), INV);
  EXPECT(tenure_authority_set_concurrency_limit(a, "p", UINT32_MAX), INV);
  EXPECT(tenure_authority_set_concurrency_limit(a, "nope", 1), TENURE_NOT_FOUND);
  EXPECT(tenure_authority_clear_concurrency_limit(NULL, "p"), INV);
  BAD_ID(tenure_authority_clear_concurrency_limit(a, S));
  EXPECT(tenure_authority_set_rate_limit(NULL, "p", 1, 1000000, 1), INV);
  BAD_ID(tenure_authority_set_rate_limit(a, S, 1, 1000000, 1));
  EXPECT(tenure_authority_set_rate_limit(a, "p", 0, 1000000, 1), INV);
  EXPECT(tenure_authority_set_rate_limit(a, "p", 1, 1000000, 0), INV);
  EXPECT(tenure_authority_set_rate_limit(a, "p", 1000001, 86400000000, 1), INV);
  EXPECT(tenure_authority_set_rate_limit(a, "p", 1, -1, 1), DUR);
  EXPECT(tenure_authority_set_rate_limit(a, "p", 1, 0, 1), DUR);
  EXPECT(tenure_authority_set_rate_limit(a, "p", 1, 86400000001, 1), DUR);
  EXPECT(tenure_authority_set_rate_limit(a, "p", 10, 5, 1), DUR);
  EXPECT(tenure_authority_set_rate_limit(a, "nope", 1, 1000000, 1), TENURE_NOT_FOUND);
  EXPECT(tenure_authority_clear_rate_limit(NULL, "p"), INV);
  BAD_ID(tenure_authority_clear_rate_limit(a, S));
  tenure_gates *gates = NULL;
  EXPECT(tenure_authority_production_gates(NULL, "p", &gates), INV);
  BAD_ID(tenure_authority_production_gates(a, S, &gates));
  EXPECT(tenure_authority_production_gates(a, "p", NULL), INV);
  EXPECT(tenure_authority_production_gates(a, "nope", &gates), TENURE_NOT_FOUND);
  CHECK(gates == NULL);
  {
    int64_t gus = 7;
    uint32_t gk = 7, gn = 7, gb = 7;
    CHECK(!tenure_gates_paused(NULL) && !tenure_gates_paused_us(NULL, &gus));
    CHECK(!tenure_gates_concurrency_limit(NULL, &gk));
    CHECK(!tenure_gates_rate_limit(NULL, &gn, &gus, &gb));
    CHECK(gus == 7 && gk == 7 && gn == 7 && gb == 7);
    tenure_gates_free(NULL);
  }
  {
    /* The outage rule (ABI 1.2): NULL handles and out-parameters, limits
     * out of range, statuses that are no failure; nothing written. */
    tenure_outage *o = NULL;
    int64_t od = 7;
    tenure_outage_step step = 7;
    EXPECT(tenure_outage_new(INT64_MIN, 1, NULL), INV);
    EXPECT(tenure_outage_new(-1, 1, &o), DUR);
    EXPECT(tenure_outage_new(INT64_MIN + 1, 1, &o), DUR);
    EXPECT(tenure_outage_new(86400000001, 1, &o), DUR);
    EXPECT(tenure_outage_new(0, 0, &o), INV);
    EXPECT(tenure_outage_new(0, 1025, &o), INV);
    EXPECT(tenure_outage_new(0, SIZE_MAX, &o), INV);
    CHECK(o == NULL);
    EXPECT(tenure_outage_failed(NULL, 0, TENURE_STORE, "store error: x", &od, &step), INV);
    EXPECT(tenure_outage_succeeded(NULL, 0, &od), INV);
    OK(tenure_outage_new(86400000000, 2, &o));
    EXPECT(tenure_outage_failed(o, 2, TENURE_STORE, "x", &od, &step), INV);
    EXPECT(tenure_outage_failed(o, SIZE_MAX, TENURE_STORE, "x", &od, &step), INV);
    EXPECT(tenure_outage_failed(o, 0, TENURE_OK, "x", &od, &step), INV);
    EXPECT(tenure_outage_failed(o, 0, 100000, "x", &od, &step), INV);
    EXPECT(tenure_outage_failed(o, 0, TENURE_STORE, "\xff", &od, &step), INV);
    EXPECT(tenure_outage_failed(o, 0, TENURE_STORE, "x", NULL, &step), INV);
    EXPECT(tenure_outage_failed(o, 0, TENURE_STORE, "x", &od, NULL), INV);
    EXPECT(tenure_outage_succeeded(o, 0, NULL), INV);
    EXPECT(tenure_outage_succeeded(o, 2, &od), INV);
    CHECK(od == 7 && step == 7);
    OK(tenure_outage_failed(o, 1, TENURE_STORE, NULL, &od, &step)); /* this thread's last error */
    CHECK(step == TENURE_OUTAGE_RETRY && od == 1000000);
    OK(tenure_outage_succeeded(o, 1, &od));
    CHECK(od == -1);
    tenure_outage_free(o);
    tenure_outage_free(NULL);
  }
  tenure_production_list *pl = NULL;
  OK(tenure_authority_productions(a, &pl));
  int64_t us = 7;
  CHECK(tenure_production_list_len(pl) == 1);
  CHECK(!tenure_production_list_backoff_base_us(pl, 0, &us) && us == 7);
  CHECK(!tenure_production_list_backoff_cap_us(pl, 0, &us) && us == 7);
  CHECK(!tenure_production_list_backoff_base_us(pl, 1, &us) && us == 7);
  CHECK(!tenure_production_list_backoff_base_us(NULL, 0, &us) && us == 7);
  tenure_production_list_free(pl);

  tenure_job_state js = 9;
  EXPECT(tenure_lease_fail_retry_after(NULL, "r", 0, &js), INV);
  EXPECT(tenure_lease_fail_retry_after(l, NULL, 0, &js), INV);
  EXPECT(tenure_lease_fail_retry_after(l, BAD_UTF8, 0, &js), INV);
  EXPECT(tenure_lease_fail_retry_after(l, LONG_REASON, 0, &js), INV);
  EXPECT(tenure_lease_fail_retry_after(l, "r", 0, NULL), INV);
  BAD_DELAY(tenure_lease_fail_retry_after(l, "r", D, &js));
  CHECK(js == 9);

  tenure_edit *e = NULL;
  REQUIRE(tenure_edit_begin(a, &e) == TENURE_OK);
  OK(tenure_job_options_set_max_hold(o, 1));
  EXPECT(tenure_edit_submit_with(NULL, "p", &spec, o, &sub), INV);
  BAD_ID(tenure_edit_submit_with(e, S, &spec, o, &sub));
  EXPECT(tenure_edit_submit_with(e, "p", NULL, o, &sub), INV);
  EXPECT(tenure_edit_submit_with(e, "p", &spec, o, NULL), INV);
  EXPECT(tenure_edit_set_production_backoff(NULL, "p", 1, 1), INV);
  BAD_ID(tenure_edit_set_production_backoff(e, S, 1, 1));
  BAD_DELAY(tenure_edit_set_production_backoff(e, "p", D, DAYS_366));
  EXPECT(tenure_edit_set_production_backoff(e, "p", 2, 1), DUR);
  EXPECT(tenure_edit_clear_production_backoff(NULL, "p"), INV);
  BAD_ID(tenure_edit_clear_production_backoff(e, S));
  EXPECT(tenure_edit_pause_production(NULL, "p", &changed), INV);
  BAD_ID(tenure_edit_pause_production(e, S, &changed));
  EXPECT(tenure_edit_pause_production(e, "p", NULL), INV);
  EXPECT(tenure_edit_resume_production(NULL, "p", &changed), INV);
  BAD_ID(tenure_edit_resume_production(e, S, &changed));
  EXPECT(tenure_edit_resume_production(e, "p", NULL), INV);
  EXPECT(tenure_edit_set_concurrency_limit(NULL, "p", 1), INV);
  BAD_ID(tenure_edit_set_concurrency_limit(e, S, 1));
  EXPECT(tenure_edit_set_concurrency_limit(e, "p", 0), INV);
  EXPECT(tenure_edit_clear_concurrency_limit(NULL, "p"), INV);
  BAD_ID(tenure_edit_clear_concurrency_limit(e, S));
  EXPECT(tenure_edit_set_rate_limit(NULL, "p", 1, 1000000, 1), INV);
  BAD_ID(tenure_edit_set_rate_limit(e, S, 1, 1000000, 1));
  EXPECT(tenure_edit_set_rate_limit(e, "p", 1, -1, 1), DUR);
  EXPECT(tenure_edit_clear_rate_limit(NULL, "p"), INV);
  BAD_ID(tenure_edit_clear_rate_limit(e, S));
  CHECK(changed);
  EXPECT(tenure_edit_fail_retry_after(NULL, l, "r", 0, &js), INV);
  EXPECT(tenure_edit_fail_retry_after(e, NULL, "r", 0, &js), INV);
  EXPECT(tenure_edit_fail_retry_after(e, l, NULL, 0, &js), INV);
  EXPECT(tenure_edit_fail_retry_after(e, l, LONG_REASON, 0, &js), INV);
  EXPECT(tenure_edit_fail_retry_after(e, l, "r", 0, NULL), INV);
  BAD_DELAY(tenure_edit_fail_retry_after(e, l, "r", D, &js));
  CHECK(sub == 77 && js == 9);
  OK(tenure_edit_commit(e)); /* commits nothing: every step above failed */
  tenure_edit_free(e);
  tenure_job_options_free(o);

  CHECK(!tenure_job_view_due_us(NULL, &us) && !tenure_job_view_max_hold_us(NULL, &us) &&
        !tenure_job_view_backoff_base_us(NULL, &us) && !tenure_job_view_backoff_cap_us(NULL, &us) &&
        us == 7);
  OK(tenure_authority_job(a, "p", "j", &v));
  CHECK(tenure_job_view_state(v) == TENURE_JOB_CLAIMED);
  CHECK(!tenure_job_view_due_us(v, &us) && !tenure_job_view_max_hold_us(v, &us) && us == 7);
  tenure_job_view_free(v);
  EXPECT(tenure_authority_job(a, "p", "k", &v), TENURE_NOT_FOUND);
  CHECK(event_count(a) == events_before);
  CHECK(tenure_lease_status_get(l) == TENURE_LEASE_STATUS_ACTIVE);
  OK(tenure_lease_release(l, &js));
  tenure_lease_free(l);
  tenure_authority_free(a);
}

/* Idempotent calls (ABI 1.1): NULL for each pointer, bad request IDs,
 * bad production/job/holder IDs, TTLs and delays, bad batch sizes, bad
 * reasons and facts, on authorities and inside edits. None
 * claims, records a request or writes an event; the out-parameters stay
 * untouched. */
static void idempotent_entry_points(const char *dir) {
  tenure_authority *a = open_store(dir, "idempotent.db");
  make_production(a, "p");
  submit_job(a, "p", "j", 3);
  submit_job(a, "p", "k", 3);
  tenure_lease *l = NULL;
  REQUIRE(tenure_authority_claim(a, "p", "j", "w", 60000000, &l) == TENURE_OK);
  size_t events_before = event_count(a);

  tenure_claim_request *r = (tenure_claim_request *)0x1;
  BAD_ID(tenure_claim_request_new(S, &r));
  CHECK(r == (tenure_claim_request *)0x1);
  EXPECT(tenure_claim_request_new("r", NULL), INV);
  REQUIRE(tenure_claim_request_new("r", &r) == TENURE_OK);
  tenure_claim_request_free(NULL);

  tenure_lease *out = POISON_LEASE;
  bool replayed = true;
  EXPECT(tenure_authority_claim_with(NULL, "p", "k", "w", 1000000, r, &out, &replayed), INV);
  BAD_ID(tenure_authority_claim_with(a, S, "k", "w", 1000000, r, &out, &replayed));
  BAD_ID(tenure_authority_claim_with(a, "p", S, "w", 1000000, r, &out, &replayed));
  BAD_HOLDER(tenure_authority_claim_with(a, "p", "k", S, 1000000, r, &out, &replayed));
  BAD_TTL(tenure_authority_claim_with(a, "p", "k", "w", T, r, &out, &replayed));
  EXPECT(tenure_authority_claim_with(a, "p", "k", "w", 1000000, NULL, &out, &replayed), INV);
  EXPECT(tenure_authority_claim_with(a, "p", "k", "w", 1000000, r, NULL, &replayed), INV);
  EXPECT(tenure_authority_claim_with(a, "p", "k", "w", 1000000, r, &out, NULL), INV);
  EXPECT(tenure_authority_claim_next_with(NULL, "p", "w", 1000000, r, &out, &replayed), INV);
  BAD_ID(tenure_authority_claim_next_with(a, S, "w", 1000000, r, &out, &replayed));
  BAD_HOLDER(tenure_authority_claim_next_with(a, "p", S, 1000000, r, &out, &replayed));
  BAD_TTL(tenure_authority_claim_next_with(a, "p", "w", T, r, &out, &replayed));
  EXPECT(tenure_authority_claim_next_with(a, "p", "w", 1000000, NULL, &out, &replayed), INV);
  EXPECT(tenure_authority_claim_next_with(a, "p", "w", 1000000, r, NULL, &replayed), INV);
  EXPECT(tenure_authority_claim_next_with(a, "p", "w", 1000000, r, &out, NULL), INV);
  CHECK(out == POISON_LEASE && replayed);

  /* The claims under a request on an authority and inside an edit, the
   * batch claim's arrays and size among them. */
  tenure_lease *slots[2] = {POISON_LEASE, POISON_LEASE};
  tenure_status sts[2] = {77, 77};
  size_t count = 9;
#define CLAIMS_WITH(H, WITH, NEXT, MANY)                                    \
  EXPECT(WITH(NULL, "p", "k", "w", 1000000, r, &out, &replayed), INV);      \
  BAD_ID(WITH(H, S, "k", "w", 1000000, r, &out, &replayed));                \
  BAD_ID(WITH(H, "p", S, "w", 1000000, r, &out, &replayed));                \
  BAD_HOLDER(WITH(H, "p", "k", S, 1000000, r, &out, &replayed));            \
  BAD_TTL(WITH(H, "p", "k", "w", T, r, &out, &replayed));                   \
  EXPECT(WITH(H, "p", "k", "w", 1000000, NULL, &out, &replayed), INV);      \
  EXPECT(WITH(H, "p", "k", "w", 1000000, r, NULL, &replayed), INV);         \
  EXPECT(WITH(H, "p", "k", "w", 1000000, r, &out, NULL), INV);              \
  EXPECT(NEXT(NULL, "p", "w", 1000000, r, &out, &replayed), INV);           \
  BAD_ID(NEXT(H, S, "w", 1000000, r, &out, &replayed));                     \
  BAD_HOLDER(NEXT(H, "p", S, 1000000, r, &out, &replayed));                 \
  BAD_TTL(NEXT(H, "p", "w", T, r, &out, &replayed));                        \
  EXPECT(NEXT(H, "p", "w", 1000000, NULL, &out, &replayed), INV);           \
  EXPECT(NEXT(H, "p", "w", 1000000, r, NULL, &replayed), INV);              \
  EXPECT(NEXT(H, "p", "w", 1000000, r, &out, NULL), INV);                   \
  EXPECT(MANY(NULL, "p", "w", 1000000, 2, r, slots, sts, &count, &replayed), INV); \
  BAD_ID(MANY(H, S, "w", 1000000, 2, r, slots, sts, &count, &replayed));    \
  BAD_HOLDER(MANY(H, "p", S, 1000000, 2, r, slots, sts, &count, &replayed)); \
  BAD_TTL(MANY(H, "p", "w", T, 2, r, slots, sts, &count, &replayed));       \
  EXPECT(MANY(H, "p", "w", 1000000, 0, r, slots, sts, &count, &replayed), INV); \
  EXPECT(MANY(H, "p", "w", 1000000, 1001, r, slots, sts, &count, &replayed), INV); \
  EXPECT(MANY(H, "p", "w", 1000000, 2, NULL, slots, sts, &count, &replayed), INV); \
  EXPECT(MANY(H, "p", "w", 1000000, 2, r, NULL, sts, &count, &replayed), INV); \
  EXPECT(MANY(H, "p", "w", 1000000, 2, r, slots, NULL, &count, &replayed), INV); \
  EXPECT(MANY(H, "p", "w", 1000000, 2, r, slots, sts, NULL, &replayed), INV); \
  EXPECT(MANY(H, "p", "w", 1000000, 2, r, slots, sts, &count, NULL), INV);
  CLAIMS_WITH(a, tenure_authority_claim_with, tenure_authority_claim_next_with,
              tenure_authority_claim_next_many_with)
  /* ABI 1.2: the same claims under their `_idempotent` names. */
  CLAIMS_WITH(a, tenure_authority_claim_idempotent, tenure_authority_claim_next_idempotent,
              tenure_authority_claim_next_many_idempotent)
  tenure_edit *e = NULL;
  REQUIRE(tenure_edit_begin(a, &e) == TENURE_OK);
  CLAIMS_WITH(e, tenure_edit_claim_with, tenure_edit_claim_next_with,
              tenure_edit_claim_next_many_with)
  CLAIMS_WITH(e, tenure_edit_claim_idempotent, tenure_edit_claim_next_idempotent,
              tenure_edit_claim_next_many_idempotent)
#undef CLAIMS_WITH
  OK(tenure_edit_commit(e)); /* commits nothing: every step above failed */
  tenure_edit_free(e);
  CHECK(out == POISON_LEASE && replayed);
  CHECK(slots[0] == POISON_LEASE && slots[1] == POISON_LEASE && sts[0] == 77 && count == 9);

  /* The batched idempotent transitions: NULL handles, arrays and items,
   * sizes 0 and over 1000, bad text and durations; out-arrays untouched. */
  const tenure_lease *ls[2] = {l, NULL};
  const tenure_lease *none[1] = {NULL};
  const char *reasons[1] = {"r"};
  const char *bad_reasons[1] = {BAD_UTF8};
  const char *null_reasons[1] = {NULL};
  bool perm[1] = {false};
  tenure_fact bad_fact = {"k", BAD_UTF8};
  const tenure_fact *bad_facts[1] = {&bad_fact};
  const tenure_fact *no_facts[1] = {NULL};
  size_t one[1] = {1};
  int64_t exps[1] = {5};
  tenure_job_state jss[1] = {9};
  bool reps[1] = {true};
  EXPECT(tenure_authority_renew_many_idempotent(NULL, ls, 1, 1000000, sts, exps, reps), INV);
  EXPECT(tenure_authority_renew_many_idempotent(a, NULL, 1, 1000000, sts, exps, reps), INV);
  EXPECT(tenure_authority_renew_many_idempotent(a, none, 1, 1000000, sts, exps, reps), INV);
  EXPECT(tenure_authority_renew_many_idempotent(a, ls, 2, 1000000, sts, exps, reps), INV);
  EXPECT(tenure_authority_renew_many_idempotent(a, ls, 0, 1000000, sts, exps, reps), INV);
  EXPECT(tenure_authority_renew_many_idempotent(a, ls, 1001, 1000000, sts, exps, reps), INV);
  EXPECT(tenure_authority_renew_many_idempotent(a, ls, 1, 1000000, NULL, exps, reps), INV);
  BAD_TTL(tenure_authority_renew_many_idempotent(a, ls, 1, T, sts, exps, reps));
  EXPECT(tenure_authority_release_many_idempotent(NULL, ls, 1, sts, jss, reps), INV);
  EXPECT(tenure_authority_release_many_idempotent(a, NULL, 1, sts, jss, reps), INV);
  EXPECT(tenure_authority_release_many_idempotent(a, none, 1, sts, jss, reps), INV);
  EXPECT(tenure_authority_release_many_idempotent(a, ls, 0, sts, jss, reps), INV);
  EXPECT(tenure_authority_release_many_idempotent(a, ls, 1001, sts, jss, reps), INV);
  EXPECT(tenure_authority_release_many_idempotent(a, ls, 1, NULL, jss, reps), INV);
  EXPECT(tenure_authority_fail_many_idempotent(NULL, ls, reasons, perm, 1, sts, jss, reps), INV);
  EXPECT(tenure_authority_fail_many_idempotent(a, NULL, reasons, perm, 1, sts, jss, reps), INV);
  EXPECT(tenure_authority_fail_many_idempotent(a, none, reasons, perm, 1, sts, jss, reps), INV);
  EXPECT(tenure_authority_fail_many_idempotent(a, ls, NULL, perm, 1, sts, jss, reps), INV);
  EXPECT(tenure_authority_fail_many_idempotent(a, ls, null_reasons, perm, 1, sts, jss, reps), INV);
  EXPECT(tenure_authority_fail_many_idempotent(a, ls, bad_reasons, perm, 1, sts, jss, reps), INV);
  EXPECT(tenure_authority_fail_many_idempotent(a, ls, reasons, NULL, 1, sts, jss, reps), INV);
  EXPECT(tenure_authority_fail_many_idempotent(a, ls, reasons, perm, 0, sts, jss, reps), INV);
  EXPECT(tenure_authority_fail_many_idempotent(a, ls, reasons, perm, 1001, sts, jss, reps), INV);
  EXPECT(tenure_authority_fail_many_idempotent(a, ls, reasons, perm, 1, NULL, jss, reps), INV);
  EXPECT(tenure_authority_complete_many_idempotent(NULL, ls, NULL, NULL, 1, sts, reps), INV);
  EXPECT(tenure_authority_complete_many_idempotent(a, NULL, NULL, NULL, 1, sts, reps), INV);
  EXPECT(tenure_authority_complete_many_idempotent(a, none, NULL, NULL, 1, sts, reps), INV);
  EXPECT(tenure_authority_complete_many_idempotent(a, ls, bad_facts, NULL, 1, sts, reps), INV);
  EXPECT(tenure_authority_complete_many_idempotent(a, ls, NULL, one, 1, sts, reps), INV);
  EXPECT(tenure_authority_complete_many_idempotent(a, ls, no_facts, one, 1, sts, reps), INV);
  EXPECT(tenure_authority_complete_many_idempotent(a, ls, bad_facts, one, 1, sts, reps), INV);
  EXPECT(tenure_authority_complete_many_idempotent(a, ls, NULL, NULL, 0, sts, reps), INV);
  EXPECT(tenure_authority_complete_many_idempotent(a, ls, NULL, NULL, 1001, sts, reps), INV);
  EXPECT(tenure_authority_complete_many_idempotent(a, ls, NULL, NULL, 1, NULL, reps), INV);
  CHECK(sts[0] == 77 && exps[0] == 5 && jss[0] == 9 && reps[0]);

  int64_t exp = 7;
  tenure_job_state js = 44;
  EXPECT(tenure_lease_renew_idempotent(NULL, 1000000, &exp, &replayed), INV);
  BAD_TTL(tenure_lease_renew_idempotent(l, T, &exp, &replayed));
  EXPECT(tenure_lease_renew_idempotent(l, 1000000, NULL, &replayed), INV);
  EXPECT(tenure_lease_renew_idempotent(l, 1000000, &exp, NULL), INV);
  EXPECT(tenure_lease_release_idempotent(NULL, &js, &replayed), INV);
  EXPECT(tenure_lease_release_idempotent(l, NULL, &replayed), INV);
  EXPECT(tenure_lease_release_idempotent(l, &js, NULL), INV);
  EXPECT(tenure_lease_fail_idempotent(NULL, "r", false, &js, &replayed), INV);
  EXPECT(tenure_lease_fail_idempotent(l, NULL, false, &js, &replayed), INV);
  EXPECT(tenure_lease_fail_idempotent(l, BAD_UTF8, false, &js, &replayed), INV);
  EXPECT(tenure_lease_fail_idempotent(l, LONG_REASON, false, &js, &replayed), INV);
  EXPECT(tenure_lease_fail_idempotent(l, "r", false, NULL, &replayed), INV);
  EXPECT(tenure_lease_fail_idempotent(l, "r", false, &js, NULL), INV);
  EXPECT(tenure_lease_fail_retry_after_idempotent(NULL, "r", 0, &js, &replayed), INV);
  EXPECT(tenure_lease_fail_retry_after_idempotent(l, NULL, 0, &js, &replayed), INV);
  EXPECT(tenure_lease_fail_retry_after_idempotent(l, BAD_UTF8, 0, &js, &replayed), INV);
  EXPECT(tenure_lease_fail_retry_after_idempotent(l, LONG_REASON, 0, &js, &replayed), INV);
  BAD_DELAY(tenure_lease_fail_retry_after_idempotent(l, "r", D, &js, &replayed));
  EXPECT(tenure_lease_fail_retry_after_idempotent(l, "r", 0, NULL, &replayed), INV);
  EXPECT(tenure_lease_fail_retry_after_idempotent(l, "r", 0, &js, NULL), INV);
  tenure_fact good = {"k", "v"};
  tenure_fact bad[] = {{NULL, "v"}, {"k", BAD_UTF8}, {"", "v"}, {"tenure.claim_id", "forged"}};
  EXPECT(tenure_lease_complete_idempotent(NULL, &good, 1, &replayed), INV);
  EXPECT(tenure_lease_complete_idempotent(l, NULL, 1, &replayed), INV);
  EXPECT(tenure_lease_complete_idempotent(l, &good, 1, NULL), INV);
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tenure_fact two[2] = {good, bad[i]};
    EXPECT(tenure_lease_complete_idempotent(l, two, 2, &replayed), INV);
  }
  CHECK(exp == 7 && js == 44 && replayed);

  tenure_job_view *v = NULL;
  OK(tenure_authority_job(a, "p", "k", &v));
  CHECK(tenure_job_view_state(v) == TENURE_JOB_REQUESTED);
  tenure_job_view_free(v);
  CHECK(event_count(a) == events_before);
  CHECK(tenure_lease_status_get(l) == TENURE_LEASE_STATUS_ACTIVE);
  /* the request ID was never used: a good claim under it is not a replay */
  OK(tenure_authority_claim_with(a, "p", "k", "w", 1000000, r, &out, &replayed));
  CHECK(out != POISON_LEASE && !replayed);
  tenure_lease_free(out);
  tenure_claim_request_free(r);
  OK(tenure_lease_release(l, &js));
  tenure_lease_free(l);
  tenure_authority_free(a);
}

/* The functions without a status: any number is answered with a static
 * string ("unknown" out of range), never NULL; versions are constants. */
static void stats_entry_points(const char *dir) {
  tenure_authority *a = NULL;
  REQUIRE(tenure_authority_open(path_in(dir, "stats.db"), NULL, &a) == TENURE_OK);
  make_production(a, "p");
  submit_job(a, "p", "j", 3);
  size_t events_before = event_count(a);
  tenure_stats *s = (tenure_stats *)0x1;
  EXPECT(tenure_authority_stats(NULL, NULL, 0, 0, &s), INV);
  EXPECT(tenure_authority_stats(a, NULL, 0, 0, NULL), INV);
  EXPECT(tenure_authority_stats(a, BAD_UTF8, 0, 0, &s), INV);
  EXPECT(tenure_authority_stats(a, "", 0, 0, &s), INV);
  EXPECT(tenure_authority_stats(a, LONG_ID, 0, 0, &s), INV);
  EXPECT(tenure_authority_stats(a, "has/slash", 0, 0, &s), INV);
  EXPECT(tenure_authority_stats(a, "missing", 0, 0, &s), TENURE_NOT_FOUND);
  EXPECT(tenure_authority_stats(a, NULL, -1, 0, &s), DUR);
  EXPECT(tenure_authority_stats(a, NULL, 0, INT64_MIN, &s), DUR);
  EXPECT(tenure_authority_stats(a, NULL, INT64_MAX, 0, &s), DUR);
  CHECK(s == (tenure_stats *)0x1);
  CHECK(event_count(a) == events_before);
  /* Accessors on NULL answer their fallback; free(NULL) is a no-op. */
  tenure_stats_free(NULL);
  CHECK(tenure_stats_now_us(NULL) == 0);
  CHECK(tenure_stats_high_water_us(NULL) == 0);
  CHECK(tenure_stats_len(NULL) == 0);
  CHECK(tenure_stats_get(NULL, 0) == NULL);
  CHECK(tenure_production_stats_name(NULL) == NULL);
  CHECK(!tenure_production_stats_cancelled(NULL));
  CHECK(tenure_production_stats_max_live_attempts(NULL) == 0);
  CHECK(!tenure_production_stats_flow_truncated(NULL));
  uint64_t n = 5;
  int64_t us = 5;
  CHECK(!tenure_production_stats_count(NULL, TENURE_STATS_WAITING_DUE, &n) && n == 5);
  CHECK(!tenure_production_stats_time_us(NULL, TENURE_STATS_WAIT_P50, &us) && us == 5);
  OK(tenure_authority_stats(a, "p", 0, 0, &s));
  const tenure_production_stats *p = tenure_stats_get(s, 0);
  CHECK(tenure_stats_get(s, 1) == NULL);
  CHECK(!tenure_production_stats_count(p, 0, &n) && n == 5);
  CHECK(!tenure_production_stats_count(p, TENURE_STATS_WAITING_DUE, NULL));
  CHECK(!tenure_production_stats_time_us(p, 0, &us) && us == 5);
  CHECK(!tenure_production_stats_time_us(p, TENURE_STATS_OLDEST_DUE_AGE, NULL));
  CHECK(tenure_production_stats_count(p, TENURE_STATS_WAITING_DUE, &n) && n == 1);
  /* The gates' accessors: NULL handles and pointers, and a production
     with no gate, write nothing. */
  uint32_t k = 5, claims = 5, burst = 5;
  int64_t interval = 5;
  CHECK(!tenure_production_stats_paused(NULL) && !tenure_production_stats_paused(p));
  CHECK(!tenure_production_stats_paused_us(NULL, &us) && us == 5);
  CHECK(!tenure_production_stats_paused_us(p, NULL));
  CHECK(!tenure_production_stats_paused_us(p, &us) && us == 5);
  CHECK(!tenure_production_stats_concurrency_limit(NULL, &k) && k == 5);
  CHECK(!tenure_production_stats_concurrency_limit(p, NULL));
  CHECK(!tenure_production_stats_concurrency_limit(p, &k) && k == 5);
  CHECK(!tenure_production_stats_rate_limit(NULL, &claims, &interval, &burst));
  CHECK(!tenure_production_stats_rate_limit(p, NULL, &interval, &burst));
  CHECK(!tenure_production_stats_rate_limit(p, &claims, NULL, &burst));
  CHECK(!tenure_production_stats_rate_limit(p, &claims, &interval, NULL));
  CHECK(!tenure_production_stats_rate_limit(p, &claims, &interval, &burst));
  CHECK(claims == 5 && interval == 5 && burst == 5);
  tenure_stats_free(s);
  tenure_authority_free(a);
}

static void static_entry_points(void) {
  const uint32_t numbers[] = {0, 1, 24, 25, 99, UINT32_MAX};
  for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; i++) {
    CHECK(tenure_status_name(numbers[i]) != NULL);
    CHECK(tenure_job_state_name(numbers[i]) != NULL);
  }
  CHECK(strcmp(tenure_status_name(UINT32_MAX), "unknown") == 0);
  CHECK(strcmp(tenure_status_name(TENURE_INVALID_ARGUMENT), "invalid_argument") == 0);
  CHECK(strcmp(tenure_job_state_name(7), "unknown") == 0);
  CHECK(strcmp(tenure_job_state_name(UINT32_MAX), "unknown") == 0);
  CHECK(strcmp(tenure_job_state_name(TENURE_JOB_CANCELLED), "cancelled") == 0);
  CHECK(tenure_abi_version() == TENURE_ABI_VERSION);
  CHECK(tenure_version() != NULL && strlen(tenure_version()) > 0);
}

/* ABI 1.2 requeue, progress checkpoints and claims across productions:
 * NULL handles and out-pointers, bad IDs, holders, TTLs and delays, 0 and
 * absurd extra attempts and limits, oversized or NULL progress, bad lists;
 * every refusal changes nothing and writes no out-parameter. */
static void steering_entry_points(const char *dir) {
  tenure_authority *a = open_store(dir, "steering.db");
  make_production(a, "p");
  submit_job(a, "p", "j", 3);
  tenure_lease *l = NULL;
  REQUIRE(tenure_authority_claim(a, "p", "j", "w", 60000000, &l) == TENURE_OK);
  size_t events_before = event_count(a);

  EXPECT(tenure_authority_requeue(NULL, "p", "j", -1, 0), INV);
  BAD_ID(tenure_authority_requeue(a, S, "j", -1, 0));
  BAD_ID(tenure_authority_requeue(a, "p", S, -1, 0));
  const int64_t bad_extra[] = {0, -2, 1001, INT64_MAX, INT64_MIN};
  for (size_t i = 0; i < sizeof bad_extra / sizeof bad_extra[0]; i++)
    EXPECT(tenure_authority_requeue(a, "p", "j", bad_extra[i], 0), INV);
  EXPECT(tenure_authority_requeue(a, "p", "j", -1, -1), DUR);
  EXPECT(tenure_authority_requeue(a, "p", "j", -1, INT64_MAX), DUR);
  EXPECT(tenure_authority_requeue(a, "p", "j", -1, 0), TENURE_JOB_LIVE);

  uint64_t n = 7;
  bool more = true;
  EXPECT(tenure_authority_requeue_all(NULL, "p", -1, 0, 10, &n, &more), INV);
  BAD_ID(tenure_authority_requeue_all(a, S, -1, 0, 10, &n, &more));
  EXPECT(tenure_authority_requeue_all(a, "p", 0, 0, 10, &n, &more), INV);
  EXPECT(tenure_authority_requeue_all(a, "p", -1, -1, 10, &n, &more), DUR);
  EXPECT(tenure_authority_requeue_all(a, "p", -1, 0, 0, &n, &more), INV);
  EXPECT(tenure_authority_requeue_all(a, "p", -1, 0, 1001, &n, &more), INV);
  EXPECT(tenure_authority_requeue_all(a, "p", -1, 0, 10, NULL, &more), INV);
  EXPECT(tenure_authority_requeue_all(a, "p", -1, 0, 10, &n, NULL), INV);
  CHECK(n == 7 && more);

  static uint8_t big[4097];
  EXPECT(tenure_lease_checkpoint(NULL, big, 1), INV);
  EXPECT(tenure_lease_checkpoint(l, big, sizeof big), INV);
  EXPECT(tenure_lease_checkpoint(l, NULL, 1), INV);
  EXPECT(tenure_lease_checkpoint(l, big, SIZE_MAX), INV);
  EXPECT(tenure_lease_renew_checkpoint(NULL, 1000000, big, 1), INV);
  EXPECT(tenure_lease_renew_checkpoint(l, 1000000, big, sizeof big), INV);
  EXPECT(tenure_lease_renew_checkpoint(l, 1000000, NULL, 1), INV);
  BAD_TTL(tenure_lease_renew_checkpoint(l, T, big, 1));

  const char *list[] = {"p"};
  const char *dup[] = {"p", "p"};
  const char *nul[] = {"p", NULL};
  const char *utf[] = {BAD_UTF8};
  tenure_lease *out = POISON_LEASE;
  EXPECT(tenure_authority_claim_next_across(NULL, list, 1, "w", 1000000, &out), INV);
  EXPECT(tenure_authority_claim_next_across(a, NULL, 1, "w", 1000000, &out), INV);
  EXPECT(tenure_authority_claim_next_across(a, list, 0, "w", 1000000, &out), INV);
  EXPECT(tenure_authority_claim_next_across(a, list, 65, "w", 1000000, &out), INV);
  EXPECT(tenure_authority_claim_next_across(a, list, SIZE_MAX, "w", 1000000, &out), INV);
  EXPECT(tenure_authority_claim_next_across(a, dup, 2, "w", 1000000, &out), INV);
  EXPECT(tenure_authority_claim_next_across(a, nul, 2, "w", 1000000, &out), INV);
  EXPECT(tenure_authority_claim_next_across(a, utf, 1, "w", 1000000, &out), INV);
  BAD_HOLDER(tenure_authority_claim_next_across(a, list, 1, S, 1000000, &out));
  BAD_TTL(tenure_authority_claim_next_across(a, list, 1, "w", T, &out));
  EXPECT(tenure_authority_claim_next_across(a, list, 1, "w", 1000000, NULL), INV);
  EXPECT(tenure_authority_claim_next_wait_across(NULL, list, 1, "w", 1000000, 0, NULL, &out), INV);
  EXPECT(tenure_authority_claim_next_wait_across(a, NULL, 1, "w", 1000000, 0, NULL, &out), INV);
  EXPECT(tenure_authority_claim_next_wait_across(a, dup, 2, "w", 1000000, 0, NULL, &out), INV);
  BAD_HOLDER(tenure_authority_claim_next_wait_across(a, list, 1, S, 1000000, 0, NULL, &out));
  BAD_TTL(tenure_authority_claim_next_wait_across(a, list, 1, "w", T, 0, NULL, &out));
  EXPECT(tenure_authority_claim_next_wait_across(a, list, 1, "w", 1000000, -1, NULL, &out), DUR);
  EXPECT(tenure_authority_claim_next_wait_across(a, list, 1, "w", 1000000, 0, NULL, NULL), INV);
  CHECK(out == POISON_LEASE);
  tenure_lease *slots[2] = {POISON_LEASE, POISON_LEASE};
  size_t count = 9;
  EXPECT(tenure_authority_claim_next_many_across(NULL, list, 1, "w", 1000000, 2, slots, &count), INV);
  EXPECT(tenure_authority_claim_next_many_across(a, NULL, 1, "w", 1000000, 2, slots, &count), INV);
  EXPECT(tenure_authority_claim_next_many_across(a, list, 0, "w", 1000000, 2, slots, &count), INV);
  EXPECT(tenure_authority_claim_next_many_across(a, list, 65, "w", 1000000, 2, slots, &count), INV);
  EXPECT(tenure_authority_claim_next_many_across(a, list, SIZE_MAX, "w", 1000000, 2, slots, &count), INV);
  EXPECT(tenure_authority_claim_next_many_across(a, dup, 2, "w", 1000000, 2, slots, &count), INV);
  EXPECT(tenure_authority_claim_next_many_across(a, nul, 2, "w", 1000000, 2, slots, &count), INV);
  EXPECT(tenure_authority_claim_next_many_across(a, utf, 1, "w", 1000000, 2, slots, &count), INV);
  BAD_HOLDER(tenure_authority_claim_next_many_across(a, list, 1, S, 1000000, 2, slots, &count));
  BAD_TTL(tenure_authority_claim_next_many_across(a, list, 1, "w", T, 2, slots, &count));
  EXPECT(tenure_authority_claim_next_many_across(a, list, 1, "w", 1000000, 0, slots, &count), INV);
  EXPECT(tenure_authority_claim_next_many_across(a, list, 1, "w", 1000000, 1001, slots, &count), INV);
  EXPECT(tenure_authority_claim_next_many_across(a, list, 1, "w", 1000000, SIZE_MAX, slots, &count), INV);
  EXPECT(tenure_authority_claim_next_many_across(a, list, 1, "w", 1000000, 2, NULL, &count), INV);
  EXPECT(tenure_authority_claim_next_many_across(a, list, 1, "w", 1000000, 2, slots, NULL), INV);
  CHECK(slots[0] == POISON_LEASE && slots[1] == POISON_LEASE && count == 9);

  CHECK(!tenure_job_view_has_progress(NULL) && tenure_job_view_progress(NULL) == NULL &&
        tenure_job_view_progress_len(NULL) == 0);
  CHECK(event_count(a) == events_before);
  tenure_job_state js = 0;
  OK(tenure_lease_release(l, &js));
  tenure_lease_free(l);
  tenure_authority_free(a);
}

/* Schedules (ABI 1.2): every entry point refuses NULL handles and
 * out-parameters, bad IDs, bad cadences and bounds, changing nothing. */
static void recurring_entry_points(const char *dir) {
  tenure_authority *a = open_store(dir, "recurring.db");
  make_production(a, "p");
  size_t events_before = event_count(a);
  tenure_schedule_def *d = NULL;
  EXPECT(tenure_schedule_def_new_every(NULL, 1000000, &d), INV);
  EXPECT(tenure_schedule_def_new_every(BAD_UTF8, 1000000, &d), INV);
  EXPECT(tenure_schedule_def_new_every("s", 1000000, NULL), INV);
  EXPECT(tenure_schedule_def_new_every("s", 0, &d), DUR);
  EXPECT(tenure_schedule_def_new_every("s", -1, &d), DUR);
  EXPECT(tenure_schedule_def_new_every("s", INT64_MAX, &d), DUR);
  EXPECT(tenure_schedule_def_new_every("s", INT64_MIN, &d), DUR);
  EXPECT(tenure_schedule_def_new_every("s", 1500000, &d), DUR);
  EXPECT(tenure_schedule_def_new_cron(NULL, "* * * * *", &d), INV);
  EXPECT(tenure_schedule_def_new_cron("s", NULL, &d), INV);
  EXPECT(tenure_schedule_def_new_cron("s", BAD_UTF8, &d), INV);
  EXPECT(tenure_schedule_def_new_cron("s", "", &d), INV);
  EXPECT(tenure_schedule_def_new_cron("s", "99 * * * *", &d), INV);
  EXPECT(tenure_schedule_def_new_cron("s", "* * * *", &d), INV);
  EXPECT(tenure_schedule_def_new_cron("s", "* * * * *", NULL), INV);
  EXPECT(tenure_schedule_def_new_cron_in(NULL, "* * * * *", "Europe/Paris", &d), INV);
  EXPECT(tenure_schedule_def_new_cron_in("s", NULL, "Europe/Paris", &d), INV);
  EXPECT(tenure_schedule_def_new_cron_in("s", "* * * * *", NULL, &d), INV);
  EXPECT(tenure_schedule_def_new_cron_in("s", "* * * * *", BAD_UTF8, &d), INV);
  EXPECT(tenure_schedule_def_new_cron_in("s", "* * * * *", "", &d), INV);
  EXPECT(tenure_schedule_def_new_cron_in("s", "* * * * *", "Europe/Nowhere", &d), INV);
  EXPECT(tenure_schedule_def_new_cron_in("s", "* * * * *", "europe/paris", &d), INV);
  EXPECT(tenure_schedule_def_new_cron_in("s", "99 * * * *", "Europe/Paris", &d), INV);
  EXPECT(tenure_schedule_def_new_cron_in("s", "* * * * *", "Europe/Paris", NULL), INV);
  CHECK(d == NULL);
  EXPECT(tenure_schedule_def_set_payload(NULL, NULL, 0), INV);
  EXPECT(tenure_schedule_def_set_job(NULL, 0, 3), INV);
  EXPECT(tenure_schedule_def_set_max_hold(NULL, 1), INV);
  EXPECT(tenure_schedule_def_set_backoff(NULL, 1, 1), INV);
  EXPECT(tenure_schedule_def_set_catch_up(NULL, 1, false), INV);
  tenure_schedule_def_free(NULL);
  OK(tenure_schedule_def_new_cron("s", "*/5 * * * *", &d));
  EXPECT(tenure_schedule_def_set_payload(d, NULL, 1), INV);
  EXPECT(tenure_schedule_def_set_payload(d, (const uint8_t *)"x", SIZE_MAX), INV);
  EXPECT(tenure_schedule_def_set_job(d, INT64_MAX, 3), INV);
  EXPECT(tenure_schedule_def_set_job(d, INT64_MIN, 3), INV);
  BAD_DELAY(tenure_schedule_def_set_max_hold(d, D));
  BAD_DELAY(tenure_schedule_def_set_backoff(d, D, DAYS_366));
  EXPECT(tenure_schedule_def_set_backoff(d, 2, 1), DUR);
  bool flag = true;
  EXPECT(tenure_authority_create_schedule(NULL, "p", d, &flag), INV);
  BAD_ID(tenure_authority_create_schedule(a, S, d, &flag));
  EXPECT(tenure_authority_create_schedule(a, "p", NULL, &flag), INV);
  EXPECT(tenure_authority_create_schedule(a, "p", d, NULL), INV);
  OK(tenure_schedule_def_set_job(d, 0, 0));
  EXPECT(tenure_authority_create_schedule(a, "p", d, &flag), INV);
  OK(tenure_schedule_def_set_job(d, 0, 3));
  OK(tenure_schedule_def_set_max_hold(d, 0));
  EXPECT(tenure_authority_create_schedule(a, "p", d, &flag), DUR);
  OK(tenure_schedule_def_set_max_hold(d, 1000000));
  OK(tenure_schedule_def_set_catch_up(d, 0, false));
  EXPECT(tenure_authority_create_schedule(a, "p", d, &flag), INV);
  OK(tenure_schedule_def_set_catch_up(d, UINT32_MAX, true));
  EXPECT(tenure_authority_create_schedule(a, "p", d, &flag), INV);
  CHECK(flag == true);
  tenure_schedule_def *bad_name = NULL;
  OK(tenure_schedule_def_new_every("has/slash", 60000000, &bad_name));
  EXPECT(tenure_authority_create_schedule(a, "p", bad_name, &flag), INV);
  tenure_schedule_def_free(bad_name);
  bad_name = NULL;
  OK(tenure_schedule_def_new_every(LONG_ID, 60000000, &bad_name));
  EXPECT(tenure_authority_create_schedule(a, "p", bad_name, &flag), INV);
  tenure_schedule_def_free(bad_name);
  EXPECT(tenure_authority_update_schedule(NULL, "p", d), INV);
  BAD_ID(tenure_authority_update_schedule(a, S, d));
  EXPECT(tenure_authority_update_schedule(a, "p", NULL), INV);
  EXPECT(tenure_authority_update_schedule(a, "p", d), INV);
  EXPECT(tenure_authority_pause_schedule(NULL, "p", "s", true, &flag), INV);
  BAD_ID(tenure_authority_pause_schedule(a, S, "s", true, &flag));
  BAD_ID(tenure_authority_pause_schedule(a, "p", S, false, &flag));
  EXPECT(tenure_authority_pause_schedule(a, "p", "s", true, NULL), INV);
  EXPECT(tenure_authority_pause_schedule(a, "p", "s", true, &flag), TENURE_NOT_FOUND);
  EXPECT(tenure_authority_delete_schedule(NULL, "p", "s", &flag), INV);
  BAD_ID(tenure_authority_delete_schedule(a, S, "s", &flag));
  BAD_ID(tenure_authority_delete_schedule(a, "p", S, &flag));
  EXPECT(tenure_authority_delete_schedule(a, "p", "s", NULL), INV);
  CHECK(flag == true);
  size_t n = 9;
  uint64_t dropped = 9;
  int64_t next = 9;
  EXPECT(tenure_authority_run_schedules(NULL, &n, &dropped, &next), INV);
  EXPECT(tenure_authority_run_schedules(a, NULL, &dropped, &next), INV);
  EXPECT(tenure_authority_run_schedules(a, &n, NULL, &next), INV);
  EXPECT(tenure_authority_run_schedules(a, &n, &dropped, NULL), INV);
  CHECK(n == 9 && dropped == 9 && next == 9);
  tenure_wait_cancel *stop = NULL;
  OK(tenure_wait_cancel_new(&stop));
  OK(tenure_wait_cancel_cancel(stop));
  EXPECT(tenure_authority_run_schedules_until(NULL, stop, NULL, NULL), INV);
  EXPECT(tenure_authority_run_schedules_until(a, NULL, NULL, NULL), INV);
  OK(tenure_authority_run_schedules_until(a, stop, NULL, NULL));
  tenure_wait_cancel_free(stop);
  tenure_schedule_list *l = NULL;
  EXPECT(tenure_authority_schedules(NULL, "p", &l), INV);
  EXPECT(tenure_authority_schedules(a, BAD_UTF8, &l), INV);
  EXPECT(tenure_authority_schedules(a, "has/slash", &l), INV);
  EXPECT(tenure_authority_schedules(a, "p", NULL), INV);
  CHECK(l == NULL);
  OK(tenure_authority_schedules(a, NULL, &l));
  CHECK(tenure_schedule_list_len(l) == 0);
  CHECK(tenure_schedule_list_len(NULL) == 0);
  CHECK(tenure_schedule_list_production(l, 0) == NULL);
  CHECK(tenure_schedule_list_name(l, 0) == NULL);
  CHECK(tenure_schedule_list_cadence(NULL, 0) == NULL);
  CHECK(tenure_schedule_list_tz(NULL, 0) == NULL);
  CHECK(!tenure_schedule_list_paused(l, 0));
  CHECK(tenure_schedule_list_catch_up(l, 0) == 0);
  int64_t us = 7;
  CHECK(!tenure_schedule_list_last_slot_us(l, 0, &us) && us == 7);
  CHECK(!tenure_schedule_list_next_slot_us(NULL, 0, &us) && us == 7);
  tenure_schedule_list_free(l);
  tenure_schedule_list_free(NULL);
  tenure_schedule_def_free(d);
  CHECK(event_count(a) == events_before);
  tenure_authority_free(a);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s SCRATCH_DIR\n", argv[0]);
    return 2;
  }
  memset(LONG_ID, 'x', sizeof LONG_ID - 1);
  memset(LONG_HOLDER, 'h', sizeof LONG_HOLDER - 1);
  memset(LONG_REASON, 'r', sizeof LONG_REASON - 1);
  authority_entry_points(argv[1]);
  edit_entry_points(argv[1]);
  token_input(argv[1]);
  retention_entry_points(argv[1]);
  batch_entry_points(argv[1]);
  schedule_entry_points(argv[1]);
  idempotent_entry_points(argv[1]);
  stats_entry_points(argv[1]);
  steering_entry_points(argv[1]);
  recurring_entry_points(argv[1]);
  static_entry_points();
  return finish();
}
