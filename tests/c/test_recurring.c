/* Schedules through the C ABI (ABI 1.2): a definition handle (every and
 * cron), create (idempotent, a conflict for another definition), pause,
 * resume, update, delete, the schedule list and the scheduler step, and
 * bad definitions refused with typed statuses, changing nothing, and the
 * scheduler loop (enqueues a 1 s schedule's slots, ends when cancelled
 * from another thread).
 * Usage: test_recurring DIR */
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "harness.h"

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static size_t schedule_count(tenure_authority *a, const char *p) {
  tenure_schedule_list *l = NULL;
  REQUIRE(tenure_authority_schedules(a, p, &l) == TENURE_OK);
  size_t n = tenure_schedule_list_len(l);
  tenure_schedule_list_free(l);
  return n;
}

static void definitions(const char *dir) {
  tenure_authority *a = open_store(dir, "defs.db");
  make_production(a, "p");
  tenure_schedule_def *d = NULL;
  /* bad cadences: out-parameters untouched */
  EXPECT(tenure_schedule_def_new_every("s", 0, &d), TENURE_INVALID_DURATION);
  EXPECT(tenure_schedule_def_new_every("s", 1500000, &d), TENURE_INVALID_DURATION);
  EXPECT(tenure_schedule_def_new_cron("s", "61 * * * *", &d), TENURE_INVALID_ARGUMENT);
  EXPECT(tenure_schedule_def_new_cron("s", "* * * * * *", &d), TENURE_INVALID_ARGUMENT);
  EXPECT(tenure_schedule_def_new_cron("s", NULL, &d), TENURE_INVALID_ARGUMENT);
  CHECK(d == NULL);
  tenure_schedule_def_free(NULL);
  tenure_schedule_list_free(NULL);

  OK(tenure_schedule_def_new_every("tick", 30000000, &d));
  OK(tenure_schedule_def_set_payload(d, (const uint8_t *)"go", 2));
  EXPECT(tenure_schedule_def_set_payload(d, NULL, 2), TENURE_INVALID_ARGUMENT);
  EXPECT(tenure_schedule_def_set_job(d, (int64_t)1 << 40, 3), TENURE_INVALID_ARGUMENT);
  OK(tenure_schedule_def_set_job(d, 2, 5));
  EXPECT(tenure_schedule_def_set_backoff(d, 0, 1000000), TENURE_INVALID_DURATION);
  /* a catch-up bound out of range is refused when the definition is used */
  OK(tenure_schedule_def_set_catch_up(d, 0, false));
  bool created = true;
  EXPECT(tenure_authority_create_schedule(a, "p", d, &created), TENURE_INVALID_ARGUMENT);
  CHECK(created == true);
  OK(tenure_schedule_def_set_catch_up(d, 1001, false));
  EXPECT(tenure_authority_create_schedule(a, "p", d, &created), TENURE_INVALID_ARGUMENT);
  CHECK(schedule_count(a, NULL) == 0);
  OK(tenure_schedule_def_set_catch_up(d, 3, true));
  EXPECT(tenure_authority_create_schedule(a, "missing", d, &created), TENURE_NOT_FOUND);
  OK(tenure_authority_create_schedule(a, "p", d, &created));
  CHECK(created == true);
  OK(tenure_authority_create_schedule(a, "p", d, &created));
  CHECK(created == false);
  OK(tenure_schedule_def_set_job(d, 7, 5));
  EXPECT(tenure_authority_create_schedule(a, "p", d, &created), TENURE_CONFLICT);

  tenure_schedule_list *l = NULL;
  OK(tenure_authority_schedules(a, "p", &l));
  REQUIRE(tenure_schedule_list_len(l) == 1);
  CHECK(streq(tenure_schedule_list_production(l, 0), "p"));
  CHECK(streq(tenure_schedule_list_name(l, 0), "tick"));
  CHECK(streq(tenure_schedule_list_cadence(l, 0), "every 30s"));
  CHECK(tenure_schedule_list_tz(l, 0) == NULL);
  CHECK(tenure_schedule_list_catch_up(l, 0) == 3);
  CHECK(!tenure_schedule_list_paused(l, 0));
  int64_t us = 7;
  CHECK(!tenure_schedule_list_last_slot_us(l, 0, &us) && us == 7);
  CHECK(tenure_schedule_list_next_slot_us(l, 0, &us) && us % 30000000 == 0);
  CHECK(tenure_schedule_list_name(l, 1) == NULL);
  tenure_schedule_list_free(l);

  bool changed = false;
  OK(tenure_authority_pause_schedule(a, "p", "tick", true, &changed));
  CHECK(changed);
  OK(tenure_authority_pause_schedule(a, "p", "tick", true, &changed));
  CHECK(!changed);
  OK(tenure_authority_pause_schedule(a, "p", "tick", false, &changed));
  CHECK(changed);
  EXPECT(tenure_authority_pause_schedule(a, "p", "nope", true, &changed), TENURE_NOT_FOUND);
  tenure_schedule_def *c = NULL;
  OK(tenure_schedule_def_new_cron("tick", "0 2 * * *", &c));
  OK(tenure_authority_update_schedule(a, "p", c));
  OK(tenure_authority_schedules(a, NULL, &l));
  CHECK(streq(tenure_schedule_list_cadence(l, 0), "cron 0 2 * * *"));
  CHECK(tenure_schedule_list_tz(l, 0) == NULL);
  tenure_schedule_list_free(l);
  /* a zoned cron cadence; an unknown zone changes nothing */
  tenure_schedule_def *z = NULL;
  EXPECT(tenure_schedule_def_new_cron_in("tick", "0 2 * * *", "Mars/Olympus", &z),
         TENURE_INVALID_ARGUMENT);
  CHECK(z == NULL);
  OK(tenure_schedule_def_new_cron_in("tick", "0 2 * * *", "Europe/Paris", &z));
  OK(tenure_authority_update_schedule(a, "p", z));
  OK(tenure_authority_schedules(a, NULL, &l));
  CHECK(streq(tenure_schedule_list_cadence(l, 0), "cron 0 2 * * * Europe/Paris"));
  CHECK(streq(tenure_schedule_list_tz(l, 0), "Europe/Paris"));
  CHECK(tenure_schedule_list_tz(l, 1) == NULL);
  tenure_schedule_list_free(l);
  tenure_schedule_def_free(z);
  bool deleted = false;
  OK(tenure_authority_delete_schedule(a, "p", "tick", &deleted));
  CHECK(deleted);
  OK(tenure_authority_delete_schedule(a, "p", "tick", &deleted));
  CHECK(!deleted);
  EXPECT(tenure_authority_update_schedule(a, "p", c), TENURE_NOT_FOUND);
  tenure_schedule_def_free(c);
  tenure_schedule_def_free(d);
  tenure_authority_free(a);
}

