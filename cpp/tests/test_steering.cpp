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

TEST_CASE("steering: a batch across productions is shared out in rounds") {
  const tenure::Authority a = tenure::Authority::open(fresh_db("cpp-many-across"));
  for (const char* p : {"x", "y", "z"}) a.create_production(p);
  for (const char* j : {"x1", "x2", "x3"}) a.submit("x", tenure::JobSpec(j));
  a.submit("y", tenure::JobSpec("y1"));
  for (const char* j : {"z1", "z2"}) a.submit("z", tenure::JobSpec(j));
  const std::vector<std::string> list{"x", "y", "z"};
  const auto productions = [](const std::vector<tenure::Lease>& ls) {
    std::vector<std::string> out;
    for (const auto& l : ls) out.emplace_back(l.production());
    return out;
  };
  const std::vector<tenure::Lease> first = a.claim_next_many_across(list, "w", 60s, 4);
  CHECK(productions(first) == std::vector<std::string>{"x", "x", "y", "z"});
  // The rotation starts after z: x gives its last job, y none, z its last.
  const std::vector<tenure::Lease> second = a.claim_next_many_across(list, "w", 60s, 5);
  REQUIRE(second.size() == 2);
  CHECK(second[0].job() == "x3");
  CHECK(second[1].job() == "z2");
  CHECK(a.claim_next_many_across(list, "w", 60s, 5).empty());
  CHECK_THROWS_AS(a.claim_next_many_across({"x", "nope"}, "w", 60s, 2), tenure::NotFound);
  CHECK_THROWS_AS(a.claim_next_many_across(list, "w", 60s, SIZE_MAX), tenure::InvalidArgument);
}

TEST_CASE("steering: a requeue with a delay is due after it") {
  const tenure::Authority a = tenure::Authority::open(fresh_db("cpp-requeue-delay"));
  a.create_production("p");
  a.submit("p", tenure::JobSpec("j"));
  CHECK(a.claim("p", "j", "w", 60s).fail("bad input", true) == tenure::JobState::Failed);
  const auto before = std::chrono::system_clock::now();
  a.requeue("p", "j", std::nullopt, 1h);
  const auto after = std::chrono::system_clock::now();
  const tenure::JobView v = a.job("p", "j");
  CHECK(v.state == tenure::JobState::Requested);
  REQUIRE(v.due.has_value());
  CHECK(*v.due >= std::chrono::time_point_cast<std::chrono::microseconds>(before + 1h) - 1s);
  CHECK(*v.due <= std::chrono::time_point_cast<std::chrono::microseconds>(after + 1h) + 1s);
  CHECK_THROWS_AS(a.claim_next("p", "w", 60s), tenure::NoJobAvailable);
  CHECK_THROWS_AS(a.requeue("p", "j"), tenure::JobLive);
}

