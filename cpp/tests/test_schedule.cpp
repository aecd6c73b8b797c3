// Scheduling, back-off and hold limits through the C++ projection (ABI
// 1.1): JobSpec::not_before / max_hold / backoff, Lease and Edit
// fail_retry_after, set_production_backoff (set and clear), the view
// fields, HoldLimit, bad durations (nothing submitted or changed), and the
// tenure::Worker applying a Retry's delay.
#include <doctest/doctest.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "support.hpp"

using namespace std::chrono_literals;
using testsupport::fresh_db;
using testsupport::Reports;

namespace {

tenure::Authority store(const char* name) {
  tenure::Authority a = tenure::Authority::open(fresh_db(name));
  a.create_production("p");
  return a;
}

std::size_t event_count(const tenure::Authority& a) { return a.events(0, 10000).size(); }

tenure::time_point now(const tenure::Authority& a) {
  const tenure::ClockReading c = a.clock();
  return c.now > c.mark ? c.now : c.mark;
}

std::optional<tenure::Backoff> production_backoff(const tenure::Authority& a, const std::string& p) {
  for (const tenure::ProductionView& v : a.productions())
    if (v.name == p) return v.backoff;
  return std::nullopt;
}

}  // namespace

TEST_CASE("schedule: a delayed job is not claimable until due; views show due, hold limit and back-off") {
  const tenure::Authority a = store("cpp-sched-delay");
  const auto before = now(a);
  a.submit("p", tenure::JobSpec("later").not_before(1500ms).max_hold(30s).backoff(tenure::Backoff(1s, 1min)));
  const auto after = now(a);
  const tenure::JobView v = a.job("p", "later");
  REQUIRE(v.due.has_value());
  CHECK(*v.due == v.created + 1500ms);
  CHECK(*v.due >= before + 1500ms);
  CHECK(*v.due <= after + 1500ms);
  CHECK(v.max_hold == std::optional<std::chrono::microseconds>(30s));
  CHECK(v.backoff == std::optional<tenure::Backoff>(tenure::Backoff(1s, 60s)));
  CHECK_THROWS_AS(a.claim("p", "later", "w", 60s), tenure::NotClaimable);
  CHECK_THROWS_AS(a.claim_next("p", "w", 60s), tenure::NoJobAvailable);
  const tenure::WaitCancel cancel;
  const tenure::Lease l = a.claim_next_wait("p", "w", 60s, 10s, cancel);
  CHECK(l.job() == "later");
  // claimed for 60 s with a 30 s hold limit: capped at claim time + 30 s
  CHECK(l.expires() >= *v.due + 30s);
  CHECK(l.expires() <= now(a) + 30s);
  CHECK_FALSE(a.job("p", "later").due.has_value());

  // the delay is not content; the hold limit and the back-off are
  CHECK(a.submit("p", tenure::JobSpec("later").max_hold(30s).backoff(tenure::Backoff(1s, 1min))) ==
        tenure::SubmitOutcome::Existing);
  CHECK_THROWS_AS(a.submit("p", tenure::JobSpec("later").max_hold(31s).backoff(tenure::Backoff(1s, 1min))),
                  tenure::Conflict);
  CHECK_THROWS_AS(a.submit("p", tenure::JobSpec("later")), tenure::Conflict);

  // zero and none: at once
  a.submit("p", tenure::JobSpec("zero").not_before(0s));
  a.submit("p", tenure::JobSpec("plain"));
  CHECK_FALSE(a.job("p", "plain").due.has_value());
  CHECK_FALSE(a.job("p", "plain").max_hold.has_value());
  CHECK_FALSE(a.job("p", "plain").backoff.has_value());
  CHECK(a.claim("p", "zero", "w", 60s).job() == "zero");
  CHECK(a.claim("p", "plain", "w", 60s).job() == "plain");
}

