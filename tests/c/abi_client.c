/* ABI client: compiled by `cargo xtask abi-check` against each header of
 * the current major (abi-versions/<major>.<minor>/tenure.h, the oldest
 * first) and run against the freshly built library. Built against the
 * header of minor m it uses only what that header declares (the parts
 * under `#if TENURE_ABI_MINOR >= m`), needs no symbol version newer than
 * TENURE_<major>.<m>, and must keep working for the whole major.
 * Usage: abi_client STORE_PATH */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tenure.h"

static int failures;
#define CHECK(c)                                                           \
  do {                                                                     \
    if (!(c)) {                                                            \
      failures++;                                                          \
      fprintf(stderr, "abi_client:%d: %s\n", __LINE__, #c);                \
    }                                                                      \
  } while (0)

int main(int argc, char **argv) {
  if (argc != 2)
    return 2;
  unlink(argv[1]);
  uint32_t v = tenure_abi_version();
  CHECK(v >> 16 == TENURE_ABI_MAJOR);     /* same major */
  uint32_t header_minor = TENURE_ABI_MINOR;
  CHECK((v & 0xFFFF) >= header_minor); /* at least this minor */

  tenure_open_options o;
  CHECK(tenure_open_options_init(&o) == TENURE_OK);
  tenure_authority *a = NULL;
  CHECK(tenure_authority_open(argv[1], &o, &a) == TENURE_OK);
  bool created = false;
  CHECK(tenure_authority_create_production(a, "p", &created) == TENURE_OK);
  tenure_job_spec spec;
  CHECK(tenure_job_spec_init(&spec) == TENURE_OK);
  spec.job = "j";
  tenure_submitted sub = 0;
  CHECK(tenure_authority_submit(a, "p", &spec, &sub) == TENURE_OK);
  tenure_lease *l = NULL;
  CHECK(tenure_authority_claim_next(a, "p", "client", 30000000, &l) == TENURE_OK);
  CHECK(tenure_lease_renew(l, 60000000) == TENURE_OK);
  char tok[2100];
  size_t sz = 0;
  CHECK(tenure_lease_export_token(l, tok, sizeof tok, &sz) == TENURE_OK);
  tenure_lease *l2 = NULL;
  CHECK(tenure_authority_import_lease(a, tok, &l2) == TENURE_OK);
  tenure_fact f = {"k", "v"};
  CHECK(tenure_lease_complete(l2, &f, 1) == TENURE_OK);
  CHECK(tenure_lease_complete(l, NULL, 0) == TENURE_LEASE_CLOSED);
  tenure_list_query q;
  CHECK(tenure_list_query_init(&q) == TENURE_OK);
  tenure_job_list *jl = NULL;
  CHECK(tenure_authority_jobs(a, "p", &q, &jl) == TENURE_OK);
  CHECK(tenure_job_list_len(jl) == 1);
  CHECK(tenure_job_view_state(tenure_job_list_get(jl, 0)) == TENURE_JOB_COMPLETED);
  tenure_job_list_free(jl);
  CHECK(strcmp(tenure_status_name(TENURE_LEASE_CLOSED), "lease_closed") == 0);
#if TENURE_ABI_MINOR >= 1
  /* ABI 1.1: a claim under a request, retried, and an idempotent release. */
  spec.job = "k";
  CHECK(tenure_authority_submit(a, "p", &spec, &sub) == TENURE_OK);
  tenure_claim_request *r = NULL;
  CHECK(tenure_claim_request_new("req", &r) == TENURE_OK);
  tenure_lease *c1 = NULL, *c2 = NULL;
  bool replayed = true;
  CHECK(tenure_authority_claim_with(a, "p", "k", "client", 30000000, r, &c1, &replayed) ==
        TENURE_OK);
  CHECK(!replayed);
  CHECK(tenure_authority_claim_with(a, "p", "k", "client", 30000000, r, &c2, &replayed) ==
        TENURE_OK);
  CHECK(replayed && strcmp(tenure_lease_claim_id(c1), tenure_lease_claim_id(c2)) == 0);
#if TENURE_ABI_MINOR >= 2
  /* ABI 1.2: the same claim under its `_idempotent` name replays too. */
  tenure_lease *c3 = NULL;
  replayed = false;
  CHECK(tenure_authority_claim_idempotent(a, "p", "k", "client", 30000000, r, &c3, &replayed) ==
        TENURE_OK);
  CHECK(replayed && strcmp(tenure_lease_claim_id(c1), tenure_lease_claim_id(c3)) == 0);
  tenure_lease_free(c3);
#endif
  tenure_job_state st = TENURE_JOB_ANY;
  CHECK(tenure_lease_release_idempotent(c1, &st, &replayed) == TENURE_OK);
  CHECK(!replayed && st == TENURE_JOB_REQUESTED);
  tenure_lease_free(c1);
  tenure_lease_free(c2);
  tenure_claim_request_free(r);
#endif
  memset(tok, 0, sizeof tok);
  tenure_lease_free(l);
  tenure_lease_free(l2);
  tenure_authority_free(a);
  printf("abi_client: %s\n", failures == 0 ? "ok" : "FAILED");
  return failures == 0 ? 0 : 1;
}
