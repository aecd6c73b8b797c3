/* C-ABI fuzz driver: feeds generated arguments to every entry point of
 * libtenure and checks the boundary contract of include/tenure.h:
 *
 * - every status returned is one the library names (tenure_status_name()
 *   is not "unknown"), and is one of the numbers this header knows;
 * - nothing crashes (built with -fsanitize=address,undefined; any report
 *   aborts the run) and nothing leaks (LeakSanitizer at exit);
 * - out-parameters are untouched on failure (pre-filled with a sentinel);
 *   the only documented exception, the size out-parameter of caller-buffer
 *   functions on TENURE_INVALID_ARGUMENT, is allowed, and the buffer itself
 *   must then be untouched;
 * - a NULL out-parameter is TENURE_INVALID_ARGUMENT;
 * - the store stays consistent (tenure_authority_check() finds nothing).
 *
 * Arguments are NULL, valid or random-byte strings (invalid UTF-8, high
 * bytes, empty, very long), int64 durations around every boundary, random
 * struct_size values (the struct lives in a zeroed 8 KiB block so any size
 * the library might accept is readable), token texts (valid, truncated,
 * mutated, oversize, foreign version, random base64url), random buffer
 * capacities (buffers are allocated with exactly that capacity, so ASan
 * catches any overrun), and real handles from a store in DIR: the
 * authority, leases (also after release/complete/fail and after their edit
 * ended) and edits (also after commit/abort).
 *
 * The ABI 1.1 functions are driven the same way (call_one_1_1): options
 * handles and open_with, waits with timeouts of at most 5 ms or out of
 * range and a cancel handle (sometimes cancelled), keepers on any lease
 * (periods of at least 50 ms or out of range) and their status, message,
 * stop and free, prune / horizon / vacuum / delete / export (a sink that
 * sometimes stops the export), every batched call on the authority and on
 * the edit (batch sizes 0, 1..8, 1000, 1001 with arrays of exactly the
 * size, or 4 slots when over the bound: such a call must not read them;
 * per-lease statuses and states must be known values, the out-arrays
 * untouched on failure), job options with delays around every bound,
 * submit_with, production back-off, fail_retry_after, and the 1.1 view
 * accessors. Every export of tenure.map is called by name here
 * (`cargo xtask test` checks it, crates/xtask/src/probes.rs).
 *
 * The run is deterministic for a given seed (the store's clock is the only
 * outside input). Usage:
 *   capi_driver DIR ITERATIONS [SECONDS [SEED]]
 * SECONDS (0 = unbounded) stops early when the time is up. Prints
 * "capi-fuzz: N executions, M distinct statuses, 0 crashes" and the harness
 * line "N passed, M failed". */
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "../../tests/c/harness.h"

/* ---- PRNG (xorshift64*) ------------------------------------------------ */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) {
  uint64_t x = rng_state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  rng_state = x;
  return x * 0x2545F4914F6CDD1Dull;
}
static uint64_t below(uint64_t n) { return n == 0 ? 0 : rnd() % n; }
static int chance(unsigned pct) { return below(100) < pct; }

/* ---- per-iteration arena of generated strings --------------------------- */
#define ARENA_MAX 128
static void *arena[ARENA_MAX];
static int arena_n;
static void *arena_alloc(size_t n) {
  REQUIRE(arena_n < ARENA_MAX);
  void *p = malloc(n);
  REQUIRE(p != NULL);
  arena[arena_n++] = p;
  return p;
}
static void arena_reset(void) {
  for (int i = 0; i < arena_n; i++) free(arena[i]);
  arena_n = 0;
}

/* Random bytes (never NUL) of length len, mostly printable or high bytes. */
static char *random_bytes(size_t len) {
  char *s = arena_alloc(len + 1);
  for (size_t i = 0; i < len; i++) {
    unsigned c;
    switch (below(4)) {
      case 0: c = 0x80 + (unsigned)below(128); break; /* high byte */
      case 1: c = 1 + (unsigned)below(255); break;
      default: c = 0x20 + (unsigned)below(95); break;
    }
    s[i] = (char)c;
  }
  s[len] = 0;
  return s;
}

static char *repeat(char c, size_t len) {
  char *s = arena_alloc(len + 1);
  memset(s, c, len);
  s[len] = 0;
  return s;
}

static const char *const PRODS[] = {"p0", "p1", "p2"};
static const char *const JOBS[] = {"j0", "j1", "j2", "j3", "j4",
                                   "j5", "j6", "j7", "j8", "j9"};

/* A string argument: mostly `valid`, else NULL / empty / random bytes /
 * invalid UTF-8 / very long / a near-valid variant. */
static const char *gen_str(const char *valid) {
  switch (below(16)) {
    case 0: return NULL;
    case 1: return "";
    case 2: return random_bytes(1 + below(40));
    case 3: {
      /* valid text with an invalid UTF-8 sequence spliced in */
      size_t n = strlen(valid);
      char *s = arena_alloc(n + 4);
      memcpy(s, valid, n);
      s[n] = (char)0xC3;
      s[n + 1] = (char)(below(2) ? 0x28 : 0xFF);
      s[n + 2] = 'x';
      s[n + 3] = 0;
      return s;
    }
    case 4: return repeat('a', 100 + below(5000)); /* oversize */
    case 5: return below(4) == 0 ? repeat('z', 1u << 20) : repeat('b', 128 + below(3));
    case 6: return random_bytes(below(300));
    case 7: return "has space\n";
    default: return valid;
  }
}
static const char *gen_prod(void) { return gen_str(PRODS[below(3)]); }
static const char *gen_job(void) { return gen_str(JOBS[below(10)]); }
static const char *gen_holder(void) { return gen_str(below(2) ? "w1" : "worker@host:1"); }

static int64_t gen_ttl(void) {
  static const int64_t special[] = {
      0, -1, 1, INT64_MIN, INT64_MAX, INT64_C(86400000000), INT64_C(86400000001),
      INT64_C(86399999999), -INT64_C(86400000000), 60000000, 1000, 2000000};
  if (chance(70)) return special[below(sizeof special / sizeof special[0])];
  return (int64_t)rnd();
}

/* A struct in a zeroed 8 KiB block: any struct_size up to 8 KiB is readable. */
static unsigned char struct_block[8192] __attribute__((aligned(16)));
static size_t gen_struct_size(size_t real) {
  switch (below(10)) {
    case 0: return 0;
    case 1: return below(real);
    case 2: return real + 1 + below(64);
    case 3: return 4096 + below(2);
    case 4: return (size_t)rnd() % sizeof struct_block;
    default: return real;
  }
}
/* Random bytes after the struct (a "newer header" tail) sometimes. */
static void tail_bytes(size_t real) {
  memset(struct_block, 0, sizeof struct_block);
  if (chance(10)) struct_block[real + below(64)] = (unsigned char)(1 + below(255));
}

/* ---- handles ----------------------------------------------------------- */
#define MAX_LEASES 24
#define MAX_TOKENS 8
static tenure_authority *A;
static tenure_lease *leases[MAX_LEASES];
static int n_leases;
static tenure_edit *edit;       /* open or finished edit, or NULL */
static char *tokens[MAX_TOKENS]; /* exported token texts (secrets; never printed) */
static int n_tokens;

static tenure_lease *pick_lease(void) {
  if (n_leases == 0 || chance(5)) return NULL;
  return leases[below((uint64_t)n_leases)];
}
static void add_lease(tenure_lease *l) {
  if (n_leases == MAX_LEASES) {
    size_t i = below(MAX_LEASES);
    tenure_lease_free(leases[i]);
    leases[i] = l;
  } else {
    leases[n_leases++] = l;
  }
}
static void add_token(const char *t) {
  size_t n = strlen(t);
  char *c = malloc(n + 1);
  REQUIRE(c != NULL);
  memcpy(c, t, n + 1);
  if (n_tokens == MAX_TOKENS) {
    size_t i = below(MAX_TOKENS);
    memset(tokens[i], 0, strlen(tokens[i]));
    free(tokens[i]);
    tokens[i] = c;
  } else {
    tokens[n_tokens++] = c;
  }
}

static const char B64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
static const char *gen_token(void) {
  const char *base = n_tokens ? tokens[below((uint64_t)n_tokens)] : "tenure-lease-v1.AAAA";
  size_t n = strlen(base);
  switch (below(9)) {
    case 0: return base;                         /* valid (or spent) */
    case 1: {                                    /* truncated */
      char *s = arena_alloc(n + 1);
      size_t k = below(n + 1);
      memcpy(s, base, k);
      s[k] = 0;
      return s;
    }
    case 2: {                                    /* one byte changed */
      char *s = arena_alloc(n + 1);
      memcpy(s, base, n + 1);
      if (n) s[below(n)] = below(2) ? B64[below(64)] : (char)(0x80 + below(128));
      return s;
    }
    case 3: {                                    /* oversize */
      size_t len = 2040 + below(40);
      char *s = arena_alloc(len + 1);
      memset(s, 'A', len);
      memcpy(s, base, n < len ? n : len);
      s[len] = 0;
      return s;
    }
    case 4: {                                    /* foreign version */
      char *s = arena_alloc(n + 8);
      snprintf(s, n + 8, "tenure-lease-v%u.%s", (unsigned)below(12),
               strchr(base, '.') ? strchr(base, '.') + 1 : base);
      return s;
    }
    case 5: {                                    /* prefix + random base64url */
      size_t len = below(200);
      char *s = arena_alloc(len + 20);
      strcpy(s, "tenure-lease-v1.");
      size_t p = strlen(s);
      for (size_t i = 0; i < len; i++) s[p + i] = B64[below(64)];
      s[p + len] = 0;
      return s;
    }
    default: return gen_str(base);
  }
}

/* ---- checking ---------------------------------------------------------- */
static unsigned long executions;
static unsigned long seen[256];
static char SENT_OBJ;
#define SENT_PTR ((void *)&SENT_OBJ)
#define SENT_U32 UINT32_C(0xA5A5A5A5)
#define SENT_U64 UINT64_C(0xA5A5A5A5A5A5A5A5)
#define SENT_BYTE 0xA5

/* A batched claim's outcome: with a NULL out-pointer (`on`) it is
   INVALID_ARGUMENT; refused, nothing was written; otherwise `count` of the
   `k` slots hold leases (kept), the rest untouched. */
static void check_claimed(tenure_status st, int on, tenure_lease **slots, size_t k, size_t count,
                          size_t n) {
  if (on) CHECK(st == TENURE_INVALID_ARGUMENT);
  if (st != TENURE_OK) {
    CHECK(count == (size_t)SENT_U64);
    for (size_t i = 0; i < k; i++) CHECK(slots[i] == SENT_PTR);
    return;
  }
  CHECK(count <= n);
  for (size_t i = 0; i < k; i++) {
    if (i < count) {
      CHECK(slots[i] != SENT_PTR && slots[i] != NULL);
      if (slots[i] != SENT_PTR && slots[i] != NULL) add_lease(slots[i]);
    } else {
      CHECK(slots[i] == SENT_PTR);
    }
  }
}

