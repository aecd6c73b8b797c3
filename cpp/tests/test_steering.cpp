// Requeue, progress checkpoints and claims across productions through the
// C++ projection (ABI 1.2): a failed job requeued is claimable again with a
// new claim ID, a live job throws JobLive changing nothing; the current
// lease stores a checkpoint the view shows and the next attempt after an
// expiry reads, a stale lease's checkpoint throws StaleLease; claims across
// productions rotate. Bad input: oversized progress, 0 or absurd extra
// attempts, unknown productions and jobs, an empty list.
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
