// Schedules through the C++ projection (docs/schedules.md): definitions by
// interval and cron (UTC or a named time zone), create (idempotent; Conflict for another definition),
// pause, resume, update, delete, the listing and the scheduler step, and
// bad definitions thrown as the core's typed errors; the scheduler loop
// (ended by a cancel from another thread) and a Worker that runs it.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "support.hpp"

using namespace std::chrono_literals;
using testsupport::fresh_db;

TEST_CASE("recurring: bad definitions throw typed errors and change nothing") {
  const auto a = tenure::Authority::open(fresh_db("recurring-bad"));
  a.create_production("p");
  CHECK_THROWS_AS(tenure::ScheduleDef::every("s", 0s), tenure::InvalidDuration);
  CHECK_THROWS_AS(tenure::ScheduleDef::every("s", 1500ms), tenure::InvalidDuration);
  // The longest interval is 366 days: one second more is out of range.
  constexpr auto longest = std::chrono::hours(366 * 24);
  CHECK_NOTHROW(tenure::ScheduleDef::every("s", longest));
  CHECK_THROWS_AS(tenure::ScheduleDef::every("s", longest + 1s), tenure::InvalidDuration);
  CHECK_THROWS_AS(tenure::ScheduleDef::every("s", std::chrono::hours(10 * 366 * 24)), tenure::InvalidDuration);
  CHECK_THROWS_AS(tenure::ScheduleDef::cron("s", "61 * * * *"), tenure::InvalidArgument);
  CHECK_THROWS_AS(tenure::ScheduleDef::cron("s", "* * * * * *"), tenure::InvalidArgument);
  CHECK_THROWS_AS(tenure::ScheduleDef::cron("s", "0 2 * * *", "Europe/Nowhere"), tenure::InvalidArgument);
  CHECK_THROWS_AS(tenure::ScheduleDef::cron("s", "0 2 * * *", "europe/paris"), tenure::InvalidArgument);
  CHECK_THROWS_AS(tenure::ScheduleDef::cron("s", "61 * * * *", "Europe/Paris"), tenure::InvalidArgument);
  auto d = tenure::ScheduleDef::every("s", 1s);
  d.catch_up(0);
  CHECK_THROWS_AS(a.create_schedule("p", d), tenure::InvalidArgument);
  d.catch_up(1001);
  CHECK_THROWS_AS(a.create_schedule("p", d), tenure::InvalidArgument);
  d.catch_up(1);
  CHECK_THROWS_AS(a.create_schedule("nope", d), tenure::NotFound);
  CHECK_THROWS_AS(a.pause_schedule("p", "s"), tenure::NotFound);
  CHECK(a.schedules().empty());
}

TEST_CASE("recurring: create, list, pause, resume, update, delete") {
  const auto a = tenure::Authority::open(fresh_db("recurring-crud"));
  a.create_production("p");
  auto d = tenure::ScheduleDef::every("tick", 30s);
  d.payload("go").job(2, 5).catch_up(3, true);
  CHECK(a.create_schedule("p", d));
  CHECK_FALSE(a.create_schedule("p", d));
  d.job(7, 5);
  CHECK_THROWS_AS(a.create_schedule("p", d), tenure::Conflict);
  auto all = a.schedules("p");
  REQUIRE(all.size() == 1);
  CHECK(all[0].name == "tick");
  CHECK(all[0].cadence == "every 30s");
  CHECK(all[0].catch_up == 3);
  CHECK_FALSE(all[0].paused);
  CHECK_FALSE(all[0].last_slot.has_value());
  REQUIRE(all[0].next_slot.has_value());
  CHECK(all[0].next_slot->time_since_epoch().count() % 30000000 == 0);
  CHECK(a.pause_schedule("p", "tick"));
  CHECK_FALSE(a.pause_schedule("p", "tick"));
  CHECK_FALSE(a.schedules()[0].next_slot.has_value());
  CHECK(a.resume_schedule("p", "tick"));
  a.update_schedule("p", tenure::ScheduleDef::cron("tick", "0 2 * * *"));
  CHECK(a.schedules()[0].cadence == "cron 0 2 * * *");
  CHECK_FALSE(a.schedules()[0].tz.has_value());
  a.update_schedule("p", tenure::ScheduleDef::cron("tick", "0 2 * * *", "Europe/Paris"));
  CHECK(a.schedules()[0].cadence == "cron 0 2 * * * Europe/Paris");
  CHECK(a.schedules()[0].tz == std::optional<std::string>("Europe/Paris"));
  CHECK(a.delete_schedule("p", "tick"));
  CHECK_FALSE(a.delete_schedule("p", "tick"));
  CHECK_THROWS_AS(a.update_schedule("p", d), tenure::NotFound);
}

TEST_CASE("recurring: the step enqueues a due slot once") {
  const auto a = tenure::Authority::open(fresh_db("recurring-step"));
  a.create_production("p");
  auto none = a.run_schedules();
  CHECK(none.enqueued == 0);
  CHECK_FALSE(none.next_slot.has_value());
  a.create_schedule("p", tenure::ScheduleDef::every("sec", 1s));
  std::size_t total = 0;
  for (int i = 0; i < 40 && total == 0; ++i) {
    std::this_thread::sleep_for(100ms);
    total += a.run_schedules().enqueued;
  }
  CHECK(total == 1);
  const auto s = a.schedules("p");
  REQUIRE(s.size() == 1);
  REQUIRE(s[0].last_slot.has_value());
  CHECK(s[0].last_slot->time_since_epoch().count() % 1000000 == 0);
}

TEST_CASE("recurring: the scheduler loop enqueues slots until cancelled") {
  const auto a = tenure::Authority::open(fresh_db("recurring-until"));
  a.create_production("p");
  a.create_schedule("p", tenure::ScheduleDef::every("sec", 1s));
  const tenure::WaitCancel cancel;
  std::atomic<std::size_t> enqueued{0};
  std::thread loop([&] {
    a.run_schedules_until(cancel, [&](std::size_t n, std::uint64_t) { enqueued += n; });
  });
  for (int i = 0; i < 600 && enqueued.load() == 0; ++i) std::this_thread::sleep_for(10ms);
  CHECK(enqueued.load() >= 1);
  CHECK(a.jobs("p").size() >= 1);
  cancel.cancel();
  loop.join();
  a.run_schedules_until(cancel);  // cancelled: returns at once
}

TEST_CASE("recurring: a Worker with schedules enqueues and runs the slots") {
  const auto a = tenure::Authority::open(fresh_db("recurring-worker"));
  a.create_production("p");
  a.create_schedule("p", tenure::ScheduleDef::every("sec", 1s));
  std::mutex m;
  std::vector<std::string> ran;
  {
    tenure::Worker w(a, tenure::WorkerConfig("p", "cpp-sched", 10s).wait_timeout(200ms).schedules(true),
                     [&](const tenure::JobContext& job) -> tenure::JobOutcome {
                       const std::lock_guard<std::mutex> lk(m);
                       ran.push_back(job.job());
                       return tenure::Complete{};
                     });
    const auto count = [&] {
      const std::lock_guard<std::mutex> lk(m);
      return ran.size();
    };
    for (int i = 0; i < 1000 && count() < 2; ++i) std::this_thread::sleep_for(10ms);
    w.stop();
    w.join();
  }
  REQUIRE(ran.size() >= 2);
  for (const std::string& j : ran) {
    CHECK(j.rfind("sec@", 0) == 0);
    CHECK(a.job("p", j).state == tenure::JobState::Completed);
  }
}
