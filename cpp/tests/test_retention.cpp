// Retention through the C++ projection: delete and export of a production,
// prune steps and the history horizon (HistoryPruned for a reader behind
// it), automatic retention from Options::retention, vacuum, and the
// conversion of std::chrono ages to whole seconds.
#include <doctest/doctest.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support.hpp"

using namespace std::chrono_literals;
using testsupport::fresh_db;

namespace {

tenure::JobSpec job_spec(const std::string& job, const std::string& payload) {
  tenure::JobSpec s(job);
  s.payload(payload.data(), payload.size());
  return s;
}

bool exists(const tenure::Authority& a, const std::string& p, const std::string& j) {
  try {
    a.job(p, j);
    return true;
  } catch (const tenure::NotFound&) {
    return false;
  }
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("retention: ages convert to whole seconds or throw InvalidDuration") {
  tenure::Retention r;
  CHECK(r.event_age_s() == 0);
  r.event_age(std::chrono::hours(24 * 30)).terminal_job_age(90s).tombstone_age(std::chrono::milliseconds(2000));
  CHECK(r.event_age_s() == 2592000);
  CHECK(r.terminal_job_age_s() == 90);
  CHECK(r.tombstone_age_s() == 2);
  CHECK_THROWS_AS(r.event_age(1500ms), tenure::InvalidDuration);
  CHECK_THROWS_AS(r.event_age(0s), tenure::InvalidDuration);
  CHECK_THROWS_AS(r.event_age(-5s), tenure::InvalidDuration);
  CHECK_THROWS_AS(r.event_age(std::chrono::nanoseconds(1)), tenure::InvalidDuration);
  CHECK(r.event_age_s() == 2592000);  // a refused age leaves the policy as it was
  // The upper bound (3650 days) is the core's, through the C ABI.
  const auto a = tenure::Authority::open(fresh_db("retention-bounds"));
  tenure::Retention too_old;
  too_old.event_age(std::chrono::hours(24 * 3650) + 1s);
  CHECK_THROWS_AS(a.prune(too_old), tenure::InvalidDuration);
  CHECK_THROWS_AS(tenure::Authority::open(fresh_db("retention-bounds-2"), tenure::Options().retention(too_old)),
                  tenure::InvalidDuration);
}

TEST_CASE("retention: delete a finished production, refused while one is live; export first") {
  const auto a = tenure::Authority::open(fresh_db("retention-delete"));
  a.create_production("done");
  a.create_production("live");
  a.submit("done", job_spec("a", "make all"));
  a.submit("done", job_spec("b", "b"));
  a.submit("live", job_spec("c", "c"));
  a.claim("done", "a", "w", 60s).complete({{"artifact", "build.tar"}});
  a.cancel("done", "b");

  const auto before = a.events(0, 10000).size();
  CHECK_THROWS_AS(a.delete_production("live"), tenure::ProductionLive);
  try {
    a.delete_production("live");
  } catch (const tenure::Error& e) {
    CHECK(e.status() == TENURE_PRODUCTION_LIVE);
  }
  CHECK(a.events(0, 10000).size() == before);
  CHECK(exists(a, "live", "c"));
  CHECK_THROWS_AS(a.delete_production("nope"), tenure::NotFound);

  std::vector<std::string> lines;
  const std::uint64_t n = a.export_production("done", [&](std::string_view line) { lines.emplace_back(line); });
  CHECK(n == lines.size());
  REQUIRE(lines.size() >= 1 + 2 + 1 + 5);
  CHECK(contains(lines[0], "\"record\":\"production\""));
  CHECK(contains(lines[1], "\"job\":\"a\""));
  CHECK(contains(lines[1], "\"payload_base64\":\"bWFrZSBhbGw=\""));
  CHECK(contains(lines[1], "\"due_us\":null,\"expires_us\":"));
  CHECK(contains(lines[1], "\"max_hold_us\":null,"));
  CHECK(contains(lines[2], "\"job\":\"b\""));
  CHECK(contains(lines[3], "\"record\":\"fact\""));
  CHECK(contains(lines.back(), "\"record\":\"event\""));
  for (const auto& l : lines) CHECK(l.find('\n') == std::string::npos);

  // an exception from the sink stops the export and comes back out
  int calls = 0;
  CHECK_THROWS_WITH_AS(a.export_production("done",
                                           [&](std::string_view) {
                                             if (++calls == 2) throw std::runtime_error("disk full");
                                           }),
                       "disk full", std::runtime_error);
  CHECK(calls == 2);
  CHECK_THROWS_AS(a.export_production("nope", [](std::string_view) {}), tenure::NotFound);

  const tenure::DeletedCounts d = a.delete_production("done");
  CHECK(d.jobs == 2);
  CHECK(d.facts >= 1);
  CHECK(d.events >= 5);
  CHECK(d.tombstones == 0);
  CHECK_FALSE(exists(a, "done", "a"));
  CHECK(a.productions().size() == 1);
  CHECK(a.check_store() == 0);
}

TEST_CASE("retention: prune steps, the history horizon and tombstones") {
  const auto a = tenure::Authority::open(fresh_db("retention-prune"));
  CHECK(a.history_horizon() == 0);
  a.create_production("p");
  a.submit("p", job_spec("a", "A"));
  a.submit("p", job_spec("live", "L"));
  a.claim("p", "a", "w", 60s).complete();
  const tenure::Lease held = a.claim("p", "live", "w", 60s);

  tenure::Retention policy;
  policy.event_age(1s).terminal_job_age(1s);
  tenure::PruneReport r = a.prune(policy);
  CHECK(r.jobs == 0);
  CHECK(r.events == 0);
  CHECK(r.horizon == 0);

  std::this_thread::sleep_for(1100ms);
  const auto before = a.events(0, 10000).size();
  r = a.prune(policy);
  CHECK(r.jobs == 1);
  CHECK(r.tombstones == 0);
  CHECK(r.events == before - 1);
  CHECK(r.horizon > 0);
  CHECK_FALSE(r.more);
  CHECK(a.history_horizon() == r.horizon);
  held.renew(60s);  // the live lease is untouched

  CHECK_THROWS_AS(a.events(0), tenure::HistoryPruned);
  try {
    a.production_events("p", r.horizon - 1);
    CHECK(false);
  } catch (const tenure::HistoryPruned& e) {
    CHECK(e.status() == TENURE_HISTORY_PRUNED);
    CHECK(contains(e.what(), std::to_string(r.horizon)));
  }
  const auto rest = a.events(a.history_horizon());
  REQUIRE(rest.size() == 2);
  CHECK(rest[0].seq == r.horizon + 1);

  CHECK(a.submit("p", job_spec("a", "A")) == tenure::SubmitOutcome::Existing);
  CHECK_THROWS_AS(a.submit("p", job_spec("a", "other")), tenure::Conflict);
  CHECK(a.check_store() == 0);
  if (!testsupport::skip_on_postgres("vacuum is a no-op there")) a.vacuum();
  held.release();
}

TEST_CASE("retention: Options::retention prunes inside the handle's traffic") {
  const std::string db = fresh_db("retention-auto");
  tenure::Retention policy;
  policy.event_age(1s).terminal_job_age(1s);
  const auto plain = tenure::Authority::open(db);
  const auto a = tenure::Authority::open(db, tenure::Options().retention(policy));
  plain.create_production("p");
  plain.submit("p", job_spec("old", "x"));
  plain.cancel("p", "old");
  std::this_thread::sleep_for(1100ms);
  for (int i = 0; i < 64; ++i) plain.submit("p", job_spec("plain-" + std::to_string(i), "x"));
  CHECK(plain.history_horizon() == 0);
  CHECK(exists(plain, "p", "old"));
  for (int i = 0; i < 64; ++i) a.submit("p", job_spec("auto-" + std::to_string(i), "x"));
  CHECK(plain.history_horizon() > 0);
  CHECK_FALSE(exists(plain, "p", "old"));
  CHECK(exists(plain, "p", "auto-63"));
}
