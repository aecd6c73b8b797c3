/* TENURE_CLOCK_ROLLBACK from C, on real processes: the driver writes with
 * the real clock (raising the store's durable high-water mark), then runs
 * this program again under libfaketime two hours in the past, where every
 * guarded operation must be refused, and finally checks that the store still
 * works with the real clock.
 *   test_clock DIR                    driver (needs TENURE_FAKETIME_LIB)
 *   test_clock rollback DB            the child under libfaketime */
#include <stdint.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static int child_rollback(const char *db) {
  tenure_authority *a = NULL;
  REQUIRE(tenure_authority_open(db, NULL, &a) == TENURE_OK);
  int64_t now = 0, mark = 0;
  bool blocked = false;
  OK(tenure_authority_clock(a, &now, &mark, &blocked));
  CHECK(blocked && now < mark);
  tenure_lease *l = NULL;
  EXPECT(tenure_authority_claim(a, "p", "j", "past", 30000000, &l),
         TENURE_CLOCK_ROLLBACK);
  CHECK(l == NULL);
  EXPECT(tenure_authority_claim_next(a, "p", "past", 30000000, &l),
         TENURE_CLOCK_ROLLBACK);
  CHECK(strstr(last_error(), "high-water mark") != NULL);
  tenure_authority_free(a);
  printf("child: %d passed, %d failed\n", atomic_load(&h_passed),
         atomic_load(&h_failed));
  return atomic_load(&h_failed) == 0 ? 0 : 1;
}

static int driver(const char *dir) {
  const char *lib = getenv("TENURE_FAKETIME_LIB");
  REQUIRE(lib != NULL && access(lib, R_OK) == 0);
  char db[4096];
  snprintf(db, sizeof db, "%s/clock.db", dir);
  tenure_authority *a = NULL;
  REQUIRE(tenure_authority_open(db, NULL, &a) == TENURE_OK);
  make_production(a, "p");
  submit_job(a, "p", "j", 3);
  tenure_authority_free(a);

  fflush(stdout);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
      _exit(127);
    self[n] = 0;
    setenv("LD_PRELOAD", lib, 1);
    setenv("FAKETIME", "-2h", 1);
    setenv("FAKETIME_DONT_FAKE_MONOTONIC", "1", 1);
    /* libfaketime is preloaded ahead of the ASan runtime */
    setenv("ASAN_OPTIONS", "detect_leaks=1:verify_asan_link_order=0", 1);
    char *args[] = {self, "rollback", db, NULL};
    execv(self, args);
    _exit(127);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  /* with the real clock everything works again */
  REQUIRE(tenure_authority_open(db, NULL, &a) == TENURE_OK);
  int64_t now = 0, mark = 0;
  bool blocked = true;
  OK(tenure_authority_clock(a, &now, &mark, &blocked));
  CHECK(!blocked);
  tenure_lease *l = NULL;
  OK(tenure_authority_claim(a, "p", "j", "present", 30000000, &l));
  CHECK(tenure_lease_attempt(l) == 1); /* the refused claims wrote nothing */
  OK(tenure_lease_complete(l, NULL, 0));
  tenure_lease_free(l);
  tenure_authority_free(a);
  return finish();
}

int main(int argc, char **argv) {
  if (argc == 2)
    return driver(argv[1]);
  if (argc == 3 && strcmp(argv[1], "rollback") == 0)
    return child_rollback(argv[2]);
  fprintf(stderr, "usage: %s DIR | rollback DB\n", argv[0]);
  return 2;
}
