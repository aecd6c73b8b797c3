// Duration conversions: table-driven, accepted and rejected, through
// `to_micros` and through real claims (the range check is the core's).
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <ratio>
#include <string>
#include <vector>

#include "support.hpp"

namespace {

using namespace std::chrono;
using i64 = std::int64_t;
using u64 = std::uint64_t;
constexpr i64 kMax = std::numeric_limits<i64>::max();
constexpr i64 kMin = std::numeric_limits<i64>::min();
constexpr i64 kDay = 86'400'000'000;  // 24 h in µs

enum class Outcome {
  Accepted,     // exact µs; the core accepts it as a lease duration
  CoreRejects,  // exact µs, but out of range: the C call rejects it
  NotWhole,     // not a whole number of µs: C++ throws, calls nothing
  Overflow,     // does not fit int64_t µs: C++ throws, calls nothing
};

struct Row {
  const char* expr;
  std::function<i64()> convert;
  std::function<tenure::Lease(const tenure::Authority&, const std::string&)> claim;
  Outcome outcome;
  i64 micros;  // expected conversion for Accepted / CoreRejects
};

#define ROW(EXPR, OUTCOME, MICROS)                                                                    \
  Row {                                                                                               \
    #EXPR, [] { return tenure::to_micros(EXPR); },                                                    \
        [](const tenure::Authority& a, const std::string& job) { return a.claim("dur", job, "w", EXPR); }, \
        OUTCOME, MICROS                                                                               \
  }

using third = duration<int, std::ratio<1, 3>>;
using two_thirds = duration<long long, std::ratio<2, 3>>;
using sevenths = duration<short, std::ratio<1, 7>>;
using days24 = duration<int, std::ratio<86400>>;
using weird = duration<i64, std::ratio<7, 1'000'000'000>>;  // 7 ns ticks
using exa_t = duration<int, std::exa>;
using atto_t = duration<i64, std::atto>;
using u_nano = duration<u64, std::nano>;
using u_micro = duration<u64, std::micro>;
using u8_sec = duration<unsigned char>;
using i16_ms = duration<std::int16_t, std::milli>;
using centi_t = duration<unsigned, std::centi>;

std::vector<Row> rows() {
  return {
      // each standard period
      ROW(hours(1), Outcome::Accepted, 3'600'000'000),
      ROW(minutes(5), Outcome::Accepted, 300'000'000),
      ROW(seconds(30), Outcome::Accepted, 30'000'000),
      ROW(milliseconds(250), Outcome::Accepted, 250'000),
      ROW(microseconds(1500), Outcome::Accepted, 1500),
      ROW(microseconds(1), Outcome::Accepted, 1),
      ROW(nanoseconds(1000), Outcome::Accepted, 1),
      ROW(nanoseconds(2'500'000), Outcome::Accepted, 2500),
      ROW(nanoseconds(1500), Outcome::NotWhole, 0),
      ROW(nanoseconds(999), Outcome::NotWhole, 0),
      ROW(nanoseconds(1), Outcome::NotWhole, 0),
      ROW(centi_t(7), Outcome::Accepted, 70'000),
      ROW(u8_sec(255), Outcome::Accepted, 255'000'000),
      ROW(i16_ms(32767), Outcome::Accepted, 32'767'000),
      // odd ratios
      ROW(third(3), Outcome::Accepted, 1'000'000),
      ROW(third(1), Outcome::NotWhole, 0),
      ROW(third(2), Outcome::NotWhole, 0),
      ROW(third(-3), Outcome::CoreRejects, -1'000'000),
      ROW(two_thirds(3), Outcome::Accepted, 2'000'000),
      ROW(two_thirds(4), Outcome::NotWhole, 0),
      ROW(sevenths(14), Outcome::Accepted, 2'000'000),
      ROW(sevenths(1), Outcome::NotWhole, 0),
      ROW(weird(1000), Outcome::Accepted, 7),
      ROW(weird(1001), Outcome::NotWhole, 0),
      ROW(atto_t(1'000'000'000'000), Outcome::Accepted, 1),
      ROW(atto_t(999'999'999'999), Outcome::NotWhole, 0),
      ROW(exa_t(0), Outcome::CoreRejects, 0),
      ROW(exa_t(1), Outcome::Overflow, 0),
      ROW(days24(1), Outcome::Accepted, kDay),
      ROW(days24(2), Outcome::CoreRejects, 2 * kDay),
      // the 24 h boundary (the core's rule, reached through the C ABI)
      ROW(hours(24), Outcome::Accepted, kDay),
      ROW(microseconds(kDay), Outcome::Accepted, kDay),
      ROW(microseconds(kDay + 1), Outcome::CoreRejects, kDay + 1),
      ROW(nanoseconds(kDay * 1000), Outcome::Accepted, kDay),
      ROW(nanoseconds(kDay * 1000 + 1000), Outcome::CoreRejects, kDay + 1),
      ROW(nanoseconds(kDay * 1000 + 1), Outcome::NotWhole, 0),
      ROW(minutes(24 * 60 + 1), Outcome::CoreRejects, kDay + 60'000'000),
      ROW(hours(25), Outcome::CoreRejects, 25 * 3'600'000'000LL),
      // zero and negative: converted exactly, refused by the core
      ROW(seconds(0), Outcome::CoreRejects, 0),
      ROW(nanoseconds(0), Outcome::CoreRejects, 0),
      ROW(microseconds(-1), Outcome::CoreRejects, -1),
      ROW(seconds(-30), Outcome::CoreRejects, -30'000'000),
      // overflow of int64_t µs on the way
      ROW(hours(2'562'047'788), Outcome::CoreRejects, 2'562'047'788LL * 3'600'000'000LL),
      ROW(hours(2'562'047'789), Outcome::Overflow, 0),
      ROW(hours(-2'562'047'788), Outcome::CoreRejects, -2'562'047'788LL * 3'600'000'000LL),
      ROW(hours(-2'562'047'789), Outcome::Overflow, 0),
      ROW(seconds(kMax), Outcome::Overflow, 0),
      ROW(seconds(kMin), Outcome::Overflow, 0),
      ROW(seconds(kMax / 1'000'000), Outcome::CoreRejects, (kMax / 1'000'000) * 1'000'000),
      ROW(seconds(kMax / 1'000'000 + 1), Outcome::Overflow, 0),
      ROW(microseconds(kMax), Outcome::CoreRejects, kMax),
      ROW(microseconds(kMin), Outcome::CoreRejects, kMin),
      ROW(nanoseconds(kMax), Outcome::NotWhole, 0),
      ROW(nanoseconds(kMin), Outcome::NotWhole, 0),
      ROW(u_micro(std::numeric_limits<u64>::max()), Outcome::Overflow, 0),
      ROW(u_micro(static_cast<u64>(kMax) + 1), Outcome::Overflow, 0),
      ROW(u_micro(static_cast<u64>(kMax)), Outcome::CoreRejects, kMax),
      ROW(u_nano(18'446'744'073'709'551'000ULL), Outcome::CoreRejects, 18'446'744'073'709'551LL),
      ROW(u_nano(18'446'744'073'709'551'615ULL), Outcome::NotWhole, 0),
      ROW(u_nano(9'223'372'036'854'775'000ULL), Outcome::CoreRejects, 9'223'372'036'854'775LL),
  };
}

std::string outcome_name(Outcome o) {
  switch (o) {
    case Outcome::Accepted: return "accepted";
    case Outcome::CoreRejects: return "core rejects";
    case Outcome::NotWhole: return "not whole";
    case Outcome::Overflow: return "overflow";
  }
  return "?";
}

}  // namespace

TEST_CASE("durations: exact conversion to microseconds, table-driven") {
  for (const Row& r : rows()) {
    const std::string expr = r.expr;
    CAPTURE(expr);
    const std::string outcome = outcome_name(r.outcome);
    CAPTURE(outcome);
    switch (r.outcome) {
      case Outcome::Accepted:
      case Outcome::CoreRejects:
        CHECK(r.convert() == r.micros);
        break;
      case Outcome::NotWhole:
        try {
          (void)r.convert();
          FAIL("no exception");
        } catch (const tenure::InvalidDuration& e) {
          CHECK(e.status() == TENURE_INVALID_DURATION);
          CHECK(std::string(e.what()).find("not a whole number of microseconds") != std::string::npos);
        }
        break;
      case Outcome::Overflow:
        try {
          (void)r.convert();
          FAIL("no exception");
        } catch (const tenure::InvalidDuration& e) {
          CHECK(std::string(e.what()).find("overflows int64_t") != std::string::npos);
        }
        break;
    }
  }
}

TEST_CASE("durations: claims through the C ABI; the core owns the range, C++ calls nothing on a bad conversion") {
  const auto a = tenure::Authority::open(testsupport::fresh_db("durations"));
  a.create_production("dur");
  const std::vector<Row> table = rows();
  for (std::size_t i = 0; i < table.size(); ++i) {
    const Row& r = table[i];
    const std::string expr = r.expr;
    CAPTURE(expr);
    const std::string job = "d" + std::to_string(i);
    a.submit("dur", tenure::JobSpec(job));
    // A known failure sets this thread's last C error message; a C call
    // made by the conversion path would replace it.
    CHECK_THROWS_AS(a.job("dur", "no-such-job"), tenure::NotFound);
    const std::string sentinel = tenure::last_error_message();
    REQUIRE(sentinel.find("no-such-job") != std::string::npos);
    switch (r.outcome) {
      case Outcome::Accepted:
        if (r.micros >= 10'000'000) {
          const tenure::Lease l = r.claim(a, job);
          CHECK(l.status() == tenure::LeaseStatus::Active);
          CHECK(l.attempt() == 1);
          CHECK(a.job("dur", job).state == tenure::JobState::Claimed);
        } else {
          // In range, but a TTL this short may pass before the claim
          // commits: the core then refuses it as expired (docs/design.md, Clock),
          // never as an invalid duration.
          try {
            const tenure::Lease l = r.claim(a, job);
            CHECK(l.attempt() == 1);
          } catch (const tenure::LeaseExpired&) {
            CHECK(a.job("dur", job).attempts == 0);
          }
        }
        break;
      case Outcome::CoreRejects:
        try {
          (void)r.claim(a, job);
          FAIL("no exception");
        } catch (const tenure::InvalidDuration& e) {
          // the core's message, through the C ABI
          CHECK(tenure::last_error_message() == e.what());
          CHECK(tenure::last_error_message() != sentinel);
        }
        CHECK(a.job("dur", job).attempts == 0);
        break;
      case Outcome::NotWhole:
      case Outcome::Overflow:
        CHECK_THROWS_AS((void)r.claim(a, job), tenure::InvalidDuration);
        CHECK(tenure::last_error_message() == sentinel);  // nothing was called
        CHECK(a.job("dur", job).attempts == 0);
        break;
    }
  }
}

TEST_CASE("durations: renew, edit claims and busy timeout convert the same way") {
  using namespace std::chrono_literals;
  const auto a = tenure::Authority::open(testsupport::fresh_db("durations-renew"));
  a.create_production("p");
  a.submit("p", tenure::JobSpec("j"));
  a.submit("p", tenure::JobSpec("k"));
  const tenure::Lease l = a.claim("p", "j", "w", 30s);
  CHECK_THROWS_AS(l.renew(nanoseconds(60'000'000'001)), tenure::InvalidDuration);
  CHECK_THROWS_AS(l.renew(hours(25)), tenure::InvalidDuration);
  CHECK_THROWS_AS(l.renew(0s), tenure::InvalidDuration);
  const tenure::time_point before = l.expires();
  l.renew(third(3 * 120));  // 120 s in thirds of a second
  CHECK(l.expires() > before);
  {
    tenure::Edit e = a.edit();
    CHECK_THROWS_AS(e.renew(l, third(1)), tenure::InvalidDuration);
    CHECK_THROWS_AS(e.claim("p", "k", "w", nanoseconds(1)), tenure::InvalidDuration);
    CHECK_THROWS_AS(e.claim_next("p", "w", 24h + 1us), tenure::InvalidDuration);
    const tenure::Lease k = e.claim_next("p", "w", 24h);
    CHECK(k.status() == tenure::LeaseStatus::Pending);
    e.abort();
    CHECK(k.status() == tenure::LeaseStatus::Closed);
  }
  CHECK_THROWS_AS(tenure::Options().busy_timeout(nanoseconds(1)), tenure::InvalidDuration);
  CHECK(tenure::Options().busy_timeout(third(6)).capi().busy_timeout_us == 2'000'000);
  CHECK(tenure::Options().busy_timeout(0ms).capi().busy_timeout_us == 0);
}
