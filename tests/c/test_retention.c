/* Retention through the C ABI (ABI 1.1): deleting a finished production
 * (refused with TENURE_PRODUCTION_LIVE while a job is live, changing
 * nothing), exporting it as JSON lines through a callback (a non-zero
 * return stops it), a prune step and its report, the history horizon and
 * TENURE_HISTORY_PRUNED for a reader behind it, tombstones answering a
 * resubmission, automatic retention from tenure_options_set_retention(),
 * and vacuum. Ages are whole seconds (the shortest is 1 s), so the suite
 * sleeps twice for a little over a second.
 * Usage: test_retention DIR */
#include <stdint.h>
#include <time.h>

#include "harness.h"

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static tenure_submitted submit(tenure_authority *a, const char *p, const char *job,
                               const char *payload, tenure_status want) {
  tenure_job_spec spec;
  REQUIRE(tenure_job_spec_init(&spec) == TENURE_OK);
  spec.job = job;
  spec.payload = (const uint8_t *)payload;
  spec.payload_len = strlen(payload);
  tenure_submitted s = 0;
  EXPECT(tenure_authority_submit(a, p, &spec, &s), want);
  return s;
}

/* Completes `job` with one fact. */
static void complete(tenure_authority *a, const char *p, const char *job) {
  tenure_lease *l = NULL;
  REQUIRE(tenure_authority_claim(a, p, job, "w", 60000000, &l) == TENURE_OK);
  tenure_fact f = {"artifact", "out \"1\".tar"};
  OK(tenure_lease_complete(l, &f, 1));
  tenure_lease_free(l);
}

static int job_exists(tenure_authority *a, const char *p, const char *job) {
  tenure_job_view *v = NULL;
  tenure_status st = tenure_authority_job(a, p, job, &v);
  tenure_job_view_free(v);
  REQUIRE(st == TENURE_OK || st == TENURE_NOT_FOUND);
  return st == TENURE_OK;
}

/* The export sink: keeps every line, stops (returns 1) at line `stop_at`. */
struct sink {
  char lines[32][1024];
  size_t n;
  size_t stop_at; /* 0: never */
  int bad;        /* a line whose length or shape is wrong */
};

static int collect(const char *line, size_t len, void *ctx) {
  struct sink *s = ctx;
  if (strlen(line) != len || len == 0 || line[0] != '{' || line[len - 1] != '}' ||
      strchr(line, '\n') != NULL)
    s->bad = 1;
  if (s->n < 32)
    snprintf(s->lines[s->n], sizeof s->lines[0], "%s", line);
  s->n++;
  return s->stop_at != 0 && s->n == s->stop_at ? 1 : 0;
}