/* The highest status number this header names (ABI 1.1 appended 22..24,
 * ABI 1.2 25..28). */
#define LAST_STATUS TENURE_JOB_LIVE

/* A status the library names and this header knows. */
static int known_status(tenure_status st) {
  const char *name = tenure_status_name(st);
  return st <= LAST_STATUS && name != NULL &&
         strcmp(name, "unknown") != 0;
}

static void note(tenure_status st, const char *what) {
  executions++;
  if (!known_status(st)) {
    fprintf(stderr, "%s: unknown status %u\n", what, (unsigned)st);
    CHECK(0);
  }
  if (st == TENURE_INTERNAL) {
    fprintf(stderr, "%s: TENURE_INTERNAL: %s\n", what, last_error());
    CHECK(0);
  }
  if (st < 256) seen[st]++;
  /* the message: empty exactly after success, and always retrievable */
  size_t sz = 0;
  tenure_status m = tenure_last_error_message(NULL, 0, &sz);
  if (st == TENURE_OK) CHECK(m == TENURE_INVALID_ARGUMENT && sz == 1); /* "" needs 1 byte */
  else CHECK(m == TENURE_INVALID_ARGUMENT && sz > 1);
}

/* A pointer out-parameter: check and return what was written (or NULL). */
static void *take_ptr(tenure_status st, void *out, int out_null, const char *what) {
  if (out_null) {
    if (st != TENURE_INVALID_ARGUMENT) {
      fprintf(stderr, "%s: NULL out-parameter gave %s\n", what, tenure_status_name(st));
      CHECK(0);
    }
    return NULL;
  }
  if (st != TENURE_OK) {
    if (out != SENT_PTR) {
      fprintf(stderr, "%s: out-parameter written on failure\n", what);
      CHECK(0);
    }
    return NULL;
  }
  if (out == SENT_PTR || out == NULL) {
    fprintf(stderr, "%s: success without a handle\n", what);
    CHECK(0);
    return NULL;
  }
  return out;
}
static void check_scalar(tenure_status st, int unchanged, int out_null, const char *what) {
  if (out_null) {
    if (st != TENURE_INVALID_ARGUMENT) {
      fprintf(stderr, "%s: NULL out-parameter gave %s\n", what, tenure_status_name(st));
      CHECK(0);
    }
  } else if (st != TENURE_OK && !unchanged) {
    fprintf(stderr, "%s: out-parameter written on failure\n", what);
    CHECK(0);
  }
}

/* ---- entry points ------------------------------------------------------ */
static int auth_or_null_is_null;
static const tenure_authority *gen_auth(void) {
  auth_or_null_is_null = chance(3);
  return auth_or_null_is_null ? NULL : A;
}

static void read_list_views(void) {
  /* exercise the list accessors with NULL and random indices */
  tenure_job_list *jl = NULL;
  tenure_list_query q;
  tenure_list_query_init(&q);
  if (tenure_authority_jobs(A, PRODS[below(3)], &q, &jl) == TENURE_OK) {
    size_t n = tenure_job_list_len(jl);
    size_t i = below(n + 3);
    const tenure_job_view *v = tenure_job_list_get(jl, i);
    CHECK((i < n) == (v != NULL));
    int64_t us = (int64_t)SENT_U64;
    (void)tenure_job_view_job(v);
    (void)tenure_job_view_production(v);
    (void)tenure_job_view_holder(v);
    (void)tenure_job_view_claim_id(v);
    (void)tenure_job_view_last_error(v);
    (void)tenure_job_view_state(v);
    (void)tenure_job_view_attempts(v);
    (void)tenure_job_view_max_attempts(v);
    (void)tenure_job_view_priority(v);
    (void)tenure_job_view_created_us(v);
    (void)tenure_job_view_updated_us(v);
    (void)tenure_job_view_payload_len(v);
    if (!tenure_job_view_expires_us(v, &us)) CHECK(us == (int64_t)SENT_U64);
    us = (int64_t)SENT_U64;
    if (!tenure_job_view_due_us(v, &us)) CHECK(us == (int64_t)SENT_U64);
    us = (int64_t)SENT_U64;
    if (!tenure_job_view_max_hold_us(v, &us)) CHECK(us == (int64_t)SENT_U64);
    us = (int64_t)SENT_U64;
    if (!tenure_job_view_backoff_base_us(v, &us)) CHECK(us == (int64_t)SENT_U64);
    us = (int64_t)SENT_U64;
    if (!tenure_job_view_backoff_cap_us(v, &us)) CHECK(us == (int64_t)SENT_U64);
    tenure_job_list_free(jl);
  }
  executions++;
}

/* ---- ABI 1.1: waits, keepers, options, retention, batches, scheduling --- */
#define MAX_KEEPERS 4
#define DAYS_366 INT64_C(31622400000000)
static tenure_keeper *keepers[MAX_KEEPERS];
static int n_keepers;
static tenure_wait_cancel *wait_cancel; /* NULL or a live handle (maybe cancelled) */

static tenure_keeper *pick_keeper(void) {
  if (n_keepers == 0 || chance(5)) return NULL;
  return keepers[below((uint64_t)n_keepers)];
}
static void add_keeper(tenure_keeper *k) {
  if (n_keepers == MAX_KEEPERS) {
    size_t i = below(MAX_KEEPERS);
    tenure_keeper_free(keepers[i]);
    keepers[i] = k;
  } else {
    keepers[n_keepers++] = k;
  }
}

/* A delay (not-before, retry delay, hold limit, back-off): 0 ..= 366 days. */
static int64_t gen_delay(void) {
  static const int64_t special[] = {0,        1,        -1,           INT64_MIN, INT64_MAX,
                                    DAYS_366, DAYS_366 + 1, 1000000, 60000000,  DAYS_366 - 1};
  if (chance(70)) return special[below(sizeof special / sizeof special[0])];
  return (int64_t)rnd();
}
/* A wait timeout: the valid ones are at most 5 ms (a valid timeout may be
 * slept in full); the rest are out of range (negative, over 24 h). */
static int64_t gen_wait_timeout(void) {
  static const int64_t special[] = {0,         1,         1000,         5000,
                                    -1,        INT64_MIN, INT64_MAX,    INT64_C(86400000001)};
  if (chance(80)) return special[below(sizeof special / sizeof special[0])];
  int64_t r = (int64_t)(rnd() >> 1);
  return chance(50) ? -r - 1 : INT64_C(86400000001) + r % (INT64_MAX - INT64_C(86400000001));
}
/* A keep-alive period: out of range, or valid and at least 50 ms (no busy
 * renewal loop). */
static int64_t gen_every(void) {
  static const int64_t special[] = {0,       -1,       INT64_MIN, INT64_MAX, 50000,
                                    1000000, 60000000, 86400000000, INT64_C(86400000001)};
  return special[below(sizeof special / sizeof special[0])];
}
/* A retention age in whole seconds: 0 (keep) ..= 3650 days, or over. */
static uint64_t gen_age(void) {
  static const uint64_t special[] = {0, 1, 315360000, 315360001, UINT64_MAX, 86400};
  if (chance(80)) return special[below(sizeof special / sizeof special[0])];
  return rnd();
}
/* A batch size: 0, small, the bound, over it. The arrays handed over have
 * exactly min(n, 4) slots for n over the bound: it must be refused unread. */
static size_t gen_batch(void) {
  switch (below(10)) {
    case 0: return 0;
    case 1: return 1001;
    case 2: return chance(10) ? 1000 : 1 + below(8);
    default: return 1 + below(4);
  }
}
static size_t batch_slots(size_t n) { return n > 1000 ? 4 : (n ? n : 1); }

/* Per-lease outcomes of a successful batch: known statuses and states. */
static void check_batch_out(tenure_status st, size_t n, const tenure_status *sts,
                            const tenure_job_state *states, int on_edit, const char *what) {
  size_t k = batch_slots(n);
  if (st != TENURE_OK) {
    int same = 1;
    for (size_t i = 0; i < k; i++) {
      same &= sts[i] == SENT_U32;
      if (states) same &= states[i] == SENT_U32;
    }
    if (!same) {
      fprintf(stderr, "%s: out-array written on failure\n", what);
      CHECK(0);
    }
    return;
  }
  for (size_t i = 0; i < n; i++) {
    if (!known_status(sts[i]) || sts[i] == TENURE_INTERNAL || (on_edit && sts[i] != TENURE_OK)) {
      fprintf(stderr, "%s: lease %zu has status %u\n", what, i, (unsigned)sts[i]);
      CHECK(0);
    }
    if (sts[i] < 256) seen[sts[i]]++;
    if (states && (states[i] > TENURE_JOB_CANCELLED ||
                   (sts[i] != TENURE_OK && states[i] != TENURE_JOB_ANY))) {
      fprintf(stderr, "%s: lease %zu has state %u\n", what, i, (unsigned)states[i]);
      CHECK(0);
    }
  }
}

static int export_sink(const char *line, size_t len, void *ctx) {
  CHECK(line != NULL && strlen(line) == len && len > 0 && line[0] == '{');
  unsigned long *n = ctx;
  *n += 1;
  return chance(10) ? 1 + (int)below(5) : 0; /* sometimes stop the export */
}

/* A caller buffer of exactly `cap` bytes (or NULL), pre-filled. */
static char *sent_buf(size_t cap) {
  char *buf = chance(10) ? NULL : malloc(cap ? cap : 1);
  if (buf) memset(buf, SENT_BYTE, cap ? cap : 1);
  return buf;
}
static int all_sent(const void *p, size_t n) {
  int same = 1;
  for (size_t i = 0; p && i < n; i++) same &= ((const unsigned char *)p)[i] == SENT_BYTE;
  return same;
}

/* A hostile store path (random names are removed again by open_done). */
static const char *gen_path(void) {
  switch (below(6)) {
    case 0: return NULL;
    case 1: return "";
    case 2: return "."; /* a directory */
    case 3: return "corrupt.db";
    case 4: {
      char *s = random_bytes(1 + below(300));
      for (char *c = s; *c; c++)
        if (*c == '/') *c = '_';
      return s;
    }
    default: return "other.db";
  }
}
static void open_done(tenure_status st, const char *path, tenure_authority *out, int on,
                      const char *what) {
  tenure_authority_free(take_ptr(st, out, on, what));
  if (st == TENURE_OK && path != NULL && strcmp(path, "other.db") != 0) {
    /* a random name became a store: remove it again */
    unlink(path);
    static const char *const sidecars[] = {"-wal", "-shm", "-tenure-queue"};
    for (size_t i = 0; i < sizeof sidecars / sizeof sidecars[0]; i++) {
      char side[400];
      snprintf(side, sizeof side, "%s%s", path, sidecars[i]);
      unlink(side);
    }
  }
}

