/* A tiny test harness for the libtenure C suites.
 *
 * CHECK(cond) and EXPECT(call, status) count passes and failures (thread-safe
 * counters); every failure prints file:line, the status names and the
 * thread's last error message. finish() prints the final line
 * "N passed, M failed" and returns the process exit code.
 *
 * The store under test: store_addr(dir, name) is the SQLite file
 * "<dir>/<name>", or, when the environment says so (the variables `cargo
 * xtask` sets for its PostgreSQL run, the same names the Rust suite uses):
 *   TENURE_TEST_BACKEND=postgres
 *   TENURE_TEST_PG_URL=postgres://user@host:port/maintenance-db
 *   TENURE_TEST_CREATEDB=/path/to/createdb   (+ PGHOST, PGPORT, PGUSER)
 * the URL of a new empty database on that server, created with the
 * `createdb` program (so the C suites need no libpq). skip_on_postgres()
 * prints "skipped on PostgreSQL: ..." for SQLite-file-specific checks. */
#ifndef TENURE_TEST_HARNESS_H
#define TENURE_TEST_HARNESS_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

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

/* True when the suite runs against PostgreSQL (TENURE_TEST_BACKEND=postgres). */
static inline int on_postgres(void) {
  const char *b = getenv("TENURE_TEST_BACKEND");
  return b != NULL && strcmp(b, "postgres") == 0;
}

/* On PostgreSQL: print why `what` is skipped and return 1; else return 0.
 * Use as `if (!skip_on_postgres("x", "why")) { ...SQLite-only checks... }`. */
static inline int skip_on_postgres(const char *what, const char *why) {
  if (!on_postgres())
    return 0;
  printf("skipped on PostgreSQL: %s: %s\n", what, why);
  return 1;
}

/* A new empty database on the TENURE_TEST_PG_URL server; its URL in `out`.
 * The name is unique per call (process ID, random bits, counter). */
static inline void create_pg_database(char *out, size_t cap) {
  static unsigned counter;
  static unsigned salt;
  const char *url = getenv("TENURE_TEST_PG_URL");
  const char *createdb = getenv("TENURE_TEST_CREATEDB");
  REQUIRE(url != NULL && createdb != NULL);
  if (salt == 0) {
    FILE *r = fopen("/dev/urandom", "rb");
    REQUIRE(r != NULL && fread(&salt, sizeof salt, 1, r) == 1);
    fclose(r);
    salt |= 1;
  }
  char name[64];
  snprintf(name, sizeof name, "c_%ld_%08x_%u", (long)getpid(), salt, counter++);
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    execl(createdb, createdb, name, (char *)NULL);
    _exit(127);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  /* the maintenance URL with its database name replaced */
  const char *scheme = strstr(url, "://");
  const char *slash = strchr(scheme != NULL ? scheme + 3 : url, '/');
  const char *query = strchr(url, '?');
  int host_len = (int)(slash != NULL ? slash - url : (long)strlen(url));
  snprintf(out, cap, "%.*s/%s%s", host_len, url, name, query != NULL ? query : "");
}

/* The address of the store `name` in `dir`: "<dir>/<name>" on SQLite, a new
 * database's URL on PostgreSQL. The same name gives the same store (and the
 * same pointer) for the rest of the process: open it twice for two handles.
 * Main thread only. */
static inline const char *store_addr(const char *dir, const char *name) {
  static struct {
    char name[64];
    char addr[4096];
  } stores[32];
  static int used;
  for (int i = 0; i < used; i++)
    if (strcmp(stores[i].name, name) == 0)
      return stores[i].addr;
  REQUIRE(used < 32 && strlen(name) < sizeof stores[0].name);
  snprintf(stores[used].name, sizeof stores[used].name, "%s", name);
  if (on_postgres())
    create_pg_database(stores[used].addr, sizeof stores[used].addr);
  else
    snprintf(stores[used].addr, sizeof stores[used].addr, "%s/%s", dir, name);
  return stores[used++].addr;
}

static inline tenure_authority *open_store(const char *dir, const char *name) {
  tenure_authority *a = NULL;
  tenure_status st = tenure_authority_open(store_addr(dir, name), NULL, &a);
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

/* How many events the store holds (up to 10 000). */
static inline size_t event_count(tenure_authority *a) {
  tenure_event_list *el = NULL;
  REQUIRE(tenure_authority_events(a, 0, 10000, &el) == TENURE_OK);
  size_t n = tenure_event_list_len(el);
  tenure_event_list_free(el);
  return n;
}

#endif
