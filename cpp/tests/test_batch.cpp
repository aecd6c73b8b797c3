// The batched calls through the C++ projection: claim_next_many and the
// many-lease transitions on an Authority (one Outcome per lease, no
// exception for a refused lease) and in an Edit (all or nothing).
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "support.hpp"

using namespace std::chrono_literals;
using testsupport::fresh_db;

namespace {

tenure::JobSpec spec(const std::string& job) { return tenure::JobSpec(job); }

std::size_t event_count(const tenure::Authority& a) { return a.events(0, 10000).size(); }

}  // namespace

TEST_CASE("batch: claim_next_many takes up to n in claim-next order; none is not an error") {
  const auto a = tenure::Authority::open(fresh_db("batch-claim"));
  a.create_production("p");
  CHECK(a.claim_next_many("p", "w", 30s, 4).empty());
  for (int i = 0; i < 5; ++i) a.submit("p", spec("j" + std::to_string(i)));
  const std::vector<tenure::Lease> first = a.claim_next_many("p", "w", 30s, 3);
  REQUIRE(first.size() == 3);
  CHECK(first[0].job() == "j0");
  CHECK(first[2].job() == "j2");
  CHECK(first[0].claim_id() != first[1].claim_id());
  const std::vector<tenure::Lease> rest = a.claim_next_many("p", "w", 30s, 10);
  CHECK(rest.size() == 2);
  CHECK_THROWS_AS(a.claim_next_many("p", "w", 30s, 0), tenure::InvalidArgument);
  CHECK_THROWS_AS(a.claim_next_many("p", "w", 30s, 1001), tenure::InvalidArgument);
  // An absurd size is the batch-size error too, not an allocation of it.
  CHECK_THROWS_AS(a.claim_next_many("p", "w", 30s, SIZE_MAX), tenure::InvalidArgument);
  CHECK_THROWS_AS(a.claim_next_many("p", "w", 0s, 1), tenure::InvalidDuration);

  const std::vector<tenure::Outcome> done = a.complete_many(
      {{first[0], {{"artifact", "zero"}}}, {first[1]}, {first[2]}, {rest[0]}, {rest[1], {{"k", "v"}}}});
  REQUIRE(done.size() == 5);
  for (const auto& o : done) CHECK(o.ok());
  CHECK(a.job("p", "j4").state == tenure::JobState::Completed);
  bool found = false;
  for (const auto& f : a.facts("p", "j0")) found = found || (f.key == "artifact" && f.value == "zero");
  CHECK(found);
}