/* One generated ABI 1.1 call. */
/* A claim request for the idempotent calls: NULL or a live handle, kept
 * across calls so that retries replay. */
static tenure_claim_request *claim_req;

/* A batch claim under a request (ABI 1.1) on the authority or the edit:
 * on success each slot below the count holds OK and a lease or a status
 * and NULL, the rest stay untouched; on failure nothing is written. */
static void call_claim_many_with(int on) {
  int on_edit = chance(30);
  const char *what = on_edit ? "edit_claim_next_many_with" : "claim_next_many_with";
  size_t n = gen_batch();
  size_t k = batch_slots(n);
  tenure_lease **slots = malloc(k * sizeof *slots);
  tenure_status *sts = malloc(k * sizeof *sts);
  REQUIRE(slots != NULL && sts != NULL);
  for (size_t i = 0; i < k; i++) {
    slots[i] = SENT_PTR;
    sts[i] = SENT_U32;
  }
  size_t count = (size_t)SENT_U64;
  bool replayed = false;
  tenure_lease **arr = chance(5) ? NULL : slots;
  tenure_status *sarr = chance(5) ? NULL : sts;
  const tenure_claim_request *r = chance(5) ? NULL : claim_req;
  /* ABI 1.2: the same call under its `_idempotent` name half the time. */
  int alias = chance(50);
  tenure_status st =
      on_edit ? (alias ? tenure_edit_claim_next_many_idempotent
                       : tenure_edit_claim_next_many_with)(chance(5) ? NULL : edit, gen_prod(),
                                                           gen_holder(), gen_ttl(), n, r, arr,
                                                           sarr, on ? NULL : &count, &replayed)
              : (alias ? tenure_authority_claim_next_many_idempotent
                       : tenure_authority_claim_next_many_with)(gen_auth(), gen_prod(),
                                                                gen_holder(), gen_ttl(), n, r,
                                                                arr, sarr, on ? NULL : &count,
                                                                &replayed);
  note(st, what);
  if (on) CHECK(st == TENURE_INVALID_ARGUMENT);
  if (st != TENURE_OK) {
    CHECK(count == (size_t)SENT_U64);
    for (size_t i = 0; i < k; i++) CHECK(slots[i] == SENT_PTR && sts[i] == SENT_U32);
  } else {
    CHECK(count <= n);
    for (size_t i = 0; i < k; i++) {
      if (i >= count) {
        CHECK(slots[i] == SENT_PTR && sts[i] == SENT_U32);
      } else if (sts[i] == TENURE_OK) {
        CHECK(slots[i] != SENT_PTR && slots[i] != NULL);
        if (slots[i] != SENT_PTR && slots[i] != NULL) add_lease(slots[i]);
      } else {
        CHECK(known_status(sts[i]) && sts[i] != TENURE_INTERNAL && replayed && slots[i] == NULL);
      }
    }
  }
  free(slots);
  free(sts);
}

/* The batched transitions as idempotent calls (ABI 1.1): statuses,
 * states, expiries and replayed flags per lease; optional arrays NULL. */
static void call_many_idempotent(int on) {
  const char *what;
  size_t n = gen_batch();
  size_t k = batch_slots(n);
  const tenure_lease **ls = malloc(k * sizeof *ls);
  tenure_status *sts = malloc(k * sizeof *sts);
  tenure_job_state *states = malloc(k * sizeof *states);
  int64_t *exps = malloc(k * sizeof *exps);
  bool *reps = malloc(k * sizeof *reps);
  const char **reasons = malloc(k * sizeof *reasons);
  bool *perm = malloc(k * sizeof *perm);
  const tenure_fact **facts = malloc(k * sizeof *facts);
  size_t *n_facts = malloc(k * sizeof *n_facts);
  tenure_fact pool[2] = {{"k1", "v"}, {"out.size", "12"}};
  REQUIRE(ls && sts && states && exps && reps && reasons && perm && facts && n_facts);
  for (size_t i = 0; i < k; i++) {
    ls[i] = pick_lease();
    sts[i] = SENT_U32;
    states[i] = SENT_U32;
    exps[i] = (int64_t)SENT_U64;
    reps[i] = false;
    reasons[i] = i < 8 ? gen_str("batch failure") : "batch failure";
    perm[i] = below(2);
    n_facts[i] = below(3);
    facts[i] = n_facts[i] == 0 && chance(50) ? NULL : pool;
  }
  const tenure_authority *a = gen_auth();
  const tenure_lease *const *lsa = chance(5) ? NULL : (const tenure_lease *const *)ls;
  tenure_status *out = on ? NULL : sts;
  tenure_job_state *outs = chance(20) ? NULL : states;
  bool *outr = chance(20) ? NULL : reps;
  tenure_status st;
  switch (below(4)) {
    case 0: {
      what = "renew_many_idempotent";
      int64_t *oute = chance(20) ? NULL : exps;
      st = tenure_authority_renew_many_idempotent(a, lsa, n, gen_ttl(), out, oute, outr);
      if (st != TENURE_OK) for (size_t i = 0; i < k; i++) CHECK(exps[i] == (int64_t)SENT_U64);
      outs = NULL;
      break;
    }
    case 1:
      what = "release_many_idempotent";
      st = tenure_authority_release_many_idempotent(a, lsa, n, out, outs, outr);
      break;
    case 2: {
      what = "fail_many_idempotent";
      const char *const *r = chance(5) ? NULL : (const char *const *)reasons;
      const bool *p = chance(5) ? NULL : perm;
      st = tenure_authority_fail_many_idempotent(a, lsa, r, p, n, out, outs, outr);
      break;
    }
    default: {
      what = "complete_many_idempotent";
      int none = chance(20);
      const tenure_fact *const *f = none ? NULL : (const tenure_fact *const *)facts;
      const size_t *nf = none ? NULL : n_facts;
      st = tenure_authority_complete_many_idempotent(a, lsa, f, nf, n, out, outr);
      outs = NULL;
      break;
    }
  }
  note(st, what);
  if (on) CHECK(st == TENURE_INVALID_ARGUMENT);
  if (!on) check_batch_out(st, n, sts, outs, 0, what);
  for (size_t i = 0; i < (st == TENURE_OK ? n : k); i++) {
    /* a replayed flag only for an accepted lease; nothing on failure */
    CHECK(!reps[i] || (st == TENURE_OK && sts[i] == TENURE_OK));
  }
  free(ls);
  free(sts);
  free(states);
  free(exps);
  free(reps);
  free(reasons);
  free(perm);
  free(facts);
  free(n_facts);
}

/* The idempotent calls (ABI 1.1): claim requests, claims under them (on
 * the authority or the edit) and the lease transitions that report
 * replays. */
static void call_idempotent(int on) {
  const char *what;
  bool replayed = true;
  switch (below(9)) {
    case 0: {
      what = "claim_request_new";
      static const char *const RIDS[] = {"r0", "r1", "r2"};
      tenure_claim_request *out = SENT_PTR;
      tenure_status st = tenure_claim_request_new(gen_str(RIDS[below(3)]), on ? NULL : &out);
      note(st, what);
      tenure_claim_request *r = take_ptr(st, out, on, what);
      if (r) {
        tenure_claim_request_free(claim_req);
        claim_req = r;
      }
      break;
    }
    case 1: {
      int next = below(2), on_edit = chance(30);
      what = next ? (on_edit ? "edit_claim_next_with" : "claim_next_with")
                  : (on_edit ? "edit_claim_with" : "claim_with");
      tenure_lease *out = SENT_PTR;
      const tenure_claim_request *r = chance(5) ? NULL : claim_req;
      const tenure_edit *e = chance(5) ? NULL : edit;
      tenure_status st;
      /* ABI 1.2: the same calls under their `_idempotent` names half the time. */
      int alias = chance(50);
      if (on_edit) {
        st = next ? (alias ? tenure_edit_claim_next_idempotent : tenure_edit_claim_next_with)(
                        e, gen_prod(), gen_holder(), gen_ttl(), r, on ? NULL : &out, &replayed)
                  : (alias ? tenure_edit_claim_idempotent : tenure_edit_claim_with)(
                        e, gen_prod(), gen_job(), gen_holder(), gen_ttl(), r, on ? NULL : &out,
                        &replayed);
      } else {
        st = next ? (alias ? tenure_authority_claim_next_idempotent
                           : tenure_authority_claim_next_with)(gen_auth(), gen_prod(),
                                                               gen_holder(), gen_ttl(), r,
                                                               on ? NULL : &out, &replayed)
                  : (alias ? tenure_authority_claim_idempotent : tenure_authority_claim_with)(
                        gen_auth(), gen_prod(), gen_job(), gen_holder(), gen_ttl(), r,
                        on ? NULL : &out, &replayed);
      }
      note(st, what);
      tenure_lease *l = take_ptr(st, out, on, what);
      if (l) add_lease(l);
      break;
    }
    case 2: {
      what = "lease_renew_idempotent";
      int64_t e = (int64_t)SENT_U64;
      tenure_status st =
          tenure_lease_renew_idempotent(pick_lease(), gen_ttl(), on ? NULL : &e, &replayed);
      note(st, what);
      check_scalar(st, e == (int64_t)SENT_U64, on, what);
      break;
    }
    case 3: {
      what = "lease_release_idempotent";
      uint32_t s = SENT_U32;
      tenure_status st = tenure_lease_release_idempotent(pick_lease(), on ? NULL : &s, &replayed);
      note(st, what);
      check_scalar(st, s == SENT_U32, on, what);
      break;
    }
    case 4: {
      what = "lease_fail_idempotent";
      uint32_t s = SENT_U32;
      tenure_status st = tenure_lease_fail_idempotent(pick_lease(), gen_str("it broke"), below(2),
                                                      on ? NULL : &s, &replayed);
      note(st, what);
      check_scalar(st, s == SENT_U32, on, what);
      break;
    }
    case 5:
      call_claim_many_with(on);
      break;
    case 6:
      call_many_idempotent(on);
      break;
    case 7: {
      what = "lease_fail_retry_after_idempotent";
      uint32_t s = SENT_U32;
      tenure_status st = tenure_lease_fail_retry_after_idempotent(
          pick_lease(), gen_str("later"), gen_delay(), on ? NULL : &s, &replayed);
      note(st, what);
      check_scalar(st, s == SENT_U32, on, what);
      break;
    }
    default: {
      what = "lease_complete_idempotent";
      tenure_fact facts[2];
      size_t n = below(3);
      for (size_t i = 0; i < n; i++) {
        facts[i].key = gen_str(i % 2 ? "k1" : "out.size");
        facts[i].value = gen_str("value");
      }
      const tenure_fact *fp = chance(5) ? NULL : facts;
      tenure_status st =
          tenure_lease_complete_idempotent(pick_lease(), fp, n, on ? NULL : &replayed);
      note(st, what);
      break;
    }
  }
}

