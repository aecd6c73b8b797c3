/* Token hand-off across processes.
 *   test_token_handoff DIR            driver: runs the three steps below as
 *                                     child processes of this same program
 *   ... claim DB FILE                 A: claims, writes the token to FILE
 *                                     (O_CREAT|O_EXCL, mode 0600)
 *   ... complete DB FILE              B: imports the token and completes
 *   ... stale DB FILE                 C: importing the same token now fails
 * A child exits 0 when all its checks passed. DB is a file in DIR, or on
 * PostgreSQL (see harness.h) a new database's URL shared by all processes. */
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    return NULL;
  char *buf = calloc(4096, 1);
  if (buf != NULL) {
    size_t n = fread(buf, 1, 4095, f);
    buf[n] = 0;
  }
  fclose(f);
  return buf;
}

static int child_claim(const char *db, const char *file) {
  tenure_authority *a = NULL;
  REQUIRE(tenure_authority_open(db, NULL, &a) == TENURE_OK);
  /* reserve the file before claiming: nothing is claimed if this fails */
  int fd = open(file, O_CREAT | O_EXCL | O_WRONLY, 0600);
  if (fd < 0) {
    fprintf(stderr, "(expected in the last step) cannot reserve %s: nothing "
                    "claimed\n", file);
    tenure_authority_free(a);
    return 3;
  }
  tenure_lease *l = NULL;
  OK(tenure_authority_claim(a, "handoff", "job-1", "process-a",
                            INT64_C(600000000), &l));
  REQUIRE(l != NULL);
  char tok[2100];
  size_t sz = 0;
  OK(tenure_lease_export_token(l, tok, sizeof tok, &sz));
  size_t n = strlen(tok);
  CHECK(write(fd, tok, n) == (ssize_t)n);
  CHECK(write(fd, "\n", 1) == 1);
  CHECK(close(fd) == 0);
  /* the public claim ID goes to stdout for the driver to compare */
  printf("claim_id=%s\n", tenure_lease_claim_id(l));
  memset(tok, 0, sizeof tok);
  tenure_lease_free(l); /* freeing never releases: the claim stays */
  tenure_authority_free(a);
  return atomic_load(&h_failed) == 0 ? 0 : 1;
}

static int child_complete(const char *db, const char *file) {
  tenure_authority *a = NULL;
  REQUIRE(tenure_authority_open(db, NULL, &a) == TENURE_OK);
  char *tok = read_file(file);
  REQUIRE(tok != NULL);
  tenure_lease *l = NULL;
  OK(tenure_authority_import_lease(a, tok, &l));
  REQUIRE(l != NULL);
  CHECK(streq(tenure_lease_holder(l), "process-a"));
  CHECK(streq(tenure_lease_job(l), "job-1"));
  CHECK(tenure_lease_status_get(l) == TENURE_LEASE_STATUS_ACTIVE);
  tenure_fact f = {"finished_by", "process-b"};
  OK(tenure_lease_complete(l, &f, 1));
  printf("claim_id=%s\n", tenure_lease_claim_id(l));
  memset(tok, 0, strlen(tok));
  free(tok);
  tenure_lease_free(l);
  tenure_authority_free(a);
  return atomic_load(&h_failed) == 0 ? 0 : 1;
}

static int child_stale(const char *db, const char *file) {
  tenure_authority *a = NULL;
  REQUIRE(tenure_authority_open(db, NULL, &a) == TENURE_OK);
  char *tok = read_file(file);
  REQUIRE(tok != NULL);
  tenure_lease *l = NULL;
  tenure_status st = tenure_authority_import_lease(a, tok, &l);
  CHECK(st == TENURE_LEASE_CLOSED || st == TENURE_STALE_LEASE);
  CHECK(l == NULL);
  /* the message names the job but never carries the token */
  const char *msg = last_error();
  CHECK(strstr(msg, "job-1") != NULL);
  CHECK(strstr(msg, tok + 16) == NULL);
  memset(tok, 0, strlen(tok));
  free(tok);
  tenure_authority_free(a);
  return atomic_load(&h_failed) == 0 ? 0 : 1;
}

