/* Cross-language lease hand-off partner for tests/python/test_cross_language.py.
 *
 *   handoff STORE import          read a token on stdin, import it, renew,
 *                                 complete with fact by=c; print job, claim
 *                                 ID and the status of a bogus import
 *   handoff STORE claim PRODUCTION claim the next job and write its token on
 *                                 stdout (the Python side imports it)
 */
#include <stdio.h>
#include <string.h>

#include "tenure.h"

static int fail(const char *what, tenure_status s) {
    char msg[1024];
    size_t n = 0;
    tenure_last_error_message(msg, sizeof msg, &n);
    fprintf(stderr, "%s: %s (%u): %s\n", what, tenure_status_name(s), (unsigned)s, msg);
    return 10;
}

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    tenure_open_options o;
    tenure_open_options_init(&o);
    tenure_authority *a = NULL;
    tenure_status s = tenure_authority_open(argv[1], &o, &a);
    if (s) return fail("open", s);
    tenure_lease *l = NULL;
    if (strcmp(argv[2], "import") == 0) {
        char tok[4096];
        size_t n = fread(tok, 1, sizeof tok - 1, stdin);
        tok[n] = 0;
        s = tenure_authority_import_lease(a, tok, &l);
        memset(tok, 0, sizeof tok);
        if (s) return fail("import", s);
        printf("%s %s\n", tenure_lease_job(l), tenure_lease_claim_id(l));
        s = tenure_lease_renew(l, 1200000000); /* 20 min */
        if (s) return fail("renew", s);
        tenure_fact f = {"by", "c"};
        s = tenure_lease_complete(l, &f, 1);
        if (s) return fail("complete", s);
        tenure_lease_free(l);
        l = NULL;
        s = tenure_authority_import_lease(a, "not a token", &l);
        printf("%u %s\n", (unsigned)s, tenure_status_name(s));
    } else if (strcmp(argv[2], "claim") == 0 && argc == 4) {
        s = tenure_authority_claim_next(a, argv[3], "c-worker", 600000000, &l);
        if (s) return fail("claim", s);
        char tok[4096];
        size_t need = 0;
        s = tenure_lease_export_token(l, tok, sizeof tok, &need);
        if (s) return fail("export", s);
        fputs(tok, stdout);
        memset(tok, 0, sizeof tok);
        tenure_lease_free(l); /* frees memory only: the claim stays */
    } else {
        return 2;
    }
    tenure_authority_free(a);
    return 0;
}