/* ABI 1.2: requeue, progress checkpoints, claims across productions. */
static void call_steering(int on) {
  const char *what;
  static const int64_t EXTRA[] = {-1, 0, 1, 2, 1000, 1001, -2, INT64_MAX, INT64_MIN};
  switch (below(6)) {
    case 0:
      what = "requeue";
      note(tenure_authority_requeue(A, gen_prod(), gen_job(), EXTRA[below(9)], gen_delay()), what);
      break;
    case 1: {
      what = "requeue_all";
      uint64_t n = SENT_U64;
      bool more = true;
      tenure_status st = tenure_authority_requeue_all(A, gen_prod(), EXTRA[below(9)], gen_delay(),
                                                      below(3) ? below(20) : rnd(), on ? NULL : &n,
                                                      &more);
      note(st, what);
      check_scalar(st, n == SENT_U64 && more, on, what);
      break;
    }
    case 2: {
      what = "lease_checkpoint";
      static uint8_t bytes[4100];
      size_t len = below(4) ? below(64) : 4095 + below(3);
      const uint8_t *p = chance(5) ? NULL : bytes;
      tenure_status st = below(2)
                             ? tenure_lease_checkpoint(pick_lease(), p, len)
                             : tenure_lease_renew_checkpoint(pick_lease(), gen_ttl(), p, len);
      note(st, what);
      break;
    }
    case 3: {
      int waits = below(2);
      what = waits ? "claim_next_wait_across" : "claim_next_across";
      const char *list[4];
      size_t n = below(5);
      for (size_t i = 0; i < n; i++) list[i] = gen_prod();
      const char *const *lp = chance(5) ? NULL : list;
      tenure_lease *out = SENT_PTR;
      tenure_status st =
          !waits
              ? tenure_authority_claim_next_across(A, lp, n, gen_holder(), gen_ttl(), on ? NULL : &out)
              : tenure_authority_claim_next_wait_across(A, lp, n, gen_holder(), gen_ttl(),
                                                        gen_wait_timeout(), NULL, on ? NULL : &out);
      note(st, what);
      tenure_lease *l = take_ptr(st, out, on, what);
      if (l) add_lease(l);
      break;
    }
    case 4: {
      what = "claim_next_many_across";
      const char *list[4];
      size_t np = below(5);
      for (size_t i = 0; i < np; i++) list[i] = gen_prod();
      const char *const *lp = chance(5) ? NULL : list;
      size_t n = gen_batch();
      size_t k = batch_slots(n);
      tenure_lease **slots = malloc(k * sizeof *slots);
      REQUIRE(slots != NULL);
      for (size_t i = 0; i < k; i++) slots[i] = SENT_PTR;
      size_t count = (size_t)SENT_U64;
      tenure_lease **arr = chance(5) ? NULL : slots;
      tenure_status st = tenure_authority_claim_next_many_across(A, lp, np, gen_holder(), gen_ttl(), n, arr,
                                                                 on ? NULL : &count);
      note(st, what);
      check_claimed(st, on, slots, k, count, n);
      free(slots);
      break;
    }
    default: {
      what = "job_view_progress";
      tenure_job_view *v = SENT_PTR;
      tenure_status st = tenure_authority_job(A, gen_prod(), gen_job(), on ? NULL : &v);
      note(st, what);
      tenure_job_view *view = take_ptr(st, v, on, what);
      if (tenure_job_view_has_progress(view)) {
        const uint8_t *p = tenure_job_view_progress(view);
        size_t len = tenure_job_view_progress_len(view);
        CHECK(p != NULL && len <= 4096);
      } else {
        CHECK(tenure_job_view_progress(view) == NULL && tenure_job_view_progress_len(view) == 0);
      }
      tenure_job_view_free(view);
      break;
    }
  }
}