TEST_CASE("steering: bad input to requeue, checkpoints and claims across throws and changes nothing") {
  const tenure::Authority a = tenure::Authority::open(fresh_db("cpp-steer-bad"));
  a.create_production("p");
  a.submit("p", tenure::JobSpec("j"));
  a.submit("p", tenure::JobSpec("k"));
  CHECK(a.claim("p", "k", "w", 60s).fail("bad input", true) == tenure::JobState::Failed);
  const tenure::Lease l = a.claim("p", "j", "w", 60s);
  const std::size_t events = a.events(0, 10000).size();
  CHECK_THROWS_AS(a.requeue_all("p", 1001), tenure::InvalidArgument);
  CHECK_THROWS_AS(a.requeue_all("p", 10, std::nullopt, -1s), tenure::InvalidDuration);
  CHECK_THROWS_AS(a.requeue("p", "k", std::nullopt, -1s), tenure::InvalidDuration);

  const auto expires = l.expires();
  CHECK_THROWS_AS(l.renew_checkpoint(600s, std::vector<std::uint8_t>(4097, 1)), tenure::InvalidArgument);
  CHECK(l.expires() == expires);
  CHECK(!a.job("p", "j").progress.has_value());

  std::vector<std::string> many;
  for (int i = 0; i < 65; i++) many.push_back("p" + std::to_string(i));
  const std::vector<std::string> dup{"p", "p"};
  const tenure::WaitCancel cancel;
  CHECK_THROWS_AS(a.claim_next_across(dup, "w", 60s), tenure::InvalidArgument);
  CHECK_THROWS_AS(a.claim_next_across(many, "w", 60s), tenure::InvalidArgument);
  CHECK_THROWS_AS(a.claim_next_many_across(dup, "w", 60s, 2), tenure::InvalidArgument);
  CHECK_THROWS_AS(a.claim_next_many_across(many, "w", 60s, 2), tenure::InvalidArgument);
  CHECK_THROWS_AS(a.claim_next_many_across({}, "w", 60s, 2), tenure::InvalidArgument);
  CHECK_THROWS_AS(a.claim_next_many_across({"p"}, "w", 60s, 0), tenure::InvalidArgument);
  CHECK_THROWS_AS(a.claim_next_many_across({"p"}, "w", 60s, 1001), tenure::InvalidArgument);
  CHECK_THROWS_AS(a.claim_next_many_across({"p"}, "", 60s, 1), tenure::InvalidArgument);
  CHECK_THROWS_AS(a.claim_next_many_across({"p"}, "w", 0s, 1), tenure::InvalidDuration);
  CHECK_THROWS_AS(a.claim_next_wait_across(dup, "w", 60s, 1s, cancel), tenure::InvalidArgument);
  CHECK_THROWS_AS(a.claim_next_wait_across(many, "w", 60s, 1s, cancel), tenure::InvalidArgument);
  CHECK_THROWS_AS(a.claim_next_wait_across({}, "w", 60s, 1s, cancel), tenure::InvalidArgument);
  CHECK_THROWS_AS(a.claim_next_wait_across({"p", "nope"}, "w", 60s, 1s, cancel), tenure::NotFound);
  CHECK_THROWS_AS(a.claim_next_wait_across({"p"}, "", 60s, 1s, cancel), tenure::InvalidArgument);
  CHECK_THROWS_AS(a.claim_next_wait_across({"p"}, "w", 0s, 1s, cancel), tenure::InvalidDuration);
  CHECK_THROWS_AS(a.claim_next_wait_across({"p"}, "w", 60s, -1s, cancel), tenure::InvalidDuration);
  CHECK(a.events(0, 10000).size() == events);
  CHECK(a.job("p", "k").state == tenure::JobState::Failed);
}

TEST_CASE("steering: gate calls in an edit that commits are in force after it") {
  const tenure::Authority a = tenure::Authority::open(fresh_db("cpp-gates-commit"));
  a.create_production("p");
  a.create_production("q");
  for (const char* j : {"j1", "j2", "j3"}) a.submit("p", tenure::JobSpec(j));
  a.submit("q", tenure::JobSpec("q1"));
  {
    tenure::Edit e = a.edit();
    CHECK(e.pause_production("q"));
    e.set_concurrency_limit("p", 1);
    e.set_rate_limit("p", 5, 1h, 5);
    e.commit();
  }
  tenure::Gates g = a.gates("p");
  CHECK(g.concurrency_limit == std::optional<std::uint32_t>(1));
  REQUIRE(g.rate_limit);
  CHECK(*g.rate_limit == tenure::RateLimit{5, std::chrono::microseconds(3600000000), 5});
  CHECK(a.gates("q").paused.has_value());
  CHECK_THROWS_AS(a.claim("q", "q1", "w", 60s), tenure::ProductionPaused);
  const tenure::Lease held = a.claim("p", "j1", "w", 60s);
  CHECK_THROWS_AS(a.claim("p", "j2", "w", 60s), tenure::ConcurrencyLimit);
  {
    tenure::Edit e = a.edit();
    CHECK(e.resume_production("q"));
    e.clear_concurrency_limit("p");
    e.clear_rate_limit("p");
    e.commit();
  }
  g = a.gates("p");
  CHECK(!g.concurrency_limit);
  CHECK(!g.rate_limit);
  CHECK(!a.gates("q").paused);
  CHECK(a.claim("q", "q1", "w", 60s).job() == "q1");
  CHECK(a.claim("p", "j2", "w", 60s).job() == "j2");
}