TEST_CASE("batch: a mixed batch gives each lease its own outcome and changes only the accepted") {
  const std::string db = fresh_db("batch-mixed");
  const auto a = tenure::Authority::open(db);
  const auto other = tenure::Authority::open(db);
  a.create_production("p");
  for (const char* j : {"good", "expired", "cancelled", "closed", "foreign", "stale", "good2"}) a.submit("p", spec(j));
  const tenure::Lease expired = a.claim("p", "expired", "w", 1s);
  const tenure::Lease good = a.claim("p", "good", "w", 60s);
  const tenure::Lease good2 = a.claim("p", "good2", "w", 60s);
  const tenure::Lease cancelled = a.claim("p", "cancelled", "w", 60s);
  a.cancel("p", "cancelled");
  const tenure::Lease closed = a.claim("p", "closed", "w", 60s);
  closed.complete();
  const tenure::Lease foreign = other.claim("p", "foreign", "w", 60s);
  const tenure::Lease stale = a.claim("p", "stale", "w", 60s);
  a.import_lease(stale.export_token()).release();
  const tenure::Lease current = a.claim("p", "stale", "w", 60s);
  std::this_thread::sleep_for(1500ms);

  const std::size_t before = event_count(a);
  const std::vector<tenure::Outcome> out =
      a.release_many({good, stale, expired, cancelled, closed, foreign, good, good2});
  REQUIRE(out.size() == 8);
  CHECK(out[0].ok());
  CHECK(out[0].state == tenure::JobState::Requested);
  CHECK(out[1].status == TENURE_STALE_LEASE);
  CHECK(out[1].name() == "stale_lease");
  CHECK(out[1].state == tenure::JobState::Any);
  CHECK(out[2].status == TENURE_LEASE_EXPIRED);
  CHECK(out[3].status == TENURE_CANCELLED);
  CHECK(out[4].status == TENURE_LEASE_CLOSED);
  CHECK(out[5].status == TENURE_INVALID_ARGUMENT);  // another handle's lease
  CHECK(out[6].status == TENURE_INVALID_ARGUMENT);  // the same lease twice
  CHECK(out[7].ok());
  CHECK_THROWS_AS(out[1].raise(), tenure::StaleLease);
  CHECK_NOTHROW(out[0].raise());
  CHECK(event_count(a) == before + 2);
  CHECK(a.job("p", "stale").state == tenure::JobState::Claimed);
  CHECK(a.job("p", "foreign").state == tenure::JobState::Claimed);
  CHECK(a.job("p", "cancelled").state == tenure::JobState::Cancelled);
  CHECK(foreign.status() == tenure::LeaseStatus::Active);
  CHECK(good.status() == tenure::LeaseStatus::Closed);

  // fail_many and renew_many on what is left, with per-lease outcomes
  // two leases of one job (current, stale): the second is refused
  const std::vector<tenure::Outcome> renewed = a.renew_many({current, stale, foreign}, 120s);
  CHECK(renewed[0].ok());
  CHECK(renewed[1].status == TENURE_INVALID_ARGUMENT);
  CHECK(renewed[2].status == TENURE_INVALID_ARGUMENT);
  CHECK(a.renew_many({stale}, 120s)[0].status == TENURE_STALE_LEASE);
  const std::vector<tenure::Outcome> failed = a.fail_many({{current, "gave up", true}, {current, "again"}});
  CHECK(failed[0].ok());
  CHECK(failed[0].state == tenure::JobState::Failed);
  CHECK(failed[1].status == TENURE_INVALID_ARGUMENT);
  CHECK(a.fail_many({{stale, "x"}})[0].status == TENURE_STALE_LEASE);
  CHECK(a.job("p", "stale").state == tenure::JobState::Failed);
  CHECK(other.fail_many({{foreign, "retry"}})[0].state == tenure::JobState::Requested);
  CHECK_THROWS_AS(a.release_many({}), tenure::InvalidArgument);
}

TEST_CASE("batch: in an edit a batch is all or nothing") {
  const auto a = tenure::Authority::open(fresh_db("batch-edit"));
  a.create_production("p");
  for (const char* j : {"e0", "e1", "e2"}) a.submit("p", spec(j));
  std::vector<tenure::Lease> l;
  {
    tenure::Edit e = a.edit();
    l = e.claim_next_many("p", "w", 60s, 3);
    REQUIRE(l.size() == 3);
    CHECK(l[0].status() == tenure::LeaseStatus::Pending);
    e.commit();
  }
  CHECK(l[2].status() == tenure::LeaseStatus::Active);
  const std::size_t before = event_count(a);
  tenure::Edit e = a.edit();
  CHECK_THROWS_AS(e.complete_many({{l[0]}, {l[1]}, {l[0]}}), tenure::InvalidArgument);
  CHECK_THROWS_AS(e.fail_many({{l[0], "x"}, {l[0], "y"}}), tenure::InvalidArgument);
  const std::vector<tenure::Outcome> r = e.release_many(tenure::refs(l));
  CHECK(r.size() == 3);
  CHECK(r[1].ok());
  CHECK(r[1].state == tenure::JobState::Requested);
  CHECK(l[1].status() == tenure::LeaseStatus::Active);  // until the commit
  e.commit();
  CHECK(l[1].status() == tenure::LeaseStatus::Closed);
  CHECK(event_count(a) == before + 3);
  tenure::Edit e2 = a.edit();
  CHECK_THROWS_AS(e2.renew_many(tenure::refs(l), 30s), tenure::LeaseClosed);
  e2.commit();
  CHECK(event_count(a) == before + 3);
}