static void call_one_1_1(int on) {
  const char *what;
  if (chance(8)) {
    call_idempotent(on);
    return;
  }
  if (chance(8)) {
    call_steering(on);
    return;
  }
  switch (below(13)) {
    case 0: { /* options handle, its setters, open_with */
      what = "options_new";
      tenure_open_options *base = NULL;
      if (chance(70)) {
        tail_bytes(sizeof *base);
        base = (tenure_open_options *)struct_block;
        REQUIRE(tenure_open_options_init(base) == TENURE_OK);
        base->struct_size = gen_struct_size(sizeof *base);
        if (chance(30)) base->synchronous = (uint32_t)below(4);
        if (chance(30)) base->busy_timeout_us = gen_ttl();
      }
      tenure_options *opts = SENT_PTR;
      tenure_status st = tenure_options_new(base, on ? NULL : &opts);
      note(st, what);
      tenure_options *o = take_ptr(st, opts, on, what);
      tenure_options *use = chance(10) ? NULL : o;
      if (chance(50)) note(tenure_options_set_group_commit(use, below(2)), "options_set_group_commit");
      if (chance(50))
        note(tenure_options_set_retention(use, gen_age(), gen_age(), gen_age()),
             "options_set_retention");
      if (chance(40)) {
        const char *path = gen_path();
        tenure_authority *out = SENT_PTR;
        int on2 = chance(4);
        st = tenure_authority_open_with(path, use, on2 ? NULL : &out);
        note(st, "open_with");
        open_done(st, path, out, on2, "open_with");
      }
      tenure_options_free(o);
      break;
    }
    case 1: { /* cancel handles */
      switch (below(4)) {
        case 0: {
          what = "wait_cancel_new";
          tenure_wait_cancel *out = SENT_PTR;
          tenure_status st = tenure_wait_cancel_new(on ? NULL : &out);
          note(st, what);
          tenure_wait_cancel *c = take_ptr(st, out, on, what);
          if (c) {
            CHECK(!tenure_wait_cancel_is_cancelled(c));
            tenure_wait_cancel_free(wait_cancel);
            wait_cancel = c;
          }
          break;
        }
        case 1: {
          if (!chance(20)) break;
          tenure_wait_cancel *c = chance(10) ? NULL : wait_cancel;
          tenure_status st = tenure_wait_cancel_cancel(c);
          note(st, "wait_cancel_cancel");
          CHECK(c ? st == TENURE_OK && tenure_wait_cancel_is_cancelled(c)
                  : st == TENURE_INVALID_ARGUMENT);
          break;
        }
        case 2:
          CHECK(!tenure_wait_cancel_is_cancelled(NULL));
          (void)tenure_wait_cancel_is_cancelled(wait_cancel);
          executions++;
          break;
        default:
          note(tenure_authority_cancel_waits(gen_auth()), "cancel_waits");
          break;
      }
      break;
    }
    case 2: case 3: { /* waits with small timeouts */
      what = "claim_next_wait";
      tenure_lease *out = SENT_PTR;
      tenure_status st = tenure_authority_claim_next_wait(
          gen_auth(), gen_prod(), gen_holder(), gen_ttl(), gen_wait_timeout(),
          chance(30) ? NULL : wait_cancel, on ? NULL : &out);
      note(st, what);
      tenure_lease *l = take_ptr(st, out, on, what);
      if (l) add_lease(l);
      if (chance(4)) { /* a worker loop's configuration check (no store) */
        static const size_t slots[] = {0, 1, 2, 1024, 1025, SIZE_MAX};
        note(tenure_worker_config_check(gen_prod(), gen_holder(), slots[below(6)], gen_ttl(),
                                        gen_every(), gen_wait_timeout(), gen_delay()),
             "worker_config_check");
      }
      break;
    }
    case 4: { /* keepers */
      switch (below(6)) {
        case 0: case 1: {
          what = "keep_alive";
          tenure_keeper *out = SENT_PTR;
          tenure_status st = tenure_lease_keep_alive(pick_lease(), gen_ttl(), gen_every(),
                                                     on ? NULL : &out);
          note(st, what);
          tenure_keeper *k = take_ptr(st, out, on, what);
          if (k) add_keeper(k);
          break;
        }
        case 2: {
          what = "keeper_status";
          uint32_t state = SENT_U32, err = SENT_U32;
          int which = (int)below(2);
          tenure_status st = tenure_keeper_status(pick_keeper(), on && which == 0 ? NULL : &state,
                                                  on && which == 1 ? NULL : &err);
          note(st, what);
          check_scalar(st, state == SENT_U32 && err == SENT_U32, on, what);
          if (st == TENURE_OK) {
            CHECK(state >= TENURE_KEEPER_RUNNING && state <= TENURE_KEEPER_REFUSED);
            CHECK((state == TENURE_KEEPER_REFUSED) == (err != TENURE_OK));
          }
          break;
        }
        case 3: {
          what = "keeper_error_message";
          size_t cap = below(200);
          char *buf = sent_buf(cap);
          size_t need = (size_t)SENT_U64;
          tenure_status st = tenure_keeper_error_message(pick_keeper(), buf, cap, on ? NULL : &need);
          note(st, what);
          if (st == TENURE_OK) CHECK(need <= cap && buf[need - 1] == 0);
          else CHECK(all_sent(buf, cap));
          if (on) CHECK(st == TENURE_INVALID_ARGUMENT);
          free(buf);
          break;
        }
        case 4: {
          (void)tenure_keeper_renewals(pick_keeper());
          CHECK(tenure_keeper_renewals(NULL) == 0);
          note(tenure_keeper_stop(pick_keeper()), "keeper_stop");
          break;
        }
        default:
          if (n_keepers > 0) {
            tenure_keeper_free(keepers[--n_keepers]);
          }
          tenure_keeper_free(NULL);
          executions++;
          break;
      }
      break;
    }
    case 5: { /* retention, statistics */
      switch (below(7)) {
        case 0: {
          what = "prune";
          if (!chance(20)) break;
          tenure_prune_report r;
          memset(&r, SENT_BYTE, sizeof r);
          tenure_status st =
              tenure_authority_prune(gen_auth(), gen_age(), gen_age(), gen_age(), on ? NULL : &r);
          note(st, what);
          check_scalar(st, all_sent(&r, sizeof r), on, what);
          break;
        }
        case 1: {
          what = "history_horizon";
          uint64_t h = SENT_U64;
          tenure_status st = tenure_authority_history_horizon(gen_auth(), on ? NULL : &h);
          note(st, what);
          check_scalar(st, h == SENT_U64, on, what);
          break;
        }
        case 2: {
          what = "vacuum";
          if (!chance(5) || edit != NULL) break;
          note(tenure_authority_vacuum(gen_auth()), what);
          break;
        }
        case 3: {
          what = "delete_production";
          if (!chance(10)) break;
          tenure_deleted_counts d;
          memset(&d, SENT_BYTE, sizeof d);
          tenure_status st = tenure_authority_delete_production(gen_auth(), gen_prod(), on ? NULL : &d);
          note(st, what);
          check_scalar(st, all_sent(&d, sizeof d), on, what);
          break;
        }
        case 6: {
          what = "stats";
          tenure_stats *sv = (tenure_stats *)SENT_PTR;
          tenure_status st = tenure_authority_stats(gen_auth(), chance(30) ? NULL : gen_prod(),
                                                    gen_delay(), gen_delay(), on ? NULL : &sv);
          note(st, what);
          check_scalar(st, sv == (tenure_stats *)SENT_PTR, on, what);
          if (st == TENURE_OK) {
            CHECK(tenure_stats_high_water_us(sv) <= tenure_stats_now_us(sv));
            size_t n = tenure_stats_len(sv);
            const tenure_production_stats *ps = tenure_stats_get(sv, below(4));
            if (ps != NULL) {
              uint64_t k = SENT_U64;
              int64_t us = 0;
              CHECK(tenure_production_stats_name(ps) != NULL);
              (void)tenure_production_stats_cancelled(ps);
              (void)tenure_production_stats_max_live_attempts(ps);
              (void)tenure_production_stats_flow_truncated(ps);
              (void)tenure_production_stats_count(ps, (uint32_t)below(20), chance(10) ? NULL : &k);
              (void)tenure_production_stats_time_us(ps, (uint32_t)below(12), chance(10) ? NULL : &us);
              {
                uint32_t lim = 0, claims = 0, burst = 0;
                int64_t at = 0, interval = 0;
                (void)tenure_production_stats_paused(ps);
                (void)tenure_production_stats_paused_us(ps, chance(10) ? NULL : &at);
                (void)tenure_production_stats_concurrency_limit(ps, chance(10) ? NULL : &lim);
                (void)tenure_production_stats_rate_limit(ps, chance(10) ? NULL : &claims,
                                                         chance(10) ? NULL : &interval,
                                                         chance(10) ? NULL : &burst);
              }
            } else {
              CHECK(n < 4);
            }
            tenure_stats_free(sv);
          }
          tenure_stats_free(NULL);
          break;
        }
        default: {
          what = "export_production";
          unsigned long lines = 0;
          uint64_t records = SENT_U64;
          tenure_status st = tenure_authority_export_production(
              gen_auth(), gen_prod(), chance(5) ? NULL : export_sink, &lines, on ? NULL : &records);
          note(st, what);
          check_scalar(st, records == SENT_U64, on, what);
          if (st == TENURE_OK) CHECK(records == lines);
          break;
        }
      }
      break;
    }
    case 6: case 7: { /* claim_next_many on the authority or the edit */
      int on_edit = chance(30);
      what = on_edit ? "edit_claim_next_many" : "claim_next_many";
      size_t n = gen_batch();
      size_t k = batch_slots(n);
      tenure_lease **slots = malloc(k * sizeof *slots);
      REQUIRE(slots != NULL);
      for (size_t i = 0; i < k; i++) slots[i] = SENT_PTR;
      size_t count = (size_t)SENT_U64;
      tenure_lease **arr = chance(5) ? NULL : slots;
      tenure_status st =
          on_edit ? tenure_edit_claim_next_many(chance(5) ? NULL : edit, gen_prod(), gen_holder(),
                                                gen_ttl(), n, arr, on ? NULL : &count)
                  : tenure_authority_claim_next_many(gen_auth(), gen_prod(), gen_holder(),
                                                     gen_ttl(), n, arr, on ? NULL : &count);
      note(st, what);
      check_claimed(st, on, slots, k, count, n);
      free(slots);
      break;
    }
    case 8: case 9: { /* the other batched calls */
      int on_edit = chance(30);
      const tenure_edit *e = chance(5) ? NULL : edit;
      const tenure_authority *a = gen_auth();
      size_t n = gen_batch();
      size_t k = batch_slots(n);
      const tenure_lease **ls = malloc(k * sizeof *ls);
      tenure_status *sts = malloc(k * sizeof *sts);
      tenure_job_state *states = malloc(k * sizeof *states);
      const char **reasons = malloc(k * sizeof *reasons);
      bool *perm = malloc(k * sizeof *perm);
      const tenure_fact **facts = malloc(k * sizeof *facts);
      size_t *n_facts = malloc(k * sizeof *n_facts);
      tenure_fact *pool = malloc(k * 2 * sizeof *pool);
      REQUIRE(ls && sts && states && reasons && perm && facts && n_facts && pool);
      for (size_t i = 0; i < k; i++) {
        ls[i] = pick_lease();
        sts[i] = SENT_U32;
        states[i] = SENT_U32;
        int gen = i < 8; /* generated text for the first few, the arena is bounded */
        reasons[i] = gen ? gen_str("batch failure") : "batch failure";
        perm[i] = below(2);
        pool[2 * i].key = gen ? gen_str("k1") : "k1";
        pool[2 * i].value = gen ? gen_str("v") : "v";
        pool[2 * i + 1].key = gen ? gen_str("out.size") : "out.size";
        pool[2 * i + 1].value = gen ? gen_str("12") : "12";
        n_facts[i] = below(3);
        facts[i] = n_facts[i] == 0 && chance(50) ? NULL : &pool[2 * i];
      }
      const tenure_lease *const *lsa = chance(5) ? NULL : (const tenure_lease *const *)ls;
      tenure_status *out = on ? NULL : sts;
      tenure_job_state *outs = chance(20) ? NULL : states;
      tenure_status st;
      switch (below(4)) {
        case 0:
          what = on_edit ? "edit_renew_many" : "renew_many";
          st = on_edit ? tenure_edit_renew_many(e, lsa, n, gen_ttl(), out)
                       : tenure_authority_renew_many(a, lsa, n, gen_ttl(), out);
          outs = NULL;
          break;
        case 1:
          what = on_edit ? "edit_release_many" : "release_many";
          st = on_edit ? tenure_edit_release_many(e, lsa, n, out, outs)
                       : tenure_authority_release_many(a, lsa, n, out, outs);
          break;
        case 2: {
          what = on_edit ? "edit_fail_many" : "fail_many";
          const char *const *r = chance(5) ? NULL : (const char *const *)reasons;
          const bool *p = chance(5) ? NULL : perm;
          st = on_edit ? tenure_edit_fail_many(e, lsa, r, p, n, out, outs)
                       : tenure_authority_fail_many(a, lsa, r, p, n, out, outs);
          break;
        }
        default: {
          what = on_edit ? "edit_complete_many" : "complete_many";
          int none = chance(20);
          const tenure_fact *const *f = none ? NULL : (const tenure_fact *const *)facts;
          const size_t *nf = none ? NULL : n_facts;
          st = on_edit ? tenure_edit_complete_many(e, lsa, f, nf, n, out)
                       : tenure_authority_complete_many(a, lsa, f, nf, n, out);
          outs = NULL;
          break;
        }
      }
      note(st, what);
      if (on) CHECK(st == TENURE_INVALID_ARGUMENT);
      if (!on) check_batch_out(st, n, sts, outs, on_edit, what);
      free(ls);
      free(sts);
      free(states);
      free(reasons);
      free(perm);
      free(facts);
      free(n_facts);
      free(pool);
      break;
    }
    case 10: case 11: { /* job options and submit_with */
      int on_edit = chance(30);
      what = on_edit ? "edit_submit_with" : "submit_with";
      tenure_job_options *jo = NULL;
      if (chance(80)) {
        tenure_job_options *out = SENT_PTR;
        int on2 = chance(4);
        tenure_status st = tenure_job_options_new(on2 ? NULL : &out);
        note(st, "job_options_new");
        jo = take_ptr(st, out, on2, "job_options_new");
      }
      tenure_job_options *use = chance(5) ? NULL : jo;
      if (chance(50)) note(tenure_job_options_set_not_before(use, gen_delay()), "set_not_before");
      if (chance(30)) note(tenure_job_options_set_max_hold(use, gen_delay()), "set_max_hold");
      if (chance(30))
        note(tenure_job_options_set_backoff(use, gen_delay(), gen_delay()), "set_backoff");
      tenure_job_spec *spec = NULL;
      if (!chance(5)) {
        tail_bytes(sizeof *spec);
        spec = (tenure_job_spec *)struct_block;
        REQUIRE(tenure_job_spec_init(spec) == TENURE_OK);
        /* jobs of their own too: an existing job with another hold limit
         * or back-off is a conflict, so options reach new jobs this way */
        static const char *const SJOBS[] = {"s0", "s1", "s2", "s3", "s4",
                                            "s5", "s6", "s7", "s8", "s9"};
        spec->job = chance(50) ? gen_job() : gen_str(SJOBS[below(10)]);
        spec->struct_size = gen_struct_size(sizeof *spec);
        spec->max_attempts = 1000;
      }
      uint32_t s = SENT_U32;
      tenure_status st =
          on_edit ? tenure_edit_submit_with(chance(5) ? NULL : edit, gen_prod(), spec, use,
                                            on ? NULL : &s)
                  : tenure_authority_submit_with(gen_auth(), gen_prod(), spec, use, on ? NULL : &s);
      note(st, what);
      check_scalar(st, s == SENT_U32, on, what);
      if (st == TENURE_OK) CHECK(s == TENURE_SUBMITTED_CREATED || s == TENURE_SUBMITTED_EXISTING);
      tenure_job_options_free(jo);
      break;
    }
    default: { /* back-off and retry delays */
      int on_edit = chance(30);
      const tenure_edit *e = chance(5) ? NULL : edit;
      switch (below(6)) {
        case 3: { /* a pause undone at once, so the claims around it stay open */
          bool changed = false;
          int on = chance(10);
          what = on_edit ? "edit_pause_production" : "pause_production";
          tenure_status st = on_edit ? tenure_edit_pause_production(e, gen_prod(), on ? NULL : &changed)
                                     : tenure_authority_pause_production(gen_auth(), gen_prod(),
                                                                         on ? NULL : &changed);
          note(st, what);
          check_scalar(st, !changed, on, what);
          what = on_edit ? "edit_resume_production" : "resume_production";
          note(on_edit ? tenure_edit_resume_production(e, gen_prod(), &changed)
                       : tenure_authority_resume_production(gen_auth(), gen_prod(), &changed),
               what);
          break;
        }
        case 4: {
          uint32_t k = (uint32_t)(chance(50) ? below(4) : rnd());
          what = on_edit ? "edit_set_concurrency_limit" : "set_concurrency_limit";
          note(on_edit ? tenure_edit_set_concurrency_limit(e, gen_prod(), k)
                       : tenure_authority_set_concurrency_limit(gen_auth(), gen_prod(), k),
               what);
          { /* the gates as set, read back through every accessor */
            tenure_gates *g = NULL;
            int gon = chance(10);
            what = "production_gates";
            tenure_status gst =
                tenure_authority_production_gates(gen_auth(), gen_prod(), gon ? NULL : &g);
            note(gst, what);
            if (gst != TENURE_OK) CHECK(g == NULL);
            int64_t gus = 0;
            uint32_t gk = 0, gn = 0, gb = 0;
            (void)tenure_gates_paused(g);
            (void)tenure_gates_paused_us(g, chance(10) ? NULL : &gus);
            (void)tenure_gates_concurrency_limit(g, chance(10) ? NULL : &gk);
            if (tenure_gates_rate_limit(g, &gn, chance(10) ? NULL : &gus, &gb)) CHECK(gn >= 1 && gb >= 1);
            tenure_gates_free(g);
          }
          { /* the outage rule (ABI 1.2) on odd limits, statuses and messages */
            static const int64_t LIMITS[] = {INT64_MIN, -1, 0, 1000, 86400000000, 86400000001, INT64_MAX};
            tenure_outage *o = NULL;
            what = "outage_new";
            const size_t oslots = chance(10) ? (size_t)rnd() : (size_t)below(4);
            tenure_status ost = tenure_outage_new(LIMITS[below(7)], oslots, chance(10) ? NULL : &o);
            note(ost, what);
            if (ost != TENURE_OK) CHECK(o == NULL);
            for (int n = (int)below(4); n > 0; n--) {
              int64_t od = -7;
              tenure_outage_step step = 99;
              static const char *MSGS[] = {
                  NULL, "", "store error: lost the connection to the store server: x",
                  "busy: the store server asked to try again: y", "\xff\xfe"};
              what = "outage_failed";
              ost = tenure_outage_failed(chance(10) ? NULL : o, (size_t)below(5), (uint32_t)(chance(20) ? rnd() : below(30)),
                                         MSGS[below(5)], chance(10) ? NULL : &od, chance(10) ? NULL : &step);
              note(ost, what);
              if (ost == TENURE_OK) CHECK(step <= TENURE_OUTAGE_STOP && od >= 0);
              else CHECK(od == -7 && step == 99);
              what = "outage_succeeded";
              note(tenure_outage_succeeded(chance(10) ? NULL : o, (size_t)below(5), chance(10) ? NULL : &od), what);
            }
            tenure_outage_free(o);
          }
          what = on_edit ? "edit_clear_concurrency_limit" : "clear_concurrency_limit";
          note(on_edit ? tenure_edit_clear_concurrency_limit(e, gen_prod())
                       : tenure_authority_clear_concurrency_limit(gen_auth(), gen_prod()),
               what);
          break;
        }
        case 5: {
          uint32_t n = (uint32_t)(chance(50) ? below(4) : rnd());
          uint32_t b = (uint32_t)(chance(50) ? below(4) : rnd());
          what = on_edit ? "edit_set_rate_limit" : "set_rate_limit";
          note(on_edit ? tenure_edit_set_rate_limit(e, gen_prod(), n, gen_delay(), b)
                       : tenure_authority_set_rate_limit(gen_auth(), gen_prod(), n, gen_delay(), b),
               what);
          what = on_edit ? "edit_clear_rate_limit" : "clear_rate_limit";
          note(on_edit ? tenure_edit_clear_rate_limit(e, gen_prod())
                       : tenure_authority_clear_rate_limit(gen_auth(), gen_prod()),
               what);
          break;
        }
        case 0:
          what = on_edit ? "edit_set_production_backoff" : "set_production_backoff";
          note(on_edit ? tenure_edit_set_production_backoff(e, gen_prod(), gen_delay(), gen_delay())
                       : tenure_authority_set_production_backoff(gen_auth(), gen_prod(), gen_delay(),
                                                                 gen_delay()),
               what);
          break;
        case 1:
          what = on_edit ? "edit_clear_production_backoff" : "clear_production_backoff";
          note(on_edit ? tenure_edit_clear_production_backoff(e, gen_prod())
                       : tenure_authority_clear_production_backoff(gen_auth(), gen_prod()),
               what);
          break;
        default: {
          what = on_edit ? "edit_fail_retry_after" : "lease_fail_retry_after";
          uint32_t js = SENT_U32;
          tenure_status st =
              on_edit ? tenure_edit_fail_retry_after(e, pick_lease(), gen_str("later"), gen_delay(),
                                                     on ? NULL : &js)
                      : tenure_lease_fail_retry_after(pick_lease(), gen_str("later"), gen_delay(),
                                                      on ? NULL : &js);
          note(st, what);
          check_scalar(st, js == SENT_U32, on, what);
          break;
        }
      }
      break;
    }
  }
}

