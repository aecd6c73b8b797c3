// The C++ projection against the real library: life cycle, every error
// class, edits, tokens, threads, RAII and version checks.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <functional>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "support.hpp"

using namespace std::chrono_literals;
using testsupport::fresh_db;

namespace {

// RAII and move-only, checked at compile time.
static_assert(!std::is_copy_constructible<tenure::Authority>::value, "Authority is move-only");
static_assert(!std::is_copy_assignable<tenure::Lease>::value, "Lease is move-only");
static_assert(!std::is_copy_constructible<tenure::Edit>::value, "Edit is move-only");
static_assert(std::is_nothrow_move_constructible<tenure::Authority>::value, "");
static_assert(std::is_nothrow_move_constructible<tenure::Lease>::value, "");
static_assert(std::is_nothrow_move_assignable<tenure::Edit>::value, "");
static_assert(std::is_nothrow_destructible<tenure::Authority>::value, "");
static_assert(std::is_nothrow_destructible<tenure::Lease>::value, "");
static_assert(std::is_nothrow_destructible<tenure::Edit>::value, "");
static_assert(std::is_base_of<std::runtime_error, tenure::Error>::value, "");
static_assert(std::is_base_of<tenure::Error, tenure::StaleLease>::value, "");
static_assert(tenure::abi_version::major == TENURE_ABI_MAJOR, "");
static_assert(tenure::abi_version::minor == TENURE_ABI_MINOR, "");
static_assert(tenure::abi_version::packed == TENURE_ABI_VERSION, "");

std::vector<std::uint8_t> bytes(const std::string& s) { return std::vector<std::uint8_t>(s.begin(), s.end()); }

tenure::JobSpec spec(const std::string& job, const std::string& payload = "") {
  tenure::JobSpec s(job);
  s.payload(payload.data(), payload.size());
  return s;
}

std::string fact(const std::vector<tenure::PublishedFact>& facts, const std::string& job, const std::string& key) {
  for (const auto& f : facts)
    if (f.job == job && f.key == key) return f.value;
  return "<missing>";
}

/// Every text a listing, event, view or fact exposes.
std::vector<std::string> observable_texts(const tenure::Authority& a, const std::string& prod) {
  std::vector<std::string> out;
  for (const auto& e : a.events(0, 10000)) {
    out.push_back(e.production);
    out.push_back(e.job.value_or(""));
    out.push_back(e.kind);
    out.push_back(e.claim_id.value_or(""));
    out.push_back(e.holder.value_or(""));
    out.push_back(e.detail);
  }
  for (const auto& j : a.jobs(prod)) {
    out.push_back(j.holder.value_or(""));
    out.push_back(j.claim_id.value_or(""));
    out.push_back(j.last_error.value_or(""));
  }
  for (const auto& f : a.production_facts(prod)) {
    out.push_back(f.key);
    out.push_back(f.value);
  }
  return out;
}

}  // namespace

TEST_CASE("versions: header constants and the loaded library agree") {
  CHECK(tenure::loaded_abi_version() == tenure::abi_version::packed);
  CHECK_NOTHROW(tenure::check_abi());
  CHECK(tenure::abi_compatible(tenure::abi_version::packed));
  CHECK(tenure::abi_compatible(tenure::abi_version::packed + 1));  // newer minor
  CHECK_FALSE(tenure::abi_compatible((tenure::abi_version::major + 1) << 16));
  CHECK_FALSE(tenure::abi_compatible((tenure::abi_version::major - 1) << 16 | 0xFFFFu));
  if (tenure::abi_version::minor > 0) {
    CHECK_FALSE(tenure::abi_compatible(tenure::abi_version::packed - 1));
  }
  const tenure::AbiMismatch m((tenure::abi_version::major + 1) << 16);
  CHECK(std::string(m.what()).find("ABI") != std::string::npos);
  CHECK(tenure::version() == std::to_string(TENURE_VERSION_MAJOR) + "." + std::to_string(TENURE_VERSION_MINOR) +
                                 "." + std::to_string(TENURE_VERSION_PATCH));
}