static void step(const char *dir) {
  tenure_authority *a = open_store(dir, "step.db");
  make_production(a, "p");
  size_t n = 9;
  uint64_t dropped = 9;
  int64_t next = 0;
  OK(tenure_authority_run_schedules(a, &n, &dropped, &next));
  CHECK(n == 0 && dropped == 0 && next == INT64_MIN);
  tenure_schedule_def *d = NULL;
  OK(tenure_schedule_def_new_every("sec", 1000000, &d));
  bool created = false;
  OK(tenure_authority_create_schedule(a, "p", d, &created));
  tenure_schedule_def_free(d);
  size_t total = 0;
  for (int i = 0; i < 40 && total == 0; i++) {
    sleep_ms(100);
    OK(tenure_authority_run_schedules(a, &n, &dropped, &next));
    total += n;
  }
  CHECK(total == 1 && next > 0);
  EXPECT(tenure_authority_run_schedules(a, NULL, &dropped, &next), TENURE_INVALID_ARGUMENT);
  tenure_schedule_list *l = NULL;
  OK(tenure_authority_schedules(a, "p", &l));
  int64_t last = 0;
  CHECK(tenure_schedule_list_last_slot_us(l, 0, &last) && last % 1000000 == 0);
  tenure_schedule_list_free(l);
  tenure_authority_free(a);
}

struct loop {
  tenure_authority *a;
  tenure_wait_cancel *cancel;
  tenure_status status;
  pthread_mutex_t mu;
  size_t enqueued;
  int steps;
};

static void on_step(void *ctx, size_t enqueued, uint64_t dropped) {
  struct loop *l = ctx;
  (void)dropped;
  pthread_mutex_lock(&l->mu);
  l->enqueued += enqueued;
  l->steps++;
  pthread_mutex_unlock(&l->mu);
}

static void *loop_thread(void *arg) {
  struct loop *l = arg;
  l->status = tenure_authority_run_schedules_until(l->a, l->cancel, on_step, l);
  return NULL;
}

static size_t loop_enqueued(struct loop *l) {
  pthread_mutex_lock(&l->mu);
  size_t n = l->enqueued;
  pthread_mutex_unlock(&l->mu);
  return n;
}

static void until_loop(const char *dir) {
  tenure_authority *a = open_store(dir, "loop.db");
  make_production(a, "p");
  tenure_schedule_def *d = NULL;
  OK(tenure_schedule_def_new_every("sec", 1000000, &d));
  bool created = false;
  OK(tenure_authority_create_schedule(a, "p", d, &created));
  tenure_schedule_def_free(d);
  struct loop l = {a, NULL, TENURE_INTERNAL, PTHREAD_MUTEX_INITIALIZER, 0, 0};
  OK(tenure_wait_cancel_new(&l.cancel));
  pthread_t t;
  REQUIRE(pthread_create(&t, NULL, loop_thread, &l) == 0);
  for (int i = 0; i < 600 && loop_enqueued(&l) == 0; i++) {
    sleep_ms(10);
  }
  CHECK(loop_enqueued(&l) >= 1);
  tenure_job_list *jobs = NULL;
  OK(tenure_authority_jobs(a, "p", NULL, &jobs));
  CHECK(tenure_job_list_len(jobs) >= 1);
  tenure_job_list_free(jobs);
  OK(tenure_wait_cancel_cancel(l.cancel));
  REQUIRE(pthread_join(t, NULL) == 0);
  CHECK(l.status == TENURE_OK);
  /* Cancelled before it starts: returns at once; NULL on_step is allowed. */
  OK(tenure_authority_run_schedules_until(a, l.cancel, NULL, NULL));
  EXPECT(tenure_authority_run_schedules_until(a, NULL, NULL, NULL), TENURE_INVALID_ARGUMENT);
  tenure_wait_cancel_free(l.cancel);
  pthread_mutex_destroy(&l.mu);
  tenure_authority_free(a);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s SCRATCH_DIR\n", argv[0]);
    return 2;
  }
  definitions(argv[1]);
  step(argv[1]);
  until_loop(argv[1]);
  return finish();
}