/* Schedules (ABI 1.2): definitions from hostile names, expressions,
 * intervals and bounds, every call on them, the list's accessors. */
static void call_schedules(int on) {
  static const char *const NAMES[] = {"s0", "s1", "s2"};
  static const char *const CRONS[] = {"*/5 * * * *", "0 2 * * *", "61 * * * *", "* * * *"};
  static const char *const ZONES[] = {"Europe/Paris", "America/New_York", "UTC", "Mars/Olympus"};
  const char *what = "schedule_def_new";
  tenure_schedule_def *out = SENT_PTR;
  tenure_status st;
  switch (below(3)) {
    case 0:
      st = tenure_schedule_def_new_every(gen_str(NAMES[below(3)]),
                                         chance(50) ? gen_delay() : 1000000, on ? NULL : &out);
      break;
    case 1:
      st = tenure_schedule_def_new_cron(gen_str(NAMES[below(3)]), gen_str(CRONS[below(4)]),
                                        on ? NULL : &out);
      break;
    default:
      st = tenure_schedule_def_new_cron_in(gen_str(NAMES[below(3)]), gen_str(CRONS[below(4)]),
                                           gen_str(ZONES[below(4)]), on ? NULL : &out);
      break;
  }
  note(st, what);
  tenure_schedule_def *d = take_ptr(st, out, on, what);
  tenure_schedule_def *use = chance(5) ? NULL : d;
  if (chance(40)) {
    const char *bytes = gen_str("payload");
    note(tenure_schedule_def_set_payload(use, (const uint8_t *)bytes,
                                         bytes ? strlen(bytes) : below(3)),
         "schedule_def_set_payload");
  }
  if (chance(40))
    note(tenure_schedule_def_set_job(use, chance(80) ? (int64_t)below(10) : (int64_t)rnd(),
                                     chance(80) ? (uint32_t)below(5) : (uint32_t)rnd()),
         "schedule_def_set_job");
  if (chance(30)) note(tenure_schedule_def_set_max_hold(use, gen_delay()), "schedule_def_set_max_hold");
  if (chance(30))
    note(tenure_schedule_def_set_backoff(use, gen_delay(), gen_delay()), "schedule_def_set_backoff");
  if (chance(40))
    note(tenure_schedule_def_set_catch_up(use, chance(80) ? (uint32_t)below(5) : (uint32_t)rnd(),
                                          below(2)),
         "schedule_def_set_catch_up");
  bool flag = true;
  switch (below(7)) {
    case 0:
      st = tenure_authority_create_schedule(gen_auth(), gen_prod(), use, on ? NULL : &flag);
      note(st, "create_schedule");
      check_scalar(st, flag == true, on, "create_schedule");
      break;
    case 1:
      note(tenure_authority_update_schedule(gen_auth(), gen_prod(), use), "update_schedule");
      break;
    case 2:
      st = tenure_authority_pause_schedule(gen_auth(), gen_prod(), gen_str(NAMES[below(3)]), below(2),
                                           on ? NULL : &flag);
      note(st, "pause_schedule");
      check_scalar(st, flag == true, on, "pause_schedule");
      break;
    case 3:
      st = tenure_authority_delete_schedule(gen_auth(), gen_prod(), gen_str(NAMES[below(3)]),
                                            on ? NULL : &flag);
      note(st, "delete_schedule");
      check_scalar(st, flag == true, on, "delete_schedule");
      break;
    case 4: {
      size_t n = (size_t)SENT_U64;
      uint64_t dropped = SENT_U64;
      int64_t next = (int64_t)SENT_U64;
      st = tenure_authority_run_schedules(gen_auth(), chance(10) ? NULL : &n, &dropped,
                                          on ? NULL : &next);
      note(st, "run_schedules");
      if (st != TENURE_OK) CHECK(dropped == SENT_U64 && next == (int64_t)SENT_U64);
      break;
    }
    case 5: {
      /* The loop with a cancelled handle (or none) returns at once. */
      tenure_wait_cancel *c = NULL;
      if (!chance(10) && tenure_wait_cancel_new(&c) == TENURE_OK) tenure_wait_cancel_cancel(c);
      st = tenure_authority_run_schedules_until(gen_auth(), c, NULL, NULL);
      note(st, "run_schedules_until");
      if (c == NULL) CHECK(st == TENURE_INVALID_ARGUMENT);
      tenure_wait_cancel_free(c);
      break;
    }
    default: {
      what = "schedules";
      tenure_schedule_list *lo = SENT_PTR;
      st = tenure_authority_schedules(gen_auth(), chance(30) ? NULL : gen_prod(), on ? NULL : &lo);
      note(st, what);
      tenure_schedule_list *l = take_ptr(st, lo, on, what);
      size_t i = below(4);
      int64_t us = (int64_t)SENT_U64;
      (void)tenure_schedule_list_production(l, i);
      (void)tenure_schedule_list_name(l, i);
      (void)tenure_schedule_list_cadence(l, i);
      (void)tenure_schedule_list_tz(l, i);
      (void)tenure_schedule_list_paused(l, i);
      (void)tenure_schedule_list_catch_up(l, i);
      if (!tenure_schedule_list_last_slot_us(l, i, &us)) CHECK(us == (int64_t)SENT_U64);
      us = (int64_t)SENT_U64;
      if (!tenure_schedule_list_next_slot_us(l, i, &us)) CHECK(us == (int64_t)SENT_U64);
      CHECK(tenure_schedule_list_name(l, tenure_schedule_list_len(l)) == NULL);
      tenure_schedule_list_free(l);
      break;
    }
  }
  tenure_schedule_def_free(d);
}