TEST_CASE("errors: every status maps to its class; unknown codes to the base") {
  struct Case {
    tenure_status status;
    const char* name;
    std::function<bool(const tenure::Error&)> is;
  };
#define CASE(STATUS, CLASS, NAME) \
  Case { STATUS, NAME, [](const tenure::Error& e) { return dynamic_cast<const tenure::CLASS*>(&e) != nullptr; } }
  const std::vector<Case> cases = {
      CASE(TENURE_INVALID_ARGUMENT, InvalidArgument, "invalid_argument"),
      CASE(TENURE_INVALID_DURATION, InvalidDuration, "invalid_duration"),
      CASE(TENURE_NOT_FOUND, NotFound, "not_found"),
      CASE(TENURE_CONFLICT, Conflict, "conflict"),
      CASE(TENURE_NOT_CLAIMABLE, NotClaimable, "not_claimable"),
      CASE(TENURE_NO_JOB_AVAILABLE, NoJobAvailable, "no_job_available"),
      CASE(TENURE_STALE_LEASE, StaleLease, "stale_lease"),
      CASE(TENURE_LEASE_EXPIRED, LeaseExpired, "lease_expired"),
      CASE(TENURE_LEASE_CLOSED, LeaseClosed, "lease_closed"),
      CASE(TENURE_LEASE_PENDING, LeasePending, "lease_pending"),
      CASE(TENURE_NOT_EXTENDED, NotExtended, "not_extended"),
      CASE(TENURE_CANCELLED, Cancelled, "cancelled"),
      CASE(TENURE_JOB_TERMINAL, JobTerminal, "job_terminal"),
      CASE(TENURE_CLOCK_ROLLBACK, ClockRollback, "clock_rollback"),
      CASE(TENURE_TOKEN_MALFORMED, TokenMalformed, "token_malformed"),
      CASE(TENURE_TOKEN_TOO_LARGE, TokenTooLarge, "token_too_large"),
      CASE(TENURE_TOKEN_UNSUPPORTED_VERSION, TokenUnsupportedVersion, "token_unsupported_version"),
      CASE(TENURE_BUSY, Busy, "busy"),
      CASE(TENURE_SCHEMA_TOO_NEW, SchemaTooNew, "schema_too_new"),
      CASE(TENURE_STORE, Store, "store"),
      CASE(TENURE_INTERNAL, Internal, "internal"),
      CASE(TENURE_HOLD_LIMIT, HoldLimit, "hold_limit"),
      CASE(TENURE_HISTORY_PRUNED, HistoryPruned, "history_pruned"),
      CASE(TENURE_PRODUCTION_LIVE, ProductionLive, "production_live"),
      CASE(TENURE_PRODUCTION_PAUSED, ProductionPaused, "production_paused"),
      CASE(TENURE_CONCURRENCY_LIMIT, ConcurrencyLimit, "concurrency_limit"),
      CASE(TENURE_RATE_LIMITED, RateLimited, "rate_limited"),
      CASE(TENURE_JOB_LIVE, JobLive, "job_live"),
  };
#undef CASE
  std::set<std::uint32_t> seen;
  for (const Case& c : cases) {
    CAPTURE(c.name);
    seen.insert(static_cast<std::uint32_t>(c.status));
    CHECK(tenure::status_name(c.status) == c.name);
    try {
      tenure::throw_status(c.status, "msg");
    } catch (const tenure::Error& e) {
      CHECK(c.is(e));
      CHECK(e.status() == c.status);
      CHECK(e.name() == c.name);
      CHECK(std::string(e.what()) == "msg");
    }
  }
  // every status the library knows has a class (1..=28)
  CHECK(seen.size() == 28);
  CHECK(tenure::status_name(static_cast<tenure_status>(29)) == "unknown");
  // a future code: the base class, never a subclass
  try {
    tenure::throw_status(static_cast<tenure_status>(4242), "from the future");
  } catch (const tenure::InvalidArgument&) {
    FAIL("mapped to a subclass");
  } catch (const tenure::Error& e) {
    CHECK(static_cast<std::uint32_t>(e.status()) == 4242u);
    CHECK(e.name() == "unknown");
    CHECK(std::string(e.what()) == "from the future");
  }
}