TEST_CASE("schedule: fail_retry_after parks the job for its delay; zero is at once; in an edit too") {
  const tenure::Authority a = store("cpp-sched-retry");
  a.set_production_backoff("p", tenure::Backoff(1h, 1h));
  a.submit("p", tenure::JobSpec("j").max_attempts(5));
  {
    const tenure::Lease l = a.claim("p", "j", "w", 60s);
    const auto before = now(a);
    CHECK(l.fail_retry_after("later", 1500ms) == tenure::JobState::Requested);
    const auto after = now(a);
    CHECK(l.status() == tenure::LeaseStatus::Closed);
    const tenure::JobView v = a.job("p", "j");
    REQUIRE(v.due.has_value());
    CHECK(*v.due >= before + 1500ms);
    CHECK(*v.due <= after + 1500ms);
    CHECK(v.last_error == std::optional<std::string>("later"));
    CHECK_THROWS_AS(a.claim("p", "j", "w", 60s), tenure::NotClaimable);
  }
  const tenure::WaitCancel cancel;
  const tenure::Lease again = a.claim_next_wait("p", "w", 60s, 10s, cancel);
  CHECK(again.attempt() == 2);
  // zero: at once, whatever back-off the production has
  CHECK(again.fail_retry_after("now", 0s) == tenure::JobState::Requested);
  CHECK_FALSE(a.job("p", "j").due.has_value());
  const tenure::Lease third = a.claim("p", "j", "w", 60s);
  {
    tenure::Edit e = a.edit();
    CHECK(e.fail_retry_after(third, "edit", 1h) == tenure::JobState::Requested);
    e.commit();
  }
  CHECK(third.status() == tenure::LeaseStatus::Closed);
  REQUIRE(a.job("p", "j").due.has_value());
  CHECK(*a.job("p", "j").due > now(a) + 59min);
}

TEST_CASE("schedule: a production's back-off applies when no delay is named; the job's own overrides it") {
  const tenure::Authority a = store("cpp-sched-backoff");
  CHECK_FALSE(production_backoff(a, "p").has_value());
  a.set_production_backoff("p", tenure::Backoff(10s, 25s));
  CHECK(production_backoff(a, "p") == std::optional<tenure::Backoff>(tenure::Backoff(10s, 25s)));
  a.submit("p", tenure::JobSpec("j"));
  a.submit("p", tenure::JobSpec("own").backoff(tenure::Backoff(100s, 100s)));
  for (const char* job : {"j", "own"}) {
    const tenure::Lease l = a.claim("p", job, "w", 60s);
    const auto before = now(a);
    CHECK(l.fail("r") == tenure::JobState::Requested);
    const auto after = now(a);
    const std::chrono::seconds step = std::string(job) == "j" ? 10s : 100s;
    const tenure::JobView v = a.job("p", job);
    REQUIRE(v.due.has_value());
    CHECK(*v.due >= before + step);
    CHECK(*v.due <= after + step);
  }
  // a permanent failure and a release never delay; cleared (in an edit): at once
  a.submit("p", tenure::JobSpec("rel"));
  CHECK(a.claim("p", "rel", "w", 60s).release() == tenure::JobState::Requested);
  CHECK_FALSE(a.job("p", "rel").due.has_value());
  {
    tenure::Edit e = a.edit();
    e.set_production_backoff("p", std::nullopt);
    e.commit();
  }
  CHECK_FALSE(production_backoff(a, "p").has_value());
  CHECK(a.claim("p", "rel", "w", 60s).fail("r") == tenure::JobState::Requested);
  CHECK_FALSE(a.job("p", "rel").due.has_value());
  CHECK_THROWS_AS(a.set_production_backoff("nope", tenure::Backoff(1s, 1s)), tenure::NotFound);
}

TEST_CASE("schedule: the hold limit caps claims and renewals; a renewal it stops throws HoldLimit") {
  const tenure::Authority a = store("cpp-sched-hold");
  a.submit("p", tenure::JobSpec("capped").max_hold(3s));
  a.submit("p", tenure::JobSpec("short").max_hold(3s));
  const auto before = now(a);
  const tenure::Lease l = a.claim("p", "capped", "w", 60s);
  const auto after = now(a);
  CHECK(l.expires() >= before + 3s);
  CHECK(l.expires() <= after + 3s);
  const auto exp = l.expires();
  const std::size_t events = event_count(a);
  CHECK_THROWS_AS(l.renew(60s), tenure::HoldLimit);
  try {
    l.renew(60s);
  } catch (const tenure::Error& e) {
    CHECK(e.status() == TENURE_HOLD_LIMIT);
    CHECK(std::string(e.name()) == "hold_limit");
  }
  CHECK(l.expires() == exp);
  CHECK(event_count(a) == events);
  CHECK(l.status() == tenure::LeaseStatus::Active);

  const tenure::Lease s = a.claim("p", "short", "w", 1s);
  const auto claimed_at = s.expires() - 1s;
  s.renew(60s);  // shortened to claim time + 3 s
  CHECK(s.expires() == claimed_at + 3s);
  CHECK_THROWS_AS(s.renew(60s), tenure::HoldLimit);
  CHECK(s.expires() == claimed_at + 3s);
}

