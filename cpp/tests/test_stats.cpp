// Authority::stats through the C++ projection (ABI 1.2): after random
// operation sequences, with short leases left to expire on the real clock,
// the statistics equal a full scan of the same store (every job's view and
// every event); bad queries throw the typed error. The clock-jump cases
// are the Rust suite's (an injected clock).
#include <doctest/doctest.h>

#include <chrono>
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

}  // namespace

TEST_CASE("stats equal a full scan after random operations") {
  for (unsigned seed = 1; seed <= 5; ++seed) {
    tenure::Authority a = tenure::Authority::open(fresh_db("stats" + std::to_string(seed)));
    a.create_production("p");
    a.create_production("q");
    std::mt19937 rng(seed);
    std::vector<tenure::Lease> leases;
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
    std::this_thread::sleep_for(10ms);  // every short lease has expired
    const tenure::Stats st = a.stats(std::nullopt, 30s, 1h);
    REQUIRE(st.productions.size() == 2);
    CHECK(st.high_water <= st.now);
    const tenure::ProductionStats& p = st.productions[0];
    CHECK(p.name == "p");
    const Scan want = scan(a, "p", st.now);
    CHECK(p.waiting_due == want.requested);
    CHECK(p.waiting_later == 0);
    CHECK(p.claimed_live == want.claimed);
    CHECK(p.claimed_expired == want.expired);
    CHECK(p.completed == want.completed);
    CHECK(p.failed == want.failed);
    CHECK(p.cancelled_jobs == want.cancelled);
    CHECK(p.expiring_within == want.expiring);
    CHECK(p.max_live_attempts == want.max_attempts);
    CHECK(p.flow.claims == want.claims);
    CHECK(p.flow.completions == want.completions);
    CHECK(p.flow.retryable_failures == want.retryable);
    CHECK(p.flow.permanent_failures == want.permanent);
    CHECK(p.flow.wait.count == want.claims);
    CHECK(p.flow.run.count == want.closes);
    CHECK(p.flow.wait.p50.has_value() == (want.claims > 0));
    CHECK(!p.next_due.has_value());
    CHECK(st.productions[1].name == "q");
    const tenure::Stats one = a.stats("p", 30s, 1h);
    REQUIRE(one.productions.size() == 1);
    CHECK(one.productions[0].completed == p.completed);
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