TEST_CASE("life cycle: productions, submit, claim, renew, complete with facts") {
  const auto a = tenure::Authority::open(fresh_db("lifecycle"));
  CHECK(a.create_production("nightly"));
  CHECK_FALSE(a.create_production("nightly"));

  const std::string payload("\x01\x00\xffpayload", 10);
  CHECK(a.submit("nightly", spec("build-1", payload).priority(5).max_attempts(2)) ==
        tenure::SubmitOutcome::Created);
  CHECK(a.submit("nightly", spec("build-1", payload).priority(5).max_attempts(2)) ==
        tenure::SubmitOutcome::Existing);
  CHECK_THROWS_AS(a.submit("nightly", spec("build-1", "other")), tenure::Conflict);
  a.submit("nightly", spec("build-2"));
  CHECK(a.payload("nightly", "build-1") == bytes(payload));
  CHECK(a.payload("nightly", "build-2").empty());

  tenure::JobView j = a.job("nightly", "build-1");
  CHECK(j.production == "nightly");
  CHECK(j.job == "build-1");
  CHECK(j.state == tenure::JobState::Requested);
  CHECK(j.attempts == 0);
  CHECK(j.max_attempts == 2);
  CHECK(j.priority == 5);
  CHECK(j.payload_len == payload.size());
  CHECK_FALSE(j.holder.has_value());
  CHECK_FALSE(j.expires.has_value());
  CHECK(tenure::state_name(j.state) == "requested");

  // claim_next: priority first
  tenure::Lease l = a.claim_next("nightly", "worker-7@host-3", 30s);
  CHECK(l.job() == "build-1");
  CHECK(l.production() == "nightly");
  CHECK(l.holder() == "worker-7@host-3");
  CHECK(l.claim_id().size() == 36);
  CHECK(l.attempt() == 1);
  CHECK(l.status() == tenure::LeaseStatus::Active);
  CHECK(l.expires() > j.created);

  j = a.job("nightly", "build-1");
  CHECK(j.state == tenure::JobState::Claimed);
  CHECK(j.holder == std::optional<std::string>("worker-7@host-3"));
  CHECK(j.claim_id == std::optional<std::string>(l.claim_id()));
  CHECK(j.expires == std::optional<tenure::time_point>(l.expires()));
  CHECK(j.attempts == 1);

  // renew moves the expiry later; a shorter one is not an extension
  const tenure::time_point first = l.expires();
  l.renew(std::chrono::minutes(10));
  CHECK(l.expires() > first);
  CHECK_THROWS_AS(l.renew(1s), tenure::NotExtended);
  CHECK(l.status() == tenure::LeaseStatus::Active);

  l.complete({{"artifact", "build-1.tar"}, {"size", "42"}});
  CHECK(l.status() == tenure::LeaseStatus::Closed);
  CHECK_THROWS_AS(l.complete(), tenure::LeaseClosed);
  CHECK_THROWS_AS(l.renew(30s), tenure::LeaseClosed);
  CHECK(a.job("nightly", "build-1").state == tenure::JobState::Completed);

  const auto facts = a.facts("nightly", "build-1");
  CHECK(fact(facts, "build-1", "artifact") == "build-1.tar");
  CHECK(fact(facts, "build-1", "size") == "42");
  CHECK(fact(facts, "build-1", "tenure.claim_id") == l.claim_id());
  const auto pf = a.production_facts("nightly");
  CHECK(fact(pf, "build-1", "artifact") == "build-1.tar");

  // release and fail
  tenure::Lease r = a.claim("nightly", "build-2", "w2", 30s);
  CHECK(r.release() == tenure::JobState::Requested);
  CHECK(r.status() == tenure::LeaseStatus::Closed);
  CHECK_THROWS_AS(r.release(), tenure::LeaseClosed);
  tenure::Lease f = a.claim("nightly", "build-2", "w2", 30s);
  CHECK(f.attempt() == 2);
  CHECK(f.fail("disk full") == tenure::JobState::Requested);
  tenure::Lease p = a.claim("nightly", "build-2", "w2", 30s);
  CHECK(p.fail("broken input", true) == tenure::JobState::Failed);
  j = a.job("nightly", "build-2");
  CHECK(j.state == tenure::JobState::Failed);
  CHECK(j.last_error == std::optional<std::string>("broken input"));
  CHECK(j.attempts == 3);

  // listings, paging, productions, events
  for (int i = 0; i < 5; ++i) a.submit("nightly", spec("page-" + std::to_string(i)));
  tenure::ListQuery q;
  q.state = tenure::JobState::Requested;
  q.limit = 2;
  std::vector<std::string> seen;
  for (;;) {
    const auto page = a.jobs("nightly", q);
    if (page.empty()) break;
    CHECK(page.size() <= 2);
    for (const auto& v : page) seen.push_back(v.job);
    q.after = page.back().job;
  }
  CHECK(seen == std::vector<std::string>{"page-0", "page-1", "page-2", "page-3", "page-4"});
  CHECK(a.jobs("nightly").size() == 7);

  const auto prods = a.productions();
  REQUIRE(prods.size() == 1);
  CHECK(prods[0].name == "nightly");
  CHECK_FALSE(prods[0].cancelled.has_value());

  const auto events = a.events();
  REQUIRE(!events.empty());
  std::set<std::string> kinds;
  for (std::size_t i = 0; i < events.size(); ++i) {
    kinds.insert(events[i].kind);
    if (i > 0) CHECK(events[i].seq > events[i - 1].seq);
  }
  CHECK(kinds.count("claimed") == 1);
  CHECK(kinds.count("completed") == 1);
  const auto after = a.events(events[1].seq, 1);
  REQUIRE(after.size() == 1);
  CHECK(after[0].seq == events[2].seq);
  CHECK(a.production_events("nightly").size() == std::min<std::size_t>(events.size(), 100));

  const tenure::ClockReading c = a.clock();
  CHECK_FALSE(c.blocked);
  CHECK(c.now >= c.mark);

  CHECK(a.cancel_production("nightly") == 5);
  CHECK(a.productions()[0].cancelled.has_value());
  CHECK_THROWS_AS(a.submit("nightly", spec("late")), tenure::Cancelled);
  CHECK(a.check_store() == 0);
}

