// Requeue, progress checkpoints, claims across productions and claim gates
// through the C++ projection (ABI 1.2): a failed job requeued is claimable again with a
// new claim ID, a live job throws JobLive changing nothing; the current
// lease stores a checkpoint the view shows and the next attempt after an
// expiry reads, a stale lease's checkpoint throws StaleLease; claims across
// productions rotate; a paused production, one at its concurrency limit and
// one over its rate limit throw ProductionPaused, ConcurrencyLimit and
// RateLimited on a named claim, and `gates` shows what is set. Bad input:
// oversized progress, 0 or absurd extra attempts, limits of 0 or beyond
// 1 000 000, zero, negative or inexact intervals, unknown productions and
// jobs, an empty list.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "support.hpp"

using namespace std::chrono_literals;
using testsupport::fresh_db;

TEST_CASE("steering: requeue a failed job; a live one throws JobLive") {
  const tenure::Authority a = tenure::Authority::open(fresh_db("cpp-requeue"));
  a.create_production("p");
  a.submit("p", tenure::JobSpec("j").max_attempts(2));
  a.submit("p", tenure::JobSpec("live"));
  const tenure::Lease old = a.claim("p", "j", "w", 60s);
  CHECK(old.fail("bad input", true) == tenure::JobState::Failed);
  const std::size_t events = a.events(0, 10000).size();
  CHECK_THROWS_AS(a.requeue("p", "live"), tenure::JobLive);
  CHECK_THROWS_AS(a.requeue("p", "j", 0u), tenure::InvalidArgument);
  CHECK_THROWS_AS(a.requeue("p", "j", 1001u), tenure::InvalidArgument);
  CHECK_THROWS_AS(a.requeue("p", "nope"), tenure::NotFound);
  CHECK_THROWS_AS(a.requeue("nope", "j"), tenure::NotFound);
  CHECK_THROWS_AS(a.requeue_all("p", 0), tenure::InvalidArgument);
  CHECK(a.events(0, 10000).size() == events);
  a.requeue("p", "j", 1u);
  const tenure::JobView v = a.job("p", "j");
  CHECK(v.state == tenure::JobState::Requested);
  CHECK(v.attempts == 1);
  const tenure::Lease again = a.claim_next("p", "w", 60s);
  CHECK(again.claim_id() != old.claim_id());
  CHECK(again.fail("again", true) == tenure::JobState::Failed);
  const auto [n, more] = a.requeue_all("p", 10);
  CHECK(n == 1);
  CHECK(!more);
}

TEST_CASE("steering: a checkpoint carries to the next attempt; a stale lease's is refused") {
  const tenure::Authority a = tenure::Authority::open(fresh_db("cpp-progress"));
  a.create_production("p");
  a.submit("p", tenure::JobSpec("j"));
  const tenure::Lease first = a.claim("p", "j", "w1", 300ms);
  const std::vector<std::uint8_t> mark{'o', 'f', 'f', '=', '7'};
  first.checkpoint(mark);
  first.renew_checkpoint(300ms, mark);
  CHECK_THROWS_AS(first.checkpoint(std::vector<std::uint8_t>(4097, 1)), tenure::InvalidArgument);
  CHECK(a.job("p", "j").progress == mark);
  CHECK(!a.jobs("p").front().progress.has_value());
  const tenure::Lease second = a.claim_next_wait("p", "w2", 60s, 60s);
  CHECK(second.attempt() == 2);
  CHECK(a.job("p", "j").progress == mark);
  CHECK_THROWS_AS(first.checkpoint(mark), tenure::StaleLease);
  second.checkpoint({});
  second.complete({});
  CHECK_THROWS_AS(second.checkpoint(mark), tenure::LeaseClosed);
  CHECK(a.job("p", "j").progress == std::vector<std::uint8_t>{});
}

TEST_CASE("steering: claims across productions rotate") {
  const tenure::Authority a = tenure::Authority::open(fresh_db("cpp-across"));
  a.create_production("x");
  a.create_production("y");
  a.submit("x", tenure::JobSpec("x1"));
  a.submit("x", tenure::JobSpec("x2"));
  a.submit("y", tenure::JobSpec("y1"));
  const std::vector<std::string> list{"x", "y"};
  CHECK(a.claim_next_across(list, "w", 60s).production() == "x");
  CHECK(a.claim_next_across(list, "w", 60s).production() == "y");
  CHECK(a.claim_next_across(list, "w", 60s).production() == "x");
  CHECK_THROWS_AS(a.claim_next_across(list, "w", 60s), tenure::NoJobAvailable);
  CHECK_THROWS_AS(a.claim_next_across({}, "w", 60s), tenure::InvalidArgument);
  CHECK_THROWS_AS(a.claim_next_across({"x", "nope"}, "w", 60s), tenure::NotFound);
}

