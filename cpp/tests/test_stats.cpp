// Authority::stats through the C++ projection (ABI 1.2): after random
// operation sequences, with short leases left to expire on the real clock,
// the statistics equal a full scan of the same store (every job's view and
// every event), the claim gates included; after clock jumps (this program
// re-executed under libfaketime two hours back, where reads classify at the
// high-water mark, and two hours ahead, where every lease has expired) they
// still equal the scan; bad queries throw the typed error.
#include <doctest/doctest.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "support.hpp"

using namespace std::chrono_literals;
using testsupport::fresh_db;

namespace {

struct Scan {
  std::uint64_t requested = 0, claimed = 0, expired = 0, completed = 0, failed = 0, cancelled = 0;
  std::uint64_t expiring = 0, claims = 0, completions = 0, retryable = 0, permanent = 0, closes = 0;
  std::uint32_t max_attempts = 0;
};

Scan scan(const tenure::Authority& a, const std::string& p, tenure::time_point now) {
  Scan s;
  tenure::ListQuery q;
  q.limit = 10000;
  for (const tenure::JobView& v : a.jobs(p, q)) {
    switch (v.state) {
      case tenure::JobState::Requested: s.requested++; break;
      case tenure::JobState::Claimed:
        s.claimed++;
        if (*v.expires <= now + 30s) s.expiring++;
        if (v.attempts > s.max_attempts) s.max_attempts = v.attempts;
        break;
      case tenure::JobState::Expired: s.expired++; break;
      case tenure::JobState::Completed: s.completed++; break;
      case tenure::JobState::Failed: s.failed++; break;
      case tenure::JobState::Cancelled: s.cancelled++; break;
      default: break;
    }
  }
  for (const tenure::Event& e : a.events(0, 10000)) {
    if (e.production != p) continue;
    if (e.kind == "claimed") s.claims++;
    if (e.kind == "completed") s.completions++;
    if (e.kind == "failed" && e.state == tenure::JobState::Requested) s.retryable++;
    if ((e.kind == "failed" && e.state == tenure::JobState::Failed) || e.kind == "exhausted") s.permanent++;
    if (e.kind == "completed" || e.kind == "failed" || e.kind == "released") s.closes++;
  }
  return s;
}

/// Random operations on productions "p" and "q" of `a` (the leases taken
/// stay open in `leases`); with some seeds, gates on "p".
void populate(const tenure::Authority& a, unsigned seed, std::vector<tenure::Lease>& leases) {
  a.create_production("p");
  a.create_production("q");
  std::mt19937 rng(seed);
  for (int i = 0; i < 80; ++i) {
    const int op = static_cast<int>(rng() % 7);
    const std::string job = "j" + std::to_string(rng() % 12);
    try {
      if (op <= 1) {
        a.submit("p", tenure::JobSpec(job).max_attempts(1 + rng() % 3));
      } else if (op == 2) {
        if (rng() % 3 == 0)
          leases.push_back(a.claim_next("p", "w", 1ms));
        else
          leases.push_back(a.claim_next("p", "w", 1h));
      } else if (op == 3 && !leases.empty()) {
        leases[rng() % leases.size()].complete();
      } else if (op == 4 && !leases.empty()) {
        leases[rng() % leases.size()].fail("boom", rng() % 2 == 0);
      } else if (op == 5 && !leases.empty()) {
        leases[rng() % leases.size()].release();
      } else {
        a.cancel("p", job);
      }
    } catch (const tenure::Error&) {
    }
  }
  if (seed % 2 == 0) {
    a.pause_production("p");
    a.set_concurrency_limit("p", 1 + seed);
  }
  if (seed % 3 == 0) a.set_rate_limit("p", seed, std::chrono::seconds(seed), 2);
}

bool same(const tenure::Gates& a, const tenure::Gates& b) {
  return a.paused == b.paused && a.concurrency_limit == b.concurrency_limit && a.rate_limit == b.rate_limit;
}

/// The statistics of `a` over `window` against a full scan (every event of
/// the store inside the window); `expect(ok, what)` records each check.
void compare(const tenure::Authority& a, std::chrono::microseconds window,
             const std::function<void(bool, const char*)>& expect) {
  const tenure::Stats st = a.stats(std::nullopt, 30s, window);
  const tenure::ClockReading c = a.clock();
  expect(st.productions.size() == 2, "two productions");
  if (st.productions.size() != 2) return;
  expect(st.high_water <= st.now, "mark <= now");
  expect(st.now <= std::max(c.now, c.mark), "now <= a later reading");
  const tenure::ProductionStats& p = st.productions[0];
  expect(p.name == "p", "name");
  const Scan want = scan(a, "p", st.now);
  expect(p.waiting_due == want.requested, "waiting_due");
  expect(p.waiting_later == 0, "waiting_later");
  expect(p.claimed_live == want.claimed, "claimed_live");
  expect(p.claimed_expired == want.expired, "claimed_expired");
  expect(p.completed == want.completed, "completed");
  expect(p.failed == want.failed, "failed");
  expect(p.cancelled_jobs == want.cancelled, "cancelled_jobs");
  expect(p.expiring_within == want.expiring, "expiring_within");
  expect(p.max_live_attempts == want.max_attempts, "max_live_attempts");
  expect(p.flow.claims == want.claims, "claims");
  expect(p.flow.completions == want.completions, "completions");
  expect(p.flow.retryable_failures == want.retryable, "retryable_failures");
  expect(p.flow.permanent_failures == want.permanent, "permanent_failures");
  expect(p.flow.wait.count == want.claims, "wait.count");
  expect(p.flow.run.count == want.closes, "run.count");
  expect(p.flow.wait.p50.has_value() == (want.claims > 0), "wait.p50");
  expect(!p.next_due.has_value(), "next_due");
  expect(same(p.gates, a.gates("p")), "gates of p");
  expect(st.productions[1].name == "q", "q");
  expect(same(st.productions[1].gates, tenure::Gates{}), "q has no gates");
  const tenure::Stats one = a.stats("p", 30s, window);
  expect(one.productions.size() == 1 && one.productions[0].completed == p.completed, "one production");
}

/// Re-execute this program as the clock-jump child under libfaketime
/// `offset` from now; whether it passed.
bool run_jumped(const char* faketime, const std::string& db, const char* offset) {
  const std::string self = testsupport::self_exe();
  if (self.empty()) return false;
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    setenv("LD_PRELOAD", faketime, 1);
    setenv("FAKETIME", offset, 1);
    setenv("FAKETIME_DONT_FAKE_MONOTONIC", "1", 1);
    // libfaketime is preloaded ahead of the ASan runtime
    setenv("ASAN_OPTIONS", "detect_leaks=1:verify_asan_link_order=0", 1);
    execl(self.c_str(), self.c_str(), "--stats-jump-child", db.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

int testsupport::stats_jump_child(const char* db) {
  int failures = 0;
  const char* jump = std::getenv("FAKETIME");
  try {
    const auto a = tenure::Authority::open(db);
    const bool back = jump != nullptr && jump[0] == '-';
    if (a.clock().blocked != back) {
      std::cerr << "child: FAILED the clock is blocked only behind the mark\n";
      ++failures;
    }
    compare(a, std::chrono::hours(4), [&](bool ok, const char* what) {
      if (!ok) {
        std::cerr << "child: FAILED " << what << "\n";
        ++failures;
      }
    });
  } catch (const std::exception& e) {
    std::cerr << "child: unexpected exception: " << e.what() << "\n";
    ++failures;
  }
  std::cout << "child (" << (jump ? jump : "?") << "): " << (failures == 0 ? "ok" : "failed") << "\n";
  return failures == 0 ? 0 : 1;
}

TEST_CASE("stats equal a full scan after random operations") {
  for (unsigned seed = 1; seed <= 5; ++seed) {
    tenure::Authority a = tenure::Authority::open(fresh_db("stats" + std::to_string(seed)));
    std::vector<tenure::Lease> leases;
    populate(a, seed, leases);
    std::this_thread::sleep_for(10ms);  // every short lease has expired
    compare(a, 1h, [](bool ok, const char* what) { CHECK_MESSAGE(ok, what); });
  }
}

TEST_CASE("stats equal a full scan after clock jumps") {
  if (!testsupport::skip_on_postgres("stats after clock jumps: libfaketime moves the local clock of a SQLite store")) {
    const char* faketime = std::getenv("TENURE_FAKETIME_LIB");
    REQUIRE_MESSAGE(faketime != nullptr, "TENURE_FAKETIME_LIB must name libfaketime.so.1");
    REQUIRE(access(faketime, R_OK) == 0);
    for (unsigned seed = 1; seed <= 3; ++seed) {
      const std::string db = fresh_db("stats-jump" + std::to_string(seed));
      {
        const auto a = tenure::Authority::open(db);
        std::vector<tenure::Lease> leases;
        populate(a, seed, leases);
      }
      // Back first, so the mark is still the real clock's.
      CHECK_MESSAGE(run_jumped(faketime, db, "-2h"), "2 h back, seed ", seed);
      CHECK_MESSAGE(run_jumped(faketime, db, "+2h"), "2 h ahead, seed ", seed);
    }
  }
}

TEST_CASE("stats: bad queries throw the typed error") {
  tenure::Authority a = tenure::Authority::open(fresh_db("stats-bad"));
  a.create_production("p");
  CHECK_THROWS_AS(a.stats("nope"), tenure::NotFound);
  CHECK_THROWS_AS(a.stats(std::nullopt, -1s), tenure::InvalidDuration);
  CHECK_THROWS_AS(a.stats(std::nullopt, 30s, std::chrono::hours(24 * 31)), tenure::InvalidDuration);
  CHECK(a.stats().productions.at(0).waiting_due == 0);
}