TEST_CASE("errors: each class is reachable through real calls") {
  const std::string dir = testsupport::scratch();
  const auto a = tenure::Authority::open(fresh_db("errors"));
  a.create_production("p");
  a.submit("p", spec("j1"));
  a.submit("p", spec("j2"));
  a.submit("p", spec("j3"));

  SUBCASE("invalid argument: bad IDs, NUL bytes, moved-from handles") {
    CHECK_THROWS_AS(a.create_production("bad id"), tenure::InvalidArgument);
    const std::string core_message = tenure::last_error_message();
    CHECK(!core_message.empty());
    // a NUL byte cannot cross the C boundary: refused before any call
    CHECK_THROWS_AS(a.claim("p", "j1", std::string_view("w\0x", 3), 30s), tenure::InvalidArgument);
    CHECK(tenure::last_error_message() == core_message);
    CHECK_THROWS_AS(a.submit("p", spec("j4").max_attempts(0)), tenure::InvalidArgument);
    CHECK_THROWS_AS(tenure::JobSpec("j5").payload(nullptr, 3), tenure::InvalidArgument);
    tenure::Lease l = a.claim("p", "j1", "w", 30s);
    tenure::Lease moved = std::move(l);
    CHECK(l.capi() == nullptr);  // NOLINT(bugprone-use-after-move)
    CHECK(l.job().empty());
    CHECK_THROWS_AS(l.renew(1min), tenure::InvalidArgument);
    CHECK(moved.job() == "j1");
    const std::string bigreason(2000, 'r');
    CHECK_THROWS_AS(moved.fail(bigreason), tenure::InvalidArgument);
    CHECK(moved.status() == tenure::LeaseStatus::Active);  // failed op: unchanged
  }
  SUBCASE("invalid duration") { CHECK_THROWS_AS(a.claim("p", "j1", "w", 0s), tenure::InvalidDuration); }
  SUBCASE("not found") {
    CHECK_THROWS_AS(a.job("p", "nope"), tenure::NotFound);
    CHECK_THROWS_AS(a.claim("ghost", "x", "w", 1s), tenure::NotFound);
    CHECK_THROWS_AS(a.payload("p", "nope"), tenure::NotFound);
  }
  SUBCASE("conflict") { CHECK_THROWS_AS(a.submit("p", spec("j1", "different")), tenure::Conflict); }
  SUBCASE("not claimable, job terminal, cancelled") {
    tenure::Lease l = a.claim("p", "j1", "w", 30s);
    CHECK_THROWS_AS(a.claim("p", "j1", "other", 30s), tenure::NotClaimable);
    l.complete();
    CHECK_THROWS_AS(a.cancel("p", "j1"), tenure::JobTerminal);
    tenure::Lease m = a.claim("p", "j2", "w", 30s);
    CHECK(a.cancel("p", "j2") == tenure::CancelOutcome::Now);
    CHECK(a.cancel("p", "j2") == tenure::CancelOutcome::Already);
    CHECK_THROWS_AS(m.complete(), tenure::Cancelled);
    CHECK(m.status() == tenure::LeaseStatus::Active);  // failed op: unchanged locally
  }
  SUBCASE("no job available") {
    a.create_production("empty");
    CHECK_THROWS_AS(a.claim_next("empty", "w", 30s), tenure::NoJobAvailable);
  }
  SUBCASE("lease expired, then stale") {
    tenure::Lease slow = a.claim("p", "j3", "slow", 3s);
    std::this_thread::sleep_for(3600ms);  // past the expiry; no upper bound is asserted
    CHECK(a.job("p", "j3").state == tenure::JobState::Expired);
    CHECK_THROWS_AS(slow.renew(30s), tenure::LeaseExpired);
    CHECK_THROWS_AS(slow.complete(), tenure::LeaseExpired);
    tenure::Lease fast = a.claim("p", "j3", "fast", 30s);
    CHECK(fast.attempt() == 2);
    CHECK_THROWS_AS(slow.complete(), tenure::StaleLease);
    fast.complete();
  }
  SUBCASE("lease closed, lease pending") {
    tenure::Lease l = a.claim("p", "j1", "w", 30s);
    l.release();
    CHECK_THROWS_AS(l.renew(30s), tenure::LeaseClosed);
    tenure::Edit e = a.edit();
    tenure::Lease pending = e.claim("p", "j2", "w", 30s);
    CHECK(pending.status() == tenure::LeaseStatus::Pending);
    CHECK_THROWS_AS(pending.renew(1min), tenure::LeasePending);
    CHECK_THROWS_AS(pending.export_token(), tenure::LeasePending);
    e.commit();
    CHECK(pending.status() == tenure::LeaseStatus::Active);
    pending.renew(1min);
  }
  SUBCASE("tokens: malformed, too large, unsupported version") {
    CHECK_THROWS_AS(a.import_lease("hello"), tenure::TokenMalformed);
    CHECK_THROWS_AS(a.import_lease(std::string(3000, 'A')), tenure::TokenTooLarge);
    CHECK_THROWS_AS(a.import_lease("tenure-lease-v2.AAAA"), tenure::TokenUnsupportedVersion);
  }
  SUBCASE("busy") {
    const std::string db = fresh_db("busy");
    const auto x = tenure::Authority::open(db, tenure::Options().busy_timeout(0s));
    const auto y = tenure::Authority::open(db, tenure::Options().busy_timeout(0ms));
    x.create_production("p");
    x.submit("p", spec("held"));
    {
      tenure::Edit e = x.edit();  // SQLite: holds the writer lock
      // PostgreSQL: the job's row lock, held until the edit ends
      const tenure::Lease pending = e.claim("p", "held", "editor", 30s);
      CHECK_THROWS_AS(y.claim("p", "held", "other", 30s), tenure::Busy);
      if (!testsupport::skip_on_postgres("busy: another production while an edit is open "
                                         "(PostgreSQL has row locks, no store-wide writer lock)")) {
        CHECK_THROWS_AS(y.create_production("q"), tenure::Busy);
      }
    }  // destroyed: aborted, lock released
    CHECK(y.create_production("q"));
    CHECK(y.claim("p", "held", "other", 30s).attempt() == 1);
  }
  SUBCASE("store, schema too new") {
    if (!testsupport::skip_on_postgres("store, schema too new: SQLite-file specific (a foreign file, "
                                      "a raised user_version; the server's schema version is covered "
                                      "by the Rust suite)")) {
      const std::string garbage = fresh_db("garbage");
      {
        std::FILE* f = std::fopen(garbage.c_str(), "w");
        REQUIRE(f != nullptr);
        for (int i = 0; i < 200; ++i) std::fputs("this is not a database file at all\n", f);
        std::fclose(f);
      }
      CHECK_THROWS_AS(tenure::Authority::open(garbage), tenure::Store);
      const std::string newer = fresh_db("newer");
      { tenure::Authority::open(newer).create_production("p"); }
      {
        std::FILE* f = std::fopen(newer.c_str(), "r+b");
        REQUIRE(f != nullptr);
        const unsigned char v999[4] = {0, 0, 0x03, 0xE7};  // header offset 60: user_version
        REQUIRE(std::fseek(f, 60, SEEK_SET) == 0);
        REQUIRE(std::fwrite(v999, 1, 4, f) == 4);
        std::fclose(f);
      }
      CHECK_THROWS_AS(tenure::Authority::open(newer), tenure::SchemaTooNew);
    }
  }
  SUBCASE("hold limit") {
    a.submit("p", tenure::JobSpec("held").max_hold(2s));
    const tenure::Lease l = a.claim("p", "held", "w", 60s);
    CHECK_THROWS_AS(l.renew(60s), tenure::HoldLimit);
  }
  SUBCASE("clock rollback (a child process under libfaketime, 2 h in the past)") {
    if (!testsupport::skip_on_postgres("clock rollback: the PostgreSQL backend's clock is the server's, "
                                      "a client under libfaketime cannot roll it back (the Rust suite's "
                                      "skew test covers it)")) {
      const char* faketime = std::getenv("TENURE_FAKETIME_LIB");
      REQUIRE_MESSAGE(faketime != nullptr, "TENURE_FAKETIME_LIB must name libfaketime.so.1");
      REQUIRE(access(faketime, R_OK) == 0);
      const std::string db = fresh_db("clock");
      {
        const auto c = tenure::Authority::open(db);
        c.create_production("p");
        c.submit("p", spec("j"));
      }
      const std::string self = testsupport::self_exe();
      REQUIRE(!self.empty());
      std::fflush(stdout);
      const pid_t pid = fork();
      REQUIRE(pid >= 0);
      if (pid == 0) {
        setenv("LD_PRELOAD", faketime, 1);
        setenv("FAKETIME", "-2h", 1);
        setenv("FAKETIME_DONT_FAKE_MONOTONIC", "1", 1);
        // libfaketime is preloaded ahead of the ASan runtime
        setenv("ASAN_OPTIONS", "detect_leaks=1:verify_asan_link_order=0", 1);
        execl(self.c_str(), self.c_str(), "--rollback-child", db.c_str(), static_cast<char*>(nullptr));
        _exit(127);
      }
      int status = 0;
      REQUIRE(waitpid(pid, &status, 0) == pid);
      CHECK(WIFEXITED(status));
      CHECK(WEXITSTATUS(status) == 0);
      // with the real clock everything works again; the refused claims wrote nothing
      const auto c = tenure::Authority::open(db);
      CHECK_FALSE(c.clock().blocked);
      tenure::Lease l = c.claim("p", "j", "present", 30s);
      CHECK(l.attempt() == 1);
      l.complete();
    }
  }
}