/* Run this program as a child with the given mode; capture its stdout. */
static int run_child(const char *mode, const char *db, const char *file,
                     char *out, size_t cap) {
  int pipefd[2];
  REQUIRE(pipe(pipefd) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(pipefd[0]);
    dup2(pipefd[1], STDOUT_FILENO);
    close(pipefd[1]);
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
      _exit(127);
    self[n] = 0;
    char *args[] = {self, (char *)mode, (char *)db, (char *)file, NULL};
    execv(self, args);
    _exit(127);
  }
  close(pipefd[1]);
  size_t used = 0;
  ssize_t n;
  while (used + 1 < cap && (n = read(pipefd[0], out + used, cap - 1 - used)) > 0)
    used += (size_t)n;
  out[used] = 0;
  close(pipefd[0]);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static int driver(const char *dir) {
  char db[4096], file[4096];
  snprintf(db, sizeof db, "%s", store_addr(dir, "handoff.db"));
  snprintf(file, sizeof file, "%s/lease.token", dir);
  unlink(file);
  tenure_authority *a = NULL;
  REQUIRE(tenure_authority_open(db, NULL, &a) == TENURE_OK);
  make_production(a, "handoff");
  submit_job(a, "handoff", "job-1", 3);

  char out_a[256], out_b[256], out_c[256];
  CHECK(run_child("claim", db, file, out_a, sizeof out_a) == 0);
  struct stat sb;
  CHECK(stat(file, &sb) == 0 && (sb.st_mode & 0777) == 0600);
  CHECK(strncmp(out_a, "claim_id=", 9) == 0);

  tenure_job_view *v = NULL;
  OK(tenure_authority_job(a, "handoff", "job-1", &v));
  CHECK(tenure_job_view_state(v) == TENURE_JOB_CLAIMED);
  CHECK(streq(tenure_job_view_holder(v), "process-a"));
  tenure_job_view_free(v);

  CHECK(run_child("complete", db, file, out_b, sizeof out_b) == 0);
  CHECK(strcmp(out_a, out_b) == 0); /* B completed A's claim */
  OK(tenure_authority_job(a, "handoff", "job-1", &v));
  CHECK(tenure_job_view_state(v) == TENURE_JOB_COMPLETED);
  CHECK(tenure_job_view_attempts(v) == 1);
  tenure_job_view_free(v);
  tenure_fact_list *fl = NULL;
  OK(tenure_authority_facts(a, "handoff", "job-1", &fl));
  int found = 0;
  for (size_t i = 0; i < tenure_fact_list_len(fl); i++)
    if (streq(tenure_fact_list_key(fl, i), "finished_by"))
      found = streq(tenure_fact_list_value(fl, i), "process-b");
  CHECK(found);
  tenure_fact_list_free(fl);

  CHECK(run_child("stale", db, file, out_c, sizeof out_c) == 0);
  /* a second claim process cannot reserve the same file */
  CHECK(run_child("claim", db, file, out_c, sizeof out_c) == 3);
  unlink(file);
  tenure_authority_free(a);
  return finish();
}

int main(int argc, char **argv) {
  if (argc == 2)
    return driver(argv[1]);
  if (argc == 4 && strcmp(argv[1], "claim") == 0)
    return child_claim(argv[2], argv[3]);
  if (argc == 4 && strcmp(argv[1], "complete") == 0)
    return child_complete(argv[2], argv[3]);
  if (argc == 4 && strcmp(argv[1], "stale") == 0)
    return child_stale(argv[2], argv[3]);
  fprintf(stderr, "usage: %s DIR | claim|complete|stale DB FILE\n", argv[0]);
  return 2;
}
