/* A tiny test harness for the libtenure C suites.
 *
 * CHECK(cond) and EXPECT(call, status) count passes and failures (thread-safe
 * counters); every failure prints file:line, the status names and the
 * thread's last error message. finish() prints the final line
 * "N passed, M failed" and returns the process exit code. */
#ifndef TENURE_TEST_HARNESS_H
#define TENURE_TEST_HARNESS_H

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tenure.h"

static atomic_int h_passed;
static atomic_int h_failed;

static inline const char *last_error(void) {
  static _Thread_local char buf[4096];
  size_t size = 0;
  if (tenure_last_error_message(buf, sizeof buf, &size) != TENURE_OK) {
    snprintf(buf, sizeof buf, "<message needs %zu bytes>", size);
  }
  return buf;
}

#define CHECK(cond)                                                        \
  do {                                                                     \
    if (cond) {                                                            \
      atomic_fetch_add(&h_passed, 1);                                      \
    } else {                                                               \
      atomic_fetch_add(&h_failed, 1);                                      \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__,     \
              #cond);                                                      \
    }                                                                      \
  } while (0)

#define EXPECT(call, want)                                                 \
  do {                                                                     \
    tenure_status st_ = (call);                                            \
    tenure_status want_ = (want);                                          \
    if (st_ == want_) {                                                    \
      atomic_fetch_add(&h_passed, 1);                                      \
    } else {                                                               \
      atomic_fetch_add(&h_failed, 1);                                      \
      fprintf(stderr, "%s:%d: %s\n  returned %u (%s), want %u (%s)\n"      \
              "  last error: %s\n", __FILE__, __LINE__, #call,             \
              (unsigned)st_, tenure_status_name(st_), (unsigned)want_,     \
              tenure_status_name(want_), last_error());                    \
    }                                                                      \
  } while (0)

#define OK(call) EXPECT(call, TENURE_OK)

/* Abort the suite: a precondition for the remaining checks failed. */
#define REQUIRE(cond)                                                      \
  do {                                                                     \
    if (!(cond)) {                                                         \
      fprintf(stderr, "%s:%d: REQUIRE failed: %s (last error: %s)\n",      \
              __FILE__, __LINE__, #cond, last_error());                    \
      printf("%d passed, %d failed\n", atomic_load(&h_passed),             \
             atomic_load(&h_failed) + 1);                                  \
      exit(1);                                                             \
    }                                                                      \
  } while (0)

static inline int finish(void) {
  int failed = atomic_load(&h_failed);
  printf("%d passed, %d failed\n", atomic_load(&h_passed), failed);
  return failed == 0 ? 0 : 1;
}

static inline int streq(const char *a, const char *b) {
  return a != NULL && b != NULL && strcmp(a, b) == 0;
}

/* "<dir>/<name>" into a static buffer (one use at a time). */
static inline const char *path_in(const char *dir, const char *name) {
  static char buf[4096];
  snprintf(buf, sizeof buf, "%s/%s", dir, name);
  return buf;
}

static inline tenure_authority *open_store(const char *dir, const char *name) {
  tenure_authority *a = NULL;
  tenure_status st = tenure_authority_open(path_in(dir, name), NULL, &a);
  REQUIRE(st == TENURE_OK && a != NULL);
  return a;
}

static inline void make_production(tenure_authority *a, const char *p) {
  bool created = false;
  REQUIRE(tenure_authority_create_production(a, p, &created) == TENURE_OK);
}

static inline void submit_job(tenure_authority *a, const char *p, const char *job,
                       uint32_t max_attempts) {
  tenure_job_spec spec;
  REQUIRE(tenure_job_spec_init(&spec) == TENURE_OK);
  spec.job = job;
  spec.payload = (const uint8_t *)job;
  spec.payload_len = strlen(job);
  spec.max_attempts = max_attempts;
  tenure_submitted s = 0;
  REQUIRE(tenure_authority_submit(a, p, &spec, &s) == TENURE_OK);
}

#endif
