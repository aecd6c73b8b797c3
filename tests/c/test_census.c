/* Bad input census, C ABI: the store-level classes test_bad_input.c does
 * not cover. A corrupt (damaged) store file and a foreign file are
 * TENURE_STORE; a store from a newer schema is TENURE_SCHEMA_TOO_NEW and
 * untouched; a read-only store (a read-only bind mount in a private mount
 * namespace, which stops root too) is TENURE_STORE on open or on every
 * write and is unchanged; a full disk (RLIMIT_FSIZE in a child, SIGXFSZ
 * ignored) is TENURE_STORE and loses nothing committed.
 * Usage: test_census DIR */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static char dirbuf[4096];

static const char *file_in(const char *dir, const char *name) {
  snprintf(dirbuf, sizeof dirbuf, "%s/%s", dir, name);
  return dirbuf;
}

static long read_file(const char *path, unsigned char **out) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc((size_t)n + 1);
  REQUIRE(b != NULL);
  REQUIRE(fread(b, 1, (size_t)n, f) == (size_t)n);
  fclose(f);
  *out = b;
  return n;
}

static void write_file(const char *path, const unsigned char *b, long n) {
  FILE *f = fopen(path, "wb");
  REQUIRE(f != NULL);
  REQUIRE(fwrite(b, 1, (size_t)n, f) == (size_t)n);
  fclose(f);
}

/* A closed store with production p and job "kept" (closing checkpoints the
 * WAL into the main file). */
static void make_store(const char *path) {
  tenure_authority *a = NULL;
  REQUIRE(tenure_authority_open(path, NULL, &a) == TENURE_OK);
  make_production(a, "p");
  submit_job(a, "p", "kept", 3);
  tenure_authority_free(a);
}

static void corrupt_and_foreign(const char *dir) {
  tenure_authority *a = (tenure_authority *)0x1;
  /* foreign: not a database */
  unsigned char junk[8192];
  memset(junk, 0x5A, sizeof junk);
  char path[4096];
  snprintf(path, sizeof path, "%s", file_in(dir, "junk.db"));
  write_file(path, junk, sizeof junk);
  EXPECT(tenure_authority_open(path, NULL, &a), TENURE_STORE);
  CHECK(a == (tenure_authority *)0x1);

  /* damaged pages of a real store */
  snprintf(path, sizeof path, "%s", file_in(dir, "damaged.db"));
  {
    tenure_authority *s = NULL;
    REQUIRE(tenure_authority_open(path, NULL, &s) == TENURE_OK);
    make_production(s, "p");
    for (int i = 0; i < 50; i++) {
      char id[16];
      snprintf(id, sizeof id, "j%d", i);
      submit_job(s, "p", id, 3);
    }
    tenure_authority_free(s);
  }
  unsigned char *b = NULL;
  long n = read_file(path, &b);
  REQUIRE(n > 4096);
  for (long i = 4096; i < n; i++) b[i] ^= 0xA5;
  write_file(path, b, n);
  free(b);
  tenure_status st = tenure_authority_open(path, NULL, &a);
  if (st == TENURE_OK) {
    /* the header survived: the damage shows on the first real read */
    tenure_lease *l = (tenure_lease *)0x1;
    tenure_status s2 = tenure_authority_claim_next(a, "p", "w", 60000000, &l);
    uint64_t v = 0;
    tenure_status s3 = tenure_authority_check(a, &v);
    CHECK(s2 == TENURE_STORE || s3 == TENURE_STORE);
    CHECK(l == (tenure_lease *)0x1);
    tenure_authority_free(a);
  } else {
    EXPECT(st, TENURE_STORE);
  }
}

static void newer_schema(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s", file_in(dir, "newer.db"));
  make_store(path);
  unsigned char *b = NULL;
  long n = read_file(path, &b);
  REQUIRE(n > 100);
  /* SQLite header offset 60: user_version (big-endian), the schema number */
  uint32_t v = ((uint32_t)b[60] << 24) | ((uint32_t)b[61] << 16) | ((uint32_t)b[62] << 8) | b[63];
  REQUIRE(v > 0);
  v += 7;
  b[60] = (unsigned char)(v >> 24);
  b[61] = (unsigned char)(v >> 16);
  b[62] = (unsigned char)(v >> 8);
  b[63] = (unsigned char)v;
  write_file(path, b, n);
  tenure_authority *a = (tenure_authority *)0x1;
  EXPECT(tenure_authority_open(path, NULL, &a), TENURE_SCHEMA_TOO_NEW);
  CHECK(a == (tenure_authority *)0x1);
  unsigned char *after = NULL;
  long m = read_file(path, &after);
  CHECK(m == n && memcmp(after, b, (size_t)n) == 0);
  free(after);
  free(b);
}

static int write_text(const char *path, const char *text) {
  int fd = open(path, O_WRONLY);
  if (fd < 0) return -1;
  ssize_t w = write(fd, text, strlen(text));
  close(fd);
  return w == (ssize_t)strlen(text) ? 0 : -1;
}

/* In the child: a private mount namespace (as root; else a user namespace
 * too), then `dir` bind-mounted read-only over itself. */
