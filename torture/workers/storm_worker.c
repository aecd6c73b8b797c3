/* A C worker for the storm campaign (`cargo xtask torture`): claims,
 * renews and completes jobs of $TENURE_PRODUCTION in $TENURE_DB with short
 * TTLs for $TENURE_MILLIS ms, sometimes overrunning its lease on purpose,
 * appends each minted token to $TENURE_SECRETS_FILE (for the secret scan)
 * and prints `STORM <completed> <rejected>`. Exits non-zero on an
 * unexpected status. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "tenure.h"

static void sleep_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  nanosleep(&ts, NULL);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(void) {
  const char *db = getenv("TENURE_DB");
  const char *prod = getenv("TENURE_PRODUCTION");
  const char *ms = getenv("TENURE_MILLIS");
  const char *secrets = getenv("TENURE_SECRETS_FILE");
  if (!db || !prod || !ms) {
    fprintf(stderr, "storm_worker: TENURE_DB, TENURE_PRODUCTION, TENURE_MILLIS required\n");
    return 2;
  }
  tenure_open_options opts;
  tenure_open_options_init(&opts);
  opts.busy_timeout_us = 30000000;
  tenure_authority *a = NULL;
  tenure_status s = tenure_authority_open(db, &opts, &a);
  if (s != TENURE_OK) {
    fprintf(stderr, "open: %s\n", tenure_status_name(s));
    return 1;
  }
  char holder[64];
  snprintf(holder, sizeof holder, "storm-c-%d", (int)getpid());
  unsigned seed = (unsigned)getpid();
  double end = now_ms() + atof(ms);
  long done = 0, rejected = 0;
  FILE *sf = secrets ? fopen(secrets, "a") : NULL;
  while (now_ms() < end) {
    tenure_lease *l = NULL;
    s = tenure_authority_claim_next(a, prod, holder, 200000 + (int64_t)(rand_r(&seed) % 600) * 1000, &l);
    if (s == TENURE_NO_JOB_AVAILABLE || s == TENURE_BUSY) {
      sleep_us(5000);
      continue;
    }
    if (s != TENURE_OK) {
      fprintf(stderr, "claim_next: %s\n", tenure_status_name(s));
      return 1;
    }
    if (sf) {
      char tok[2100];
      size_t n = 0;
      if (tenure_lease_export_token(l, tok, sizeof tok, &n) == TENURE_OK) {
        fprintf(sf, "%s\n", tok);
        fflush(sf);
      }
      memset(tok, 0, sizeof tok);
    }
    sleep_us(rand_r(&seed) % 20 == 0 ? 900000 : (long)(rand_r(&seed) % 20) * 1000);
    s = tenure_lease_renew(l, 1000000);
    if (s == TENURE_OK) {
      tenure_fact f = {"by", holder};
      s = tenure_lease_complete(l, &f, 1);
    }
    if (s == TENURE_OK) {
      done++;
    } else if (s == TENURE_STALE_LEASE || s == TENURE_LEASE_EXPIRED || s == TENURE_CANCELLED || s == TENURE_BUSY) {
      rejected++;
    } else {
      fprintf(stderr, "complete: %s\n", tenure_status_name(s));
      return 1;
    }
    tenure_lease_free(l);
  }
  if (sf) fclose(sf);
  tenure_authority_free(a);
  printf("STORM %ld %ld\n", done, rejected);
  return 0;
}