static void delete_and_export(const char *dir) {
  tenure_authority *a = open_store(dir, "delete.db");
  make_production(a, "done");
  make_production(a, "live");
  submit(a, "done", "a", "make all", TENURE_OK);
  submit(a, "done", "b", "b", TENURE_OK);
  submit(a, "live", "c", "c", TENURE_OK);
  complete(a, "done", "a");
  tenure_cancelled c = 0;
  OK(tenure_authority_cancel(a, "done", "b", &c));

  /* a production with a live job: refused, nothing changes */
  size_t before = event_count(a);
  tenure_deleted_counts counts = {7, 7, 7, 7};
  EXPECT(tenure_authority_delete_production(a, "live", &counts), TENURE_PRODUCTION_LIVE);
  CHECK(strstr(last_error(), "live") != NULL);
  CHECK(counts.jobs == 7 && counts.facts == 7 && counts.events == 7 && counts.tombstones == 7);
  CHECK(event_count(a) == before);
  CHECK(job_exists(a, "live", "c"));
  submit(a, "live", "d", "d", TENURE_OK); /* not even marked cancelled */
  EXPECT(tenure_authority_delete_production(a, "nope", &counts), TENURE_NOT_FOUND);

  /* export: the production, its jobs, its facts, its events, as JSON lines */
  static struct sink s;
  memset(&s, 0, sizeof s);
  uint64_t records = 0;
  OK(tenure_authority_export_production(a, "done", collect, &s, &records));
  CHECK(!s.bad);
  CHECK(records == s.n);
  CHECK(s.n >= 1 + 2 + 1 + 5); /* production, 2 jobs, the fact, the events */
  CHECK(strstr(s.lines[0], "\"record\":\"production\"") != NULL);
  CHECK(strstr(s.lines[0], "\"name\":\"done\"") != NULL);
  CHECK(strncmp(s.lines[0], "{\"backoff\":null,\"cancelled_us\":null,\"created_us\":", 49) == 0);
  CHECK(strstr(s.lines[1], "\"record\":\"job\"") != NULL);
  CHECK(strstr(s.lines[1], "\"job\":\"a\"") != NULL);
  CHECK(strstr(s.lines[1], "\"payload_base64\":\"bWFrZSBhbGw=\"") != NULL);
  CHECK(strstr(s.lines[1], "\"state\":\"completed\"") != NULL);
  /* scheduling fields: a job submitted without delay, hold limit or back-off */
  CHECK(strstr(s.lines[1], "\"backoff\":null,\"claim_id\":") != NULL);
  CHECK(strstr(s.lines[1], "\"due_us\":null,") != NULL);
  CHECK(strstr(s.lines[1], "\"max_hold_us\":null,") != NULL);
  CHECK(strstr(s.lines[2], "\"job\":\"b\"") != NULL);
  CHECK(strstr(s.lines[2], "\"state\":\"cancelled\"") != NULL);
  int facts = 0, events = 0;
  for (size_t i = 3; i < s.n && i < 32; i++) {
    if (strstr(s.lines[i], "\"record\":\"fact\"") != NULL) {
      facts++;
      CHECK(events == 0); /* facts before events */
      if (strstr(s.lines[i], "\"key\":\"artifact\"") != NULL)
        CHECK(strstr(s.lines[i], "\"value\":\"out \\\"1\\\".tar\"") != NULL);
    } else {
      CHECK(strstr(s.lines[i], "\"record\":\"event\"") != NULL);
      CHECK(strstr(s.lines[i], "\"production\":\"done\"") != NULL);
      events++;
    }
  }
  CHECK(facts >= 1 && events >= 5);

  /* a sink that stops: TENURE_STORE, out-parameter untouched */
  memset(&s, 0, sizeof s);
  s.stop_at = 2;
  records = 99;
  EXPECT(tenure_authority_export_production(a, "done", collect, &s, &records), TENURE_STORE);
  CHECK(s.n == 2 && records == 99);
  CHECK(strstr(last_error(), "sink") != NULL);
  EXPECT(tenure_authority_export_production(a, "nope", collect, &s, &records),
         TENURE_NOT_FOUND);
  CHECK(s.n == 2 && records == 99);

  /* delete the finished one: everything of it is gone, the other stays */
  OK(tenure_authority_delete_production(a, "done", &counts));
  CHECK(counts.jobs == 2 && counts.facts >= 1 && counts.events >= 5 && counts.tombstones == 0);
  CHECK(!job_exists(a, "done", "a"));
  tenure_production_list *pl = NULL;
  OK(tenure_authority_productions(a, &pl));
  CHECK(tenure_production_list_len(pl) == 1);
  CHECK(streq(tenure_production_list_name(pl, 0), "live"));
  tenure_production_list_free(pl);
  tenure_event_list *el = NULL;
  OK(tenure_authority_production_events(a, "done", 0, 100, &el));
  CHECK(tenure_event_list_len(el) == 0);
  tenure_event_list_free(el);
  EXPECT(tenure_authority_delete_production(a, "done", &counts), TENURE_NOT_FOUND);
  bool created = false;
  OK(tenure_authority_create_production(a, "done", &created)); /* the name is free */
  CHECK(created);
  uint64_t violations = 1;
  OK(tenure_authority_check(a, &violations));
  CHECK(violations == 0);
  tenure_authority_free(a);
}