static int private_read_only(const char *dir) {
  uid_t uid = getuid();
  gid_t gid = getgid();
  if (unshare(CLONE_NEWNS) != 0) {
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) return -1;
    char m[64];
    snprintf(m, sizeof m, "0 %u 1", (unsigned)uid);
    if (write_text("/proc/self/setgroups", "deny") != 0) return -1;
    if (write_text("/proc/self/uid_map", m) != 0) return -1;
    snprintf(m, sizeof m, "0 %u 1", (unsigned)gid);
    if (write_text("/proc/self/gid_map", m) != 0) return -1;
  }
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) return -1;
  if (mount(dir, dir, NULL, MS_BIND, NULL) != 0) return -1;
  if (mount(NULL, dir, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) != 0) return -1;
  return 0;
}

static void read_only(const char *dir) {
  char sub[2048], path[4096];
  snprintf(sub, sizeof sub, "%s", file_in(dir, "ro"));
  REQUIRE(mkdir(sub, 0755) == 0 || errno == EEXIST);
  snprintf(path, sizeof path, "%s/ro.db", sub);
  make_store(path);
  unsigned char *before = NULL;
  long n = read_file(path, &before);
  REQUIRE(n > 0);
  fflush(NULL);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (private_read_only(sub) != 0) _exit(97);
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/probe", sub);
    int fd = open(probe, O_WRONLY | O_CREAT, 0600);
    if (fd >= 0) _exit(96); /* not read-only after all */
    tenure_authority *a = NULL;
    tenure_status st = tenure_authority_open(path, NULL, &a);
    if (st == TENURE_STORE) _exit(10); /* refused at open */
    if (st != TENURE_OK) _exit(2);
    bool created = false;
    tenure_status s1 = tenure_authority_create_production(a, "x", &created);
    tenure_lease *l = NULL;
    tenure_status s2 = tenure_authority_claim_next(a, "p", "w", 60000000, &l);
    tenure_submitted sub_ = 0;
    tenure_job_spec spec;
    tenure_job_spec_init(&spec);
    spec.job = "k";
    tenure_status s3 = tenure_authority_submit(a, "p", &spec, &sub_);
    tenure_prune_report r;
    tenure_status s4 = tenure_authority_prune(a, 1, 1, 1, &r); /* ABI 1.1 */
    tenure_status s5 = tenure_authority_vacuum(a);
    tenure_lease_free(l);
    tenure_authority_free(a);
    _exit(s1 == TENURE_STORE && s2 == TENURE_STORE && s3 == TENURE_STORE &&
                  s4 == TENURE_STORE && s5 == TENURE_STORE
              ? 11
              : 3);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  int code = WEXITSTATUS(status);
  if (code == 97) {
    fprintf(stderr, "read_only: no private read-only mount possible here\n");
  }
  CHECK(code == 10 || code == 11); /* 10: STORE at open; 11: STORE on each write */
  printf("read-only store: %s\n", code == 10 ? "TENURE_STORE at open"
                                  : code == 11 ? "TENURE_STORE on every write"
                                               : "unexpected");
  unsigned char *after = NULL;
  long m = read_file(path, &after);
  CHECK(m == n && memcmp(after, before, (size_t)n) == 0);
  free(after);
  free(before);
  tenure_authority *a = open_store(sub, "ro.db");
  uint64_t v = 1;
  OK(tenure_authority_check(a, &v));
  CHECK(v == 0);
  tenure_authority_free(a);
}

static void full_disk(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s", file_in(dir, "full.db"));
  make_store(path);
  struct stat sb;
  REQUIRE(stat(path, &sb) == 0);
  fflush(NULL);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    tenure_authority *a = NULL;
    if (tenure_authority_open(path, NULL, &a) != TENURE_OK) _exit(2);
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {(rlim_t)sb.st_size + 8192, RLIM_INFINITY};
    if (setrlimit(RLIMIT_FSIZE, &lim) != 0) _exit(3);
    static uint8_t payload[500000];
    memset(payload, 'x', sizeof payload);
    tenure_status st = TENURE_OK;
    for (int i = 0; i < 8 && st == TENURE_OK; i++) {
      tenure_job_spec spec;
      tenure_job_spec_init(&spec);
      char id[16];
      snprintf(id, sizeof id, "big%d", i);
      spec.job = id;
      spec.payload = payload;
      spec.payload_len = sizeof payload;
      tenure_submitted s = 0;
      st = tenure_authority_submit(a, "p", &spec, &s);
    }
    _exit(st == TENURE_STORE ? 0 : 4);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  tenure_authority *a = NULL;
  OK(tenure_authority_open(path, NULL, &a));
  REQUIRE(a != NULL);
  tenure_job_view *v = NULL;
  OK(tenure_authority_job(a, "p", "kept", &v));
  CHECK(tenure_job_view_state(v) == TENURE_JOB_REQUESTED);
  tenure_job_view_free(v);
  v = (tenure_job_view *)0x1;
  EXPECT(tenure_authority_job(a, "p", "big0", &v), TENURE_NOT_FOUND);
  uint64_t viol = 1;
  OK(tenure_authority_check(a, &viol));
  CHECK(viol == 0);
  tenure_authority_free(a);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s SCRATCH_DIR\n", argv[0]);
    return 2;
  }
  corrupt_and_foreign(argv[1]);
  newer_schema(argv[1]);
  read_only(argv[1]);
  full_disk(argv[1]);
  return finish();
}