TEST_CASE("schedule: bad durations throw InvalidDuration and change nothing") {
  const tenure::Authority a = store("cpp-sched-bad");
  const std::size_t events = event_count(a);
  const auto days = [](std::int64_t n) { return std::chrono::hours(24 * n); };
  CHECK_THROWS_AS(a.submit("p", tenure::JobSpec("j").not_before(-1s)), tenure::InvalidDuration);
  CHECK_THROWS_AS(a.submit("p", tenure::JobSpec("j").not_before(days(366) + 1us)), tenure::InvalidDuration);
  CHECK_THROWS_AS(a.submit("p", tenure::JobSpec("j").max_hold(0s)), tenure::InvalidDuration);
  CHECK_THROWS_AS(a.submit("p", tenure::JobSpec("j").max_hold(days(367))), tenure::InvalidDuration);
  CHECK_THROWS_AS(a.submit("p", tenure::JobSpec("j").backoff(tenure::Backoff(2s, 1s))), tenure::InvalidDuration);
  CHECK_THROWS_AS(a.submit("p", tenure::JobSpec("j").backoff(tenure::Backoff(0s, 1s))), tenure::InvalidDuration);
  // not a whole number of µs: refused before any call
  CHECK_THROWS_AS(tenure::JobSpec("j").not_before(std::chrono::nanoseconds(1500)), tenure::InvalidDuration);
  CHECK_THROWS_AS(tenure::Backoff(std::chrono::nanoseconds(1500), 1s), tenure::InvalidDuration);
  CHECK_THROWS_AS(a.job("p", "j"), tenure::NotFound);
  CHECK_THROWS_AS(a.set_production_backoff("p", tenure::Backoff(2s, 1s)), tenure::InvalidDuration);
  CHECK_THROWS_AS(a.set_production_backoff("p", tenure::Backoff(1s, days(367))), tenure::InvalidDuration);
  CHECK_FALSE(production_backoff(a, "p").has_value());
  a.submit("p", tenure::JobSpec("k"));
  const tenure::Lease l = a.claim("p", "k", "w", 60s);
  const std::size_t events_after_claim = event_count(a);
  CHECK_THROWS_AS(l.fail_retry_after("r", -1us), tenure::InvalidDuration);
  CHECK_THROWS_AS(l.fail_retry_after("r", days(367)), tenure::InvalidDuration);
  CHECK_THROWS_AS(l.fail_retry_after("r", std::chrono::nanoseconds(1)), tenure::InvalidDuration);
  CHECK(l.status() == tenure::LeaseStatus::Active);
  CHECK(a.job("p", "k").state == tenure::JobState::Claimed);
  CHECK(event_count(a) == events_after_claim);
  CHECK(events_after_claim == events + 2);  // the submit and the claim only
}

TEST_CASE("worker: a Retry with a delay makes the job due after it; a bad delay is reported") {
  const tenure::Authority a = store("cpp-sched-worker");
  a.submit("p", tenure::JobSpec("later").max_attempts(3));
  a.submit("p", tenure::JobSpec("bad").max_attempts(3));
  a.submit("p", tenure::JobSpec("backoff").max_attempts(3).backoff(tenure::Backoff(1h, 1h)));
  Reports reports;
  const auto before = now(a);
  {
    tenure::Worker w(
        a, tenure::WorkerConfig("p", "cpp-worker", 10s).slots(1).wait_timeout(200ms),
        [&](const tenure::JobContext& job) -> tenure::JobOutcome {
          if (job.job() == "later") return tenure::Retry{"later", 1h};
          if (job.job() == "bad") return tenure::Retry{"bad", std::chrono::hours(24 * 367)};
          return tenure::Retry{"no delay"};  // the job's back-off applies
        },
        [&](const tenure::Report& r) { reports.add(r); });
    for (int i = 0; i < 1000 && reports.size() < 3; ++i) std::this_thread::sleep_for(10ms);
    w.stop();
    w.join();
  }
  const auto after = now(a);
  REQUIRE(reports.all.size() == 3);
  for (const tenure::Report& r : reports.all) {
    if (r.job == "bad") {
      CHECK(r.result == tenure::JobResult::Lost);
      REQUIRE(r.error.has_value());
      CHECK(r.error->status() == TENURE_INVALID_DURATION);
      CHECK(a.job("p", "bad").state == tenure::JobState::Claimed);  // held until it expires
    } else {
      CHECK(r.result == tenure::JobResult::Failed);
      CHECK(r.state == tenure::JobState::Requested);
      const tenure::JobView v = a.job("p", r.job);
      REQUIRE(v.due.has_value());
      CHECK(*v.due >= before + 1h);
      CHECK(*v.due <= after + 1h);
    }
  }
  CHECK(a.job("p", "later").last_error == std::optional<std::string>("later"));
  CHECK(a.job("p", "later").attempts == 1);  // not claimed again: it is parked
}