TEST_CASE("edits: claim + complete atomically, abort on destruction") {
  const std::string db = fresh_db("edits");
  const auto a = tenure::Authority::open(db);
  const auto reader = tenure::Authority::open(db);
  a.create_production("p");
  a.submit("p", spec("atomic"));
  a.submit("p", spec("dropped"));

  {
    tenure::Edit e = a.edit();
    CHECK(e.create_production("q"));
    CHECK(e.submit("q", spec("one")) == tenure::SubmitOutcome::Created);
    CHECK(e.submit("q", spec("two")) == tenure::SubmitOutcome::Created);
    tenure::Lease l = e.claim("p", "atomic", "editor", 30s);
    CHECK(l.status() == tenure::LeaseStatus::Pending);
    e.complete(l, {{"result", "ok"}});
    // nothing is visible before the commit
    CHECK(reader.job("p", "atomic").state == tenure::JobState::Requested);
    CHECK(reader.facts("p", "atomic").empty());
    CHECK(reader.productions().size() == 1);
    e.commit();
    CHECK(l.status() == tenure::LeaseStatus::Closed);
    CHECK_THROWS_AS(e.commit(), tenure::InvalidArgument);  // finished
  }
  tenure::JobView j = reader.job("p", "atomic");
  CHECK(j.state == tenure::JobState::Completed);
  CHECK(j.attempts == 1);
  CHECK(fact(reader.facts("p", "atomic"), "atomic", "result") == "ok");
  CHECK(reader.jobs("q").size() == 2);

  // dropped without commit: aborted; the pending lease closes
  tenure::Lease survivor(nullptr);
  {
    tenure::Edit e = a.edit();
    survivor = e.claim("p", "dropped", "editor", 30s);
    e.submit("q", spec("three"));
    tenure::Edit moved = std::move(e);
    CHECK(e.capi() == nullptr);  // NOLINT(bugprone-use-after-move)
    CHECK_THROWS_AS(e.commit(), tenure::InvalidArgument);
    CHECK(survivor.status() == tenure::LeaseStatus::Pending);
  }
  CHECK(survivor.status() == tenure::LeaseStatus::Closed);
  CHECK_THROWS_AS(survivor.complete(), tenure::LeaseClosed);
  j = a.job("p", "dropped");
  CHECK(j.state == tenure::JobState::Requested);
  CHECK(j.attempts == 0);
  CHECK(a.jobs("q").size() == 2);

  // explicit abort, then the lock is free again
  {
    tenure::Edit e = a.edit();
    tenure::Lease l = e.claim_next("p", "editor", 30s);
    e.abort();
    CHECK(l.status() == tenure::LeaseStatus::Closed);
  }
  // renew / release / fail of active leases inside an edit
  tenure::Lease act = a.claim("p", "dropped", "w", 30s);
  {
    tenure::Edit e = a.edit();
    e.renew(act, 10min);
    CHECK(e.fail(act, "nope", true) == tenure::JobState::Failed);
    e.commit();
  }
  CHECK(act.status() == tenure::LeaseStatus::Closed);
  CHECK(a.job("p", "dropped").state == tenure::JobState::Failed);
  a.submit("q", spec("rel"));
  tenure::Lease rel = a.claim("q", "rel", "w", 30s);
  {
    tenure::Edit e = a.edit();
    CHECK(e.release(rel) == tenure::JobState::Requested);
    CHECK(e.cancel("q", "one") == tenure::CancelOutcome::Now);
    CHECK(e.cancel_production("q") == 2);  // "two" and the released "rel"
    e.commit();
  }
  CHECK(a.job("q", "rel").state == tenure::JobState::Cancelled);
}