static void call_one(void) {
  int on = chance(4); /* pass NULL for the out-parameter */
  const char *what;
  switch (below(58)) {
    case 0: { /* open with hostile paths and options */
      what = "open";
      const char *path = gen_path();
      tenure_open_options *o = NULL;
      if (chance(70)) {
        tail_bytes(sizeof *o);
        o = (tenure_open_options *)struct_block;
        REQUIRE(tenure_open_options_init(o) == TENURE_OK);
        o->struct_size = gen_struct_size(sizeof *o);
        if (chance(30)) o->synchronous = (uint32_t)below(4);
        if (chance(30)) o->busy_timeout_us = gen_ttl();
      }
      tenure_authority *out = SENT_PTR;
      tenure_status st = tenure_authority_open(path, o, on ? NULL : &out);
      note(st, what);
      open_done(st, path, out, on, what);
      break;
    }
    case 1: {
      what = "create_production";
      unsigned char b = SENT_BYTE;
      tenure_status st = tenure_authority_create_production(gen_auth(), gen_prod(),
                                                            on ? NULL : (bool *)&b);
      note(st, what);
      check_scalar(st, b == SENT_BYTE, on, what);
      break;
    }
    case 2: {
      what = "cancel_production";
      if (!chance(5)) break; /* rare: it ends every job of the production */
      uint64_t n = SENT_U64;
      tenure_status st = tenure_authority_cancel_production(gen_auth(), gen_prod(), on ? NULL : &n);
      note(st, what);
      check_scalar(st, n == SENT_U64, on, what);
      break;
    }
    case 3: case 4: case 5: {
      what = "submit";
      tenure_job_spec *spec = NULL;
      if (!chance(3)) {
        tail_bytes(sizeof *spec);
        spec = (tenure_job_spec *)struct_block;
        REQUIRE(tenure_job_spec_init(spec) == TENURE_OK);
        spec->job = gen_job();
        spec->struct_size = gen_struct_size(sizeof *spec);
        if (chance(30)) spec->max_attempts = (uint32_t)rnd() % (chance(50) ? 5 : 2000);
        if (chance(30)) spec->priority = (int32_t)rnd();
        if (chance(30)) {
          const char *p = random_bytes(below(64));
          spec->payload = (const uint8_t *)p;
          spec->payload_len = strlen(p);
        } else if (chance(5)) {
          spec->payload = NULL;
          spec->payload_len = 1 + below(100);
        } else if (chance(5)) {
          spec->payload = (const uint8_t *)"x";
          spec->payload_len = ((size_t)1 << 20) + 1 + below(1u << 20); /* > 1 MiB: rejected unread */
        }
      }
      uint32_t s = SENT_U32;
      tenure_status st = tenure_authority_submit(gen_auth(), gen_prod(), spec, on ? NULL : &s);
      note(st, what);
      check_scalar(st, s == SENT_U32, on, what);
      if (st == TENURE_OK) CHECK(s == TENURE_SUBMITTED_CREATED || s == TENURE_SUBMITTED_EXISTING);
      break;
    }
    case 6: {
      what = "cancel";
      if (!chance(30)) break;
      uint32_t c = SENT_U32;
      tenure_status st = tenure_authority_cancel(gen_auth(), gen_prod(), gen_job(), on ? NULL : &c);
      note(st, what);
      check_scalar(st, c == SENT_U32, on, what);
      break;
    }
    case 7: case 8: case 9: {
      what = "claim";
      tenure_lease *out = SENT_PTR;
      tenure_status st = tenure_authority_claim(gen_auth(), gen_prod(), gen_job(), gen_holder(),
                                                gen_ttl(), on ? NULL : &out);
      note(st, what);
      tenure_lease *l = take_ptr(st, out, on, what);
      if (l) add_lease(l);
      break;
    }
    case 10: case 11: {
      what = "claim_next";
      tenure_lease *out = SENT_PTR;
      tenure_status st = tenure_authority_claim_next(gen_auth(), gen_prod(), gen_holder(),
                                                     gen_ttl(), on ? NULL : &out);
      note(st, what);
      tenure_lease *l = take_ptr(st, out, on, what);
      if (l) add_lease(l);
      break;
    }
    case 12: case 13: {
      what = "import_lease";
      tenure_lease *out = SENT_PTR;
      tenure_status st = tenure_authority_import_lease(gen_auth(), gen_token(), on ? NULL : &out);
      note(st, what);
      tenure_lease *l = take_ptr(st, out, on, what);
      if (l) add_lease(l);
      break;
    }
    case 14: {
      what = "job";
      tenure_job_view *out = SENT_PTR;
      tenure_status st = tenure_authority_job(gen_auth(), gen_prod(), gen_job(), on ? NULL : &out);
      note(st, what);
      tenure_job_view *v = take_ptr(st, out, on, what);
      if (v) {
        CHECK(tenure_job_view_job(v) != NULL);
        tenure_job_view_free(v);
      }
      break;
    }
    case 15: {
      what = "payload";
      size_t cap = chance(20) ? 0 : below(80);
      unsigned char *buf = chance(10) ? NULL : malloc(cap ? cap : 1);
      if (buf) memset(buf, SENT_BYTE, cap ? cap : 1);
      size_t len = (size_t)SENT_U64;
      tenure_status st = tenure_authority_payload(gen_auth(), gen_prod(), gen_job(), buf, cap,
                                                  on ? NULL : &len);
      note(st, what);
      if (st != TENURE_OK && buf) {
        int same = 1;
        for (size_t i = 0; i < cap; i++) same &= buf[i] == SENT_BYTE;
        CHECK(same);
      }
      if (on) CHECK(st == TENURE_INVALID_ARGUMENT);
      else if (st != TENURE_OK && st != TENURE_INVALID_ARGUMENT) CHECK(len == (size_t)SENT_U64);
      else if (st == TENURE_OK) CHECK(len <= cap);
      free(buf);
      break;
    }
    case 16: {
      what = "jobs";
      tenure_list_query *q = NULL;
      if (!chance(5)) {
        tail_bytes(sizeof *q);
        q = (tenure_list_query *)struct_block;
        REQUIRE(tenure_list_query_init(q) == TENURE_OK);
        q->struct_size = gen_struct_size(sizeof *q);
        if (chance(30)) q->state = (uint32_t)below(9);
        if (chance(30)) q->after = gen_job();
        if (chance(30)) q->limit = chance(50) ? (size_t)rnd() : below(20);
      }
      tenure_job_list *out = SENT_PTR;
      tenure_status st = tenure_authority_jobs(gen_auth(), gen_prod(), q, on ? NULL : &out);
      note(st, what);
      tenure_job_list *l = take_ptr(st, out, on, what);
      if (l) {
        size_t n = tenure_job_list_len(l);
        CHECK(tenure_job_list_get(l, n) == NULL);
        tenure_job_list_free(l);
      }
      break;
    }
    case 17: {
      what = "productions";
      tenure_production_list *out = SENT_PTR;
      tenure_status st = tenure_authority_productions(gen_auth(), on ? NULL : &out);
      note(st, what);
      tenure_production_list *l = take_ptr(st, out, on, what);
      size_t i = below(5);
      int64_t us = (int64_t)SENT_U64;
      (void)tenure_production_list_name(l, i);
      (void)tenure_production_list_created_us(l, i);
      if (!tenure_production_list_cancelled_us(l, i, &us)) CHECK(us == (int64_t)SENT_U64);
      us = (int64_t)SENT_U64;
      if (!tenure_production_list_backoff_base_us(l, i, &us)) CHECK(us == (int64_t)SENT_U64);
      us = (int64_t)SENT_U64;
      if (!tenure_production_list_backoff_cap_us(l, i, &us)) CHECK(us == (int64_t)SENT_U64);
      CHECK(tenure_production_list_name(l, tenure_production_list_len(l)) == NULL);
      tenure_production_list_free(l);
      break;
    }
    case 18: case 19: {
      what = "facts";
      tenure_fact_list *out = SENT_PTR;
      tenure_status st = below(2)
          ? tenure_authority_facts(gen_auth(), gen_prod(), gen_job(), on ? NULL : &out)
          : tenure_authority_production_facts(gen_auth(), gen_prod(), on ? NULL : &out);
      note(st, what);
      tenure_fact_list *l = take_ptr(st, out, on, what);
      size_t i = below(4);
      (void)tenure_fact_list_job(l, i);
      (void)tenure_fact_list_key(l, i);
      (void)tenure_fact_list_value(l, i);
      CHECK(tenure_fact_list_key(l, tenure_fact_list_len(l)) == NULL);
      tenure_fact_list_free(l);
      break;
    }
    case 20: case 21: {
      what = "events";
      tenure_event_list *out = SENT_PTR;
      uint64_t after = chance(50) ? below(1000) : rnd();
      size_t limit = chance(50) ? below(50) : (size_t)rnd();
      tenure_status st = below(2)
          ? tenure_authority_events(gen_auth(), after, limit, on ? NULL : &out)
          : tenure_authority_production_events(gen_auth(), gen_prod(), after, limit,
                                               on ? NULL : &out);
      note(st, what);
      tenure_event_list *l = take_ptr(st, out, on, what);
      size_t n = tenure_event_list_len(l);
      size_t i = below(n + 2);
      int64_t us = (int64_t)SENT_U64;
      (void)tenure_event_list_seq(l, i);
      (void)tenure_event_list_at_us(l, i);
      (void)tenure_event_list_production(l, i);
      (void)tenure_event_list_job(l, i);
      (void)tenure_event_list_kind(l, i);
      (void)tenure_event_list_state(l, i);
      (void)tenure_event_list_claim_id(l, i);
      (void)tenure_event_list_holder(l, i);
      (void)tenure_event_list_attempt(l, i);
      (void)tenure_event_list_detail(l, i);
      if (!tenure_event_list_expires_us(l, i, &us)) CHECK(us == (int64_t)SENT_U64);
      CHECK(tenure_event_list_kind(l, n) == NULL);
      tenure_event_list_free(l);
      break;
    }
    case 22: {
      what = "clock";
      int64_t now = (int64_t)SENT_U64, mark = (int64_t)SENT_U64;
      unsigned char b = SENT_BYTE;
      int which = (int)below(3);
      tenure_status st = tenure_authority_clock(gen_auth(), on && which == 0 ? NULL : &now,
                                                on && which == 1 ? NULL : &mark,
                                                on && which == 2 ? NULL : (bool *)&b);
      note(st, what);
      check_scalar(st, now == (int64_t)SENT_U64 && mark == (int64_t)SENT_U64 && b == SENT_BYTE,
                   on, what);
      break;
    }
    case 23: {
      what = "check";
      if (!chance(10)) break;
      uint64_t v = SENT_U64;
      tenure_status st = tenure_authority_check(gen_auth(), on ? NULL : &v);
      note(st, what);
      check_scalar(st, v == SENT_U64, on, what);
      if (st == TENURE_OK) CHECK(v == 0);
      break;
    }
    case 24: case 25: {
      what = "lease_renew";
      tenure_status st = tenure_lease_renew(pick_lease(), gen_ttl());
      note(st, what);
      break;
    }
    case 26: {
      what = "lease_release";
      uint32_t s = SENT_U32;
      tenure_status st = tenure_lease_release(pick_lease(), on ? NULL : &s);
      note(st, what);
      check_scalar(st, s == SENT_U32, on, what);
      break;
    }
    case 27: {
      what = "lease_fail";
      uint32_t s = SENT_U32;
      tenure_status st = tenure_lease_fail(pick_lease(), gen_str("it broke"), below(2),
                                           on ? NULL : &s);
      note(st, what);
      check_scalar(st, s == SENT_U32, on, what);
      break;
    }
    case 28: case 29: {
      what = "lease_complete";
      tenure_fact facts[4];
      size_t n = below(5);
      for (size_t i = 0; i < n; i++) {
        facts[i].key = gen_str(i % 2 ? "k1" : "out.size");
        facts[i].value = gen_str("value");
      }
      const tenure_fact *fp = facts;
      if (chance(5)) fp = NULL;
      if (chance(5)) { fp = facts; n = 65 + below(1000); } /* too many: rejected unread */
      tenure_status st = tenure_lease_complete(pick_lease(), fp, n);
      note(st, what);
      break;
    }
    case 30: case 31: {
      what = "lease_export_token";
      tenure_lease *l = pick_lease();
      size_t cap = chance(30) ? 2100 : below(200);
      char *buf = chance(10) ? NULL : malloc(cap ? cap : 1);
      if (buf) memset(buf, SENT_BYTE, cap ? cap : 1);
      size_t need = (size_t)SENT_U64;
      tenure_status st = tenure_lease_export_token(l, buf, cap, on ? NULL : &need);
      note(st, what);
      if (st == TENURE_OK) {
        CHECK(need <= cap && need <= 2049 && buf[need - 1] == 0 && strlen(buf) + 1 == need);
        add_token(buf);
        memset(buf, 0, cap);
      } else if (buf) {
        int same = 1;
        for (size_t i = 0; i < cap; i++) same &= (unsigned char)buf[i] == SENT_BYTE;
        CHECK(same);
      }
      if (on) CHECK(st == TENURE_INVALID_ARGUMENT);
      else if (st != TENURE_OK && st != TENURE_INVALID_ARGUMENT) CHECK(need == (size_t)SENT_U64);
      free(buf);
      break;
    }
    case 32: { /* accessors on any lease handle */
      tenure_lease *l = pick_lease();
      (void)tenure_lease_production(l);
      (void)tenure_lease_job(l);
      (void)tenure_lease_holder(l);
      const char *cid = tenure_lease_claim_id(l);
      CHECK(l == NULL ? cid == NULL : (cid != NULL && strlen(cid) == 36));
      (void)tenure_lease_attempt(l);
      (void)tenure_lease_expires_us(l);
      uint32_t s = tenure_lease_status_get(l);
      CHECK(l == NULL ? s == 0 : (s >= 1 && s <= 3));
      executions++;
      break;
    }
    case 33: { /* edits: begin / commit / abort / free */
      what = "edit";
      int k = (int)below(4);
      if (k == 0 && edit == NULL) {
        tenure_edit *out = SENT_PTR;
        tenure_status st = tenure_edit_begin(gen_auth(), on ? NULL : &out);
        note(st, what);
        edit = take_ptr(st, out, on, what);
      } else if (k == 1) {
        note(tenure_edit_commit(chance(10) ? NULL : edit), "edit_commit");
      } else if (k == 2) {
        note(tenure_edit_abort(chance(10) ? NULL : edit), "edit_abort");
      } else {
        tenure_edit_free(edit);
        edit = NULL;
      }
      break;
    }
    case 34: case 35: case 36: case 37: case 38: case 39: case 40: { /* edit operations */
      const tenure_edit *e = chance(5) ? NULL : edit;
      switch (below(10)) {
        case 0: {
          what = "edit_create_production";
          unsigned char b = SENT_BYTE;
          tenure_status st = tenure_edit_create_production(e, gen_prod(), on ? NULL : (bool *)&b);
          note(st, what);
          check_scalar(st, b == SENT_BYTE, on, what);
          break;
        }
        case 1: {
          what = "edit_cancel_production";
          if (!chance(5)) break;
          uint64_t n = SENT_U64;
          tenure_status st = tenure_edit_cancel_production(e, gen_prod(), on ? NULL : &n);
          note(st, what);
          check_scalar(st, n == SENT_U64, on, what);
          break;
        }
        case 2: {
          what = "edit_submit";
          tenure_job_spec *spec = NULL;
          if (!chance(5)) {
            tail_bytes(sizeof *spec);
            spec = (tenure_job_spec *)struct_block;
            REQUIRE(tenure_job_spec_init(spec) == TENURE_OK);
            spec->job = gen_job();
            spec->struct_size = gen_struct_size(sizeof *spec);
          }
          uint32_t s = SENT_U32;
          tenure_status st = tenure_edit_submit(e, gen_prod(), spec, on ? NULL : &s);
          note(st, what);
          check_scalar(st, s == SENT_U32, on, what);
          break;
        }
        case 3: {
          what = "edit_cancel";
          uint32_t c = SENT_U32;
          tenure_status st = tenure_edit_cancel(e, gen_prod(), gen_job(), on ? NULL : &c);
          note(st, what);
          check_scalar(st, c == SENT_U32, on, what);
          break;
        }
        case 4: case 5: {
          what = "edit_claim";
          tenure_lease *out = SENT_PTR;
          tenure_status st = below(2)
              ? tenure_edit_claim(e, gen_prod(), gen_job(), gen_holder(), gen_ttl(),
                                  on ? NULL : &out)
              : tenure_edit_claim_next(e, gen_prod(), gen_holder(), gen_ttl(), on ? NULL : &out);
          note(st, what);
          tenure_lease *l = take_ptr(st, out, on, what);
          if (l) {
            CHECK(tenure_lease_status_get(l) == TENURE_LEASE_STATUS_PENDING);
            add_lease(l);
          }
          break;
        }
        case 6: {
          what = "edit_renew";
          note(tenure_edit_renew(e, pick_lease(), gen_ttl()), what);
          break;
        }
        case 7: {
          what = "edit_release";
          uint32_t s = SENT_U32;
          tenure_status st = tenure_edit_release(e, pick_lease(), on ? NULL : &s);
          note(st, what);
          check_scalar(st, s == SENT_U32, on, what);
          break;
        }
        case 8: {
          what = "edit_fail";
          uint32_t s = SENT_U32;
          tenure_status st = tenure_edit_fail(e, pick_lease(), gen_str("nope"), below(2),
                                              on ? NULL : &s);
          note(st, what);
          check_scalar(st, s == SENT_U32, on, what);
          break;
        }
        default: {
          what = "edit_complete";
          tenure_fact f = {gen_str("k"), gen_str("v")};
          note(tenure_edit_complete(e, pick_lease(), chance(10) ? NULL : &f, below(2)), what);
          break;
        }
      }
      break;
    }
    case 41: { /* the message buffer */
      what = "last_error_message";
      size_t cap = below(300);
      char *buf = chance(10) ? NULL : malloc(cap ? cap : 1);
      if (buf) memset(buf, SENT_BYTE, cap ? cap : 1);
      size_t need = (size_t)SENT_U64;
      tenure_status st = tenure_last_error_message(buf, cap, on ? NULL : &need);
      executions++;
      if (st < 256) seen[st]++;
      CHECK(st == TENURE_OK || st == TENURE_INVALID_ARGUMENT);
      if (st == TENURE_OK) CHECK(need <= cap && buf[need - 1] == 0);
      else if (buf) {
        int same = 1;
        for (size_t i = 0; i < cap; i++) same &= (unsigned char)buf[i] == SENT_BYTE;
        CHECK(same);
      }
      free(buf);
      break;
    }
    case 42: { /* static names for any number */
      uint32_t n = chance(50) ? (uint32_t)below(40) : (uint32_t)rnd();
      CHECK(tenure_status_name(n) != NULL && tenure_job_state_name(n) != NULL);
      CHECK(tenure_abi_version() == TENURE_ABI_VERSION && tenure_version() != NULL);
      executions++;
      break;
    }
    case 43: case 44: case 45: case 46: case 47: case 48: case 49: case 50: case 51: case 52:
    case 53: case 54:
      call_one_1_1(on);
      break;
    case 55: case 56:
      call_schedules(on);
      break;
    default:
      read_list_views();
      break;
  }
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  if (argc < 3 || argc > 5) {
    fprintf(stderr, "usage: %s DIR ITERATIONS [SECONDS [SEED]]\n", argv[0]);
    return 2;
  }
  REQUIRE(chdir(argv[1]) == 0);
  unsigned long iterations = strtoul(argv[2], NULL, 10);
  double seconds = argc > 3 ? strtod(argv[3], NULL) : 0;
  if (argc > 4 && strtoull(argv[4], NULL, 10) != 0) rng_state = strtoull(argv[4], NULL, 10);
  unsigned long long seed = rng_state;

  /* a corrupt store file for the open path */
  FILE *f = fopen("corrupt.db", "wb");
  REQUIRE(f != NULL);
  for (int i = 0; i < 8192; i++) fputc((int)(rnd() & 0xFF), f);
  fclose(f);

  tenure_open_options o;
  REQUIRE(tenure_open_options_init(&o) == TENURE_OK);
  o.busy_timeout_us = 0; /* an open edit makes other writes BUSY at once */
  o.synchronous = TENURE_SYNCHRONOUS_NORMAL;
  REQUIRE(tenure_authority_open("fuzz.db", &o, &A) == TENURE_OK);
  for (int p = 0; p < 3; p++) make_production(A, PRODS[p]);
  for (int j = 0; j < 10; j++) submit_job(A, PRODS[j % 3], JOBS[j], 1000);

  double start = now_s();
  unsigned long it = 0;
  for (; it < iterations; it++) {
    if (seconds > 0 && (it & 63) == 0 && now_s() - start > seconds) break;
    call_one();
    arena_reset();
    /* keep work available: requeue a job now and then */
    if ((it & 255) == 255 && edit == NULL) {
      tenure_job_spec spec;
      tenure_job_spec_init(&spec);
      char id[32];
      snprintf(id, sizeof id, "j%lu", (it / 256) % 10 + 10 * (it / 2560 % 50));
      spec.job = id;
      spec.max_attempts = 1000;
      tenure_submitted s;
      (void)tenure_authority_submit(A, PRODS[below(3)], &spec, &s);
    }
  }

  for (int i = 0; i < n_keepers; i++) tenure_keeper_free(keepers[i]);
  tenure_wait_cancel_free(wait_cancel);
  tenure_claim_request_free(claim_req);
  tenure_edit_free(edit);
  for (int i = 0; i < n_leases; i++) tenure_lease_free(leases[i]);
  for (int i = 0; i < n_tokens; i++) {
    memset(tokens[i], 0, strlen(tokens[i]));
    free(tokens[i]);
  }
  uint64_t violations = 1;
  OK(tenure_authority_check(A, &violations));
  CHECK(violations == 0);
  tenure_authority_free(A);

  int distinct = 0;
  printf("capi-fuzz statuses:");
  for (int i = 0; i < 256; i++) {
    if (!seen[i]) continue;
    distinct++;
    printf(" %s=%lu", tenure_status_name((uint32_t)i), seen[i]);
  }
  printf("\n");
  /* reaching this line means no sanitizer report and no signal */
  printf("capi-fuzz: %lu executions, %d distinct statuses, 0 crashes (seed %llu, %lu iterations)\n",
         executions, distinct, seed, it);
  return finish();
}