static void prune_and_horizon(const char *dir) {
  tenure_authority *a = open_store(dir, "prune.db");
  uint64_t horizon = 99;
  OK(tenure_authority_history_horizon(a, &horizon));
  CHECK(horizon == 0);
  make_production(a, "p");
  submit(a, "p", "a", "A", TENURE_OK);
  submit(a, "p", "b", "B", TENURE_OK);
  submit(a, "p", "live", "L", TENURE_OK);
  complete(a, "p", "a");
  tenure_cancelled c = 0;
  OK(tenure_authority_cancel(a, "p", "b", &c));
  tenure_lease *held = NULL;
  REQUIRE(tenure_authority_claim(a, "p", "live", "w", 60000000, &held) == TENURE_OK);

  /* nothing is a second old yet: the step removes nothing */
  tenure_prune_report r = {9, 9, 9, 9, true};
  OK(tenure_authority_prune(a, 1, 1, 0, &r));
  CHECK(r.jobs == 0 && r.tombstones == 0 && r.events == 0 && r.horizon == 0 && !r.more);
  /* a refused policy changes nothing and leaves the report alone */
  r.jobs = 9;
  EXPECT(tenure_authority_prune(a, 1, UINT64_C(315360001), 0, &r), TENURE_INVALID_DURATION);
  CHECK(r.jobs == 9);

  sleep_ms(1100);
  size_t before = event_count(a);
  OK(tenure_authority_prune(a, 1, 1, 0, &r));
  CHECK(r.jobs == 2);           /* a (completed) and b (cancelled) */
  CHECK(r.tombstones == 0);     /* tombstones kept: no tombstone age */
  CHECK(r.events == before - 1); /* all but the newest event */
  CHECK(r.horizon > 0 && !r.more);
  OK(tenure_authority_history_horizon(a, &horizon));
  CHECK(horizon == r.horizon);
  CHECK(!job_exists(a, "p", "a") && !job_exists(a, "p", "b"));
  OK(tenure_lease_renew(held, 60000000)); /* the live lease is untouched */

  /* a reader behind the horizon is told, never skipped */
  tenure_event_list *el = NULL;
  EXPECT(tenure_authority_events(a, 0, 100, &el), TENURE_HISTORY_PRUNED);
  CHECK(el == NULL);
  char want[64];
  snprintf(want, sizeof want, "up to sequence number %llu", (unsigned long long)horizon);
  CHECK(strstr(last_error(), want) != NULL);
  EXPECT(tenure_authority_production_events(a, "p", horizon - 1, 100, &el),
         TENURE_HISTORY_PRUNED);
  OK(tenure_authority_events(a, horizon, 100, &el));
  CHECK(tenure_event_list_len(el) == 2); /* the newest one kept, the renewal */
  CHECK(tenure_event_list_seq(el, 0) == horizon + 1);
  tenure_event_list_free(el);

  /* tombstones answer a resubmission as the rows did */
  CHECK(submit(a, "p", "a", "A", TENURE_OK) == TENURE_SUBMITTED_EXISTING);
  submit(a, "p", "a", "other", TENURE_CONFLICT);
  CHECK(!job_exists(a, "p", "a"));
  uint64_t violations = 1;
  OK(tenure_authority_check(a, &violations));
  CHECK(violations == 0);

  /* with a tombstone age the ID is new again */
  sleep_ms(1100);
  OK(tenure_authority_prune(a, 0, 0, 1, &r));
  CHECK(r.tombstones == 2 && r.jobs == 0 && r.events == 0);
  CHECK(submit(a, "p", "a", "other", TENURE_OK) == TENURE_SUBMITTED_CREATED);

  if (!skip_on_postgres("vacuum", "a no-op there")) {
    OK(tenure_authority_vacuum(a));
  }
  tenure_job_state after = 0;
  OK(tenure_lease_release(held, &after));
  CHECK(after == TENURE_JOB_REQUESTED);
  tenure_lease_free(held);
  tenure_authority_free(a);
}

static void automatic_retention(const char *dir) {
  tenure_options *opts = NULL;
  OK(tenure_options_new(NULL, &opts));
  REQUIRE(opts != NULL);
  EXPECT(tenure_options_set_retention(opts, UINT64_C(315360001), 0, 0), TENURE_INVALID_DURATION);
  EXPECT(tenure_options_set_retention(NULL, 1, 1, 1), TENURE_INVALID_ARGUMENT);
  OK(tenure_options_set_retention(opts, 1, 1, 0));

  tenure_authority *plain = open_store(dir, "auto.db");
  tenure_authority *a = NULL;
  OK(tenure_authority_open_with(store_addr(dir, "auto.db"), opts, &a));
  REQUIRE(a != NULL);
  make_production(plain, "p");
  submit(plain, "p", "old", "x", TENURE_OK);
  tenure_cancelled c = 0;
  OK(tenure_authority_cancel(plain, "p", "old", &c));
  sleep_ms(1100);

  /* 64 calls through a handle without retention prune nothing */
  char id[32];
  for (int i = 0; i < 64; i++) {
    snprintf(id, sizeof id, "plain-%d", i);
    submit(plain, "p", id, "x", TENURE_OK);
  }
  uint64_t horizon = 99;
  OK(tenure_authority_history_horizon(plain, &horizon));
  CHECK(horizon == 0);
  CHECK(job_exists(plain, "p", "old"));

  /* 64 committed calls through the handle with retention run a step */
  for (int i = 0; i < 64; i++) {
    snprintf(id, sizeof id, "auto-%d", i);
    submit(a, "p", id, "x", TENURE_OK);
  }
  OK(tenure_authority_history_horizon(plain, &horizon));
  CHECK(horizon > 0);
  CHECK(!job_exists(plain, "p", "old"));
  CHECK(job_exists(plain, "p", "plain-0") && job_exists(plain, "p", "auto-63"));

  /* the authority keeps its settings after the options are freed; all
   * ages 0 turn retention off */
  tenure_options_free(opts);
  OK(tenure_options_new(NULL, &opts));
  OK(tenure_options_set_retention(opts, 0, 0, 0));
  tenure_options_free(opts);
  tenure_authority_free(a);
  tenure_authority_free(plain);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s SCRATCH_DIR\n", argv[0]);
    return 2;
  }
  delete_and_export(argv[1]);
  prune_and_horizon(argv[1]);
  automatic_retention(argv[1]);
  return finish();
}