TEST_CASE("leases: destroying one frees memory only") {
  const auto a = tenure::Authority::open(fresh_db("drop"));
  a.create_production("p");
  a.submit("p", spec("j"));
  std::string claim_id;
  const std::size_t events_before = a.events(0, 10000).size();
  { claim_id = a.claim("p", "j", "w", 30s).claim_id(); }
  const std::size_t events_after = a.events(0, 10000).size();
  CHECK(events_after == events_before + 1);  // the claim only
  const tenure::JobView j = a.job("p", "j");
  CHECK(j.state == tenure::JobState::Claimed);
  CHECK(j.claim_id == std::optional<std::string>(claim_id));
  CHECK_THROWS_AS(a.claim("p", "j", "other", 30s), tenure::NotClaimable);
}

TEST_CASE("tokens: export, import, single use, secrets stay out of everything") {
  const std::string db = fresh_db("tokens");
  const auto a = tenure::Authority::open(db);
  const auto b = tenure::Authority::open(db);  // a second handle on the same file
  a.create_production("p");
  a.submit("p", spec("j"));
  a.submit("p", spec("k"));
  const tenure::Lease l = a.claim("p", "j", "exporter", 30s);
  const std::string token = l.export_token();
  CHECK(token.rfind("tenure-lease-v1.", 0) == 0);
  CHECK(token.size() <= 2048);
  const std::string secret_part = token.substr(std::strlen("tenure-lease-v1."));

  tenure::Lease imp = b.import_lease(token);
  CHECK(imp.claim_id() == l.claim_id());
  CHECK(imp.job() == "j");
  CHECK(imp.holder() == "exporter");
  CHECK(imp.status() == tenure::LeaseStatus::Active);
  imp.complete({{"by", "importer"}});
  try {
    (void)b.import_lease(token);
    FAIL("a used token imported again");
  } catch (const tenure::LeaseClosed& e) {
    CHECK(std::string(e.what()).find(secret_part) == std::string::npos);
  }
  CHECK_THROWS_AS(l.complete(), tenure::LeaseClosed);

  // a token of a replaced claim: stale
  const tenure::Lease k = a.claim("p", "k", "w", 30s);
  const std::string ktoken = k.export_token();
  k.release();
  const tenure::Lease k2 = a.claim("p", "k", "w2", 30s);
  try {
    (void)a.import_lease(ktoken);
    FAIL("stale token imported");
  } catch (const tenure::Error& e) {
    CHECK((e.status() == TENURE_STALE_LEASE || e.status() == TENURE_LEASE_CLOSED));
    CHECK(std::string(e.what()).find(ktoken.substr(16)) == std::string::npos);
  }
  for (const std::string& s : observable_texts(a, "p")) {
    CHECK(s.find(secret_part) == std::string::npos);
    CHECK(s.find(ktoken.substr(16)) == std::string::npos);
  }
}