TEST_CASE("steering: claim gates refuse named claims and read back as set") {
  const tenure::Authority a = tenure::Authority::open(fresh_db("cpp-gates"));
  a.create_production("p");
  for (const char* j : {"j1", "j2", "j3"}) a.submit("p", tenure::JobSpec(j));
  tenure::Gates g = a.gates("p");
  CHECK(!g.paused);
  CHECK(!g.concurrency_limit);
  CHECK(!g.rate_limit);

  CHECK(a.pause_production("p"));
  CHECK(!a.pause_production("p"));
  CHECK_THROWS_AS(a.claim("p", "j1", "w", 60s), tenure::ProductionPaused);
  CHECK_THROWS_AS(a.claim_next("p", "w", 60s), tenure::NoJobAvailable);
  g = a.gates("p");
  REQUIRE(g.paused);
  CHECK(g.paused->time_since_epoch().count() > 0);
  CHECK(a.resume_production("p"));
  CHECK(!a.resume_production("p"));

  a.set_concurrency_limit("p", 1);
  CHECK(a.gates("p").concurrency_limit == std::optional<std::uint32_t>(1));
  const tenure::Lease held = a.claim("p", "j1", "w", 60s);
  CHECK_THROWS_AS(a.claim("p", "j2", "w", 60s), tenure::ConcurrencyLimit);
  a.clear_concurrency_limit("p");
  CHECK(!a.gates("p").concurrency_limit);

  a.set_rate_limit("p", 1, 1h, 1);
  g = a.gates("p");
  REQUIRE(g.rate_limit);
  CHECK(*g.rate_limit == tenure::RateLimit{1, std::chrono::microseconds(3600000000), 1});
  const tenure::Lease second = a.claim("p", "j2", "w", 60s);
  CHECK_THROWS_AS(a.claim("p", "j3", "w", 60s), tenure::RateLimited);
  a.clear_rate_limit("p");
  CHECK(!a.gates("p").rate_limit);

  // The same calls inside an edit, gone with its abort.
  {
    tenure::Edit e = a.edit();
    CHECK(e.pause_production("p"));
    e.set_concurrency_limit("p", 2);
    e.set_rate_limit("p", 5, 1s, 2);
    e.clear_rate_limit("p");
    e.clear_concurrency_limit("p");
    CHECK(e.resume_production("p"));
    CHECK(e.pause_production("p"));
    e.abort();
  }
  CHECK(!a.gates("p").paused);
}

TEST_CASE("steering: bad gate input throws and changes nothing") {
  const tenure::Authority a = tenure::Authority::open(fresh_db("cpp-gates-bad"));
  a.create_production("p");
  CHECK_THROWS_AS(a.set_concurrency_limit("p", 0), tenure::InvalidArgument);
  CHECK_THROWS_AS(a.set_concurrency_limit("p", 1000001), tenure::InvalidArgument);
  CHECK_THROWS_AS(a.set_concurrency_limit("p", UINT32_MAX), tenure::InvalidArgument);
  CHECK_THROWS_AS(a.set_rate_limit("p", 0, 1s, 1), tenure::InvalidArgument);
  CHECK_THROWS_AS(a.set_rate_limit("p", 1, 1s, 0), tenure::InvalidArgument);
  CHECK_THROWS_AS(a.set_rate_limit("p", 1000001, 1s, 1), tenure::InvalidArgument);
  CHECK_THROWS_AS(a.set_rate_limit("p", 1, 0s, 1), tenure::InvalidDuration);
  CHECK_THROWS_AS(a.set_rate_limit("p", 1, -1s, 1), tenure::InvalidDuration);
  CHECK_THROWS_AS(a.set_rate_limit("p", 1, 25h, 1), tenure::InvalidDuration);
  CHECK_THROWS_AS(a.set_rate_limit("p", 10, 5us, 1), tenure::InvalidDuration);
  CHECK_THROWS_AS(a.set_rate_limit("p", 1, std::chrono::nanoseconds(1500), 1), tenure::InvalidDuration);
  for (const char* bad : {"", "has space"}) {
    CHECK_THROWS_AS(a.pause_production(bad), tenure::InvalidArgument);
    CHECK_THROWS_AS(a.resume_production(bad), tenure::InvalidArgument);
    CHECK_THROWS_AS(a.set_concurrency_limit(bad, 1), tenure::InvalidArgument);
    CHECK_THROWS_AS(a.clear_concurrency_limit(bad), tenure::InvalidArgument);
    CHECK_THROWS_AS(a.set_rate_limit(bad, 1, 1s, 1), tenure::InvalidArgument);
    CHECK_THROWS_AS(a.clear_rate_limit(bad), tenure::InvalidArgument);
    CHECK_THROWS_AS(a.gates(bad), tenure::InvalidArgument);
  }
  CHECK_THROWS_AS(a.pause_production(std::string_view("p\0q", 3)), tenure::InvalidArgument);
  CHECK_THROWS_AS(a.pause_production("nope"), tenure::NotFound);
  CHECK_THROWS_AS(a.set_concurrency_limit("nope", 1), tenure::NotFound);
  CHECK_THROWS_AS(a.set_rate_limit("nope", 1, 1s, 1), tenure::NotFound);
  CHECK_THROWS_AS(a.gates("nope"), tenure::NotFound);
  const tenure::Gates g = a.gates("p");
  CHECK(!g.paused);
  CHECK(!g.concurrency_limit);
  CHECK(!g.rate_limit);
}