TEST_CASE("tokens: hand a lease to another process through a pipe") {
  const std::string db = fresh_db("handoff");
  const auto a = tenure::Authority::open(db);
  a.create_production("p");
  a.submit("p", spec("j"));
  const tenure::Lease l = a.claim("p", "j", "parent", 30s);
  std::string token = l.export_token();
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const std::string self = testsupport::self_exe();
  std::fflush(stdout);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(fds[1]);
    dup2(fds[0], 0);
    close(fds[0]);
    execl(self.c_str(), self.c_str(), "--import-child", db.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[0]);
  token.push_back('\n');
  REQUIRE(write(fds[1], token.data(), token.size()) == static_cast<ssize_t>(token.size()));
  close(fds[1]);
  tenure::detail::wipe(&token[0], token.size());
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  const auto facts = a.facts("p", "j");
  CHECK(fact(facts, "j", "by") == "child");
  CHECK(fact(facts, "j", "pid") == std::to_string(pid));
  CHECK(fact(facts, "j", "tenure.holder") == "parent");
  CHECK(a.job("p", "j").state == tenure::JobState::Completed);
  // the parent's copy of the lease is no longer current
  try {
    l.complete();
    FAIL("completed twice");
  } catch (const tenure::Error& e) {
    CHECK((e.status() == TENURE_LEASE_CLOSED || e.status() == TENURE_STALE_LEASE));
  }
}

TEST_CASE("threads: one Lease shared by racing threads: exactly one completion wins") {
  const auto a = tenure::Authority::open(fresh_db("lease-race"));
  a.create_production("p");
  a.submit("p", spec("j"));
  const tenure::Lease l = a.claim("p", "j", "w", 30s);
  std::atomic<int> wins{0}, closed{0}, other{0};
  std::vector<std::thread> ts;
  for (int i = 0; i < 4; ++i) {
    ts.emplace_back([&l, &wins, &closed, &other, i] {
      try {
        l.complete({{"winner", std::to_string(i)}});
        ++wins;
      } catch (const tenure::LeaseClosed&) {
        ++closed;
      } catch (...) {
        ++other;
      }
    });
  }
  for (auto& t : ts) t.join();
  CHECK(wins.load() == 1);
  CHECK(closed.load() == 3);
  CHECK(other.load() == 0);
  CHECK(a.facts("p", "j").size() > 1);
}

TEST_CASE("Options: group commit is on by default and switches off") {
  CHECK(tenure::Options().group_commit());
  CHECK_FALSE(tenure::Options().group_commit(false).group_commit());
  CHECK(tenure::Options().group_commit(false).group_commit(true).group_commit());
  // Bad struct settings are still refused when opening.
  CHECK_THROWS_AS(tenure::Authority::open(fresh_db("bad-options"),
                                          tenure::Options().group_commit(false).busy_timeout(
                                              std::chrono::hours(2))),
                  tenure::InvalidArgument);
}

TEST_CASE("threads: one Authority shared by many workers; every job done exactly once") {
  bool group = true;
  SUBCASE("group commit on") { group = true; }
  SUBCASE("group commit off") { group = false; }
  CAPTURE(group);
  const auto a = tenure::Authority::open(
      fresh_db(group ? "threads" : "threads-ungrouped"),
      tenure::Options().busy_timeout(60s).group_commit(group));
  a.create_production("p");
  constexpr int kJobs = 40;
  constexpr int kThreads = 4;
  for (int i = 0; i < kJobs; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "job-%02d", i);
    a.submit("p", spec(name, name));
  }
  std::vector<std::vector<std::string>> done(kThreads);
  std::atomic<int> errors{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&a, &done, &errors, t] {
      const std::string holder = "thread-" + std::to_string(t);
      try {
        for (;;) {
          tenure::Lease l = a.claim_next("p", holder, 30s);
          const std::vector<std::uint8_t> payload = a.payload("p", l.job());
          if (std::string(payload.begin(), payload.end()) != l.job()) ++errors;
          l.complete({{"worker", holder}});
          done[static_cast<std::size_t>(t)].push_back(l.job());
        }
      } catch (const tenure::NoJobAvailable&) {
      } catch (const std::exception&) {
        ++errors;
      }
    });
  }
  for (auto& w : workers) w.join();
  CHECK(errors.load() == 0);
  std::map<std::string, int> count;
  for (int t = 0; t < kThreads; ++t)
    for (const auto& j : done[static_cast<std::size_t>(t)]) ++count[j];
  CHECK(count.size() == static_cast<std::size_t>(kJobs));
  for (const auto& [job, n] : count) {
    CAPTURE(job);
    CHECK(n == 1);
  }
  const auto facts = a.production_facts("p");
  for (int t = 0; t < kThreads; ++t) {
    for (const auto& j : done[static_cast<std::size_t>(t)]) {
      CHECK(fact(facts, j, "worker") == "thread-" + std::to_string(t));
      CHECK(a.job("p", j).state == tenure::JobState::Completed);
    }
  }
  CHECK(a.check_store() == 0);
}

TEST_CASE("authority handles: move, adopt, capi") {
  auto a = tenure::Authority::open(fresh_db("handles"));
  tenure_authority* raw = a.capi();
  REQUIRE(raw != nullptr);
  tenure::Authority b = std::move(a);
  CHECK(a.capi() == nullptr);  // NOLINT(bugprone-use-after-move)
  CHECK(b.capi() == raw);
  CHECK_THROWS_AS(a.create_production("p"), tenure::InvalidArgument);
  // mixing C calls with the projection: tenure::check throws the mapped class
  bool created = false;
  tenure::check(tenure_authority_create_production(b.capi(), "p", &created));
  CHECK(created);
  tenure_job_view* view = nullptr;
  CHECK_THROWS_AS(tenure::check(tenure_authority_job(b.capi(), "p", "missing", &view)), tenure::NotFound);
  CHECK(view == nullptr);
}

#if __cplusplus >= 202002L
TEST_CASE("C++20: payloads as std::span") {
  const auto a = tenure::Authority::open(fresh_db("span"));
  a.create_production("p");
  const std::vector<std::uint8_t> u8 = {1, 2, 3, 0, 255};
  const std::array<std::byte, 3> by = {std::byte{9}, std::byte{0}, std::byte{7}};
  a.submit("p", tenure::JobSpec("u8").payload(std::span<const std::uint8_t>(u8)));
  a.submit("p", tenure::JobSpec("bytes").payload(std::span<const std::byte>(by)));
  a.submit("p", tenure::JobSpec("vec").payload(u8));
  CHECK(a.payload("p", "u8") == u8);
  CHECK(a.payload("p", "vec") == u8);
  CHECK(a.payload("p", "bytes") == std::vector<std::uint8_t>{9, 0, 7});
}
#endif
