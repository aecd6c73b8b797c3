// Idempotent calls through the C++ projection (ABI 1.1; docs/design.md,
// "Idempotent calls"): ClaimRequest, claim_idempotent / claim_next_idempotent /
// claim_next_many_idempotent (on Authority and Edit) returning Applied<...>, the
// lease transitions' _idempotent forms and the batched
// Authority::*_many_idempotent with one Outcome per lease, with a copy of
// the lease that never heard the answer (an imported token) standing for a
// caller retrying after a lost answer.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "support.hpp"

using namespace std::chrono_literals;
using testsupport::fresh_db;

namespace {

std::size_t event_count(const tenure::Authority& a) { return a.events(0, 10000).size(); }

tenure::Lease copy_of(const tenure::Authority& a, const tenure::Lease& l) {
  return a.import_lease(l.export_token());
}

}  // namespace

TEST_CASE("idempotent: a claim retried under its request returns the same lease; conflicts change nothing") {
  tenure::Authority a = tenure::Authority::open(fresh_db("idem-claim"));
  a.create_production("p");
  a.submit("p", tenure::JobSpec("j0"));
  a.submit("p", tenure::JobSpec("j1"));
  const tenure::ClaimRequest r("req-1");
  tenure::Applied<tenure::Lease> first = a.claim_idempotent("p", "j0", "w", 60s, r);
  CHECK(!first.replayed);
  const std::size_t events = event_count(a);
  tenure::Applied<tenure::Lease> again = a.claim_idempotent("p", "j0", "w", 60s, r);
  CHECK(again.replayed);
  CHECK(again.value.claim_id() == first.value.claim_id());
  CHECK(again.value.attempt() == 1);
  CHECK(event_count(a) == events);
  const tenure::ClaimRequest other("req-1");
  CHECK_THROWS_AS(a.claim_idempotent("p", "j0", "w", 60s, other), tenure::Conflict);
  CHECK_THROWS_AS(a.claim_idempotent("p", "j0", "w", 61s, r), tenure::Conflict);
  CHECK_THROWS_AS(a.claim_next_idempotent("p", "w", 60s, r), tenure::Conflict);
  CHECK(event_count(a) == events);
  CHECK_THROWS_AS(tenure::ClaimRequest(""), tenure::InvalidArgument);
  CHECK_THROWS_AS(tenure::ClaimRequest("a/b"), tenure::InvalidArgument);
  const tenure::ClaimRequest n("req-2");
  tenure::Applied<tenure::Lease> n1 = a.claim_next_idempotent("p", "w", 60s, n);
  tenure::Applied<tenure::Lease> n2 = a.claim_next_idempotent("p", "w", 60s, n);
  CHECK((!n1.replayed && n2.replayed && n1.value.job() == "j1" && n2.value.claim_id() == n1.value.claim_id()));
  first.value.release();
  n1.value.release();
}

TEST_CASE("idempotent: transitions retried after they committed are replays; other facts are Conflict") {
  tenure::Authority a = tenure::Authority::open(fresh_db("idem-transitions"));
  a.create_production("p");
  a.submit("p", tenure::JobSpec("j0"));
  a.submit("p", tenure::JobSpec("j1").max_attempts(5));
  const tenure::Lease l = a.claim("p", "j0", "w", 60s);
  const tenure::Lease c = copy_of(a, l);
  const tenure::Lease d = copy_of(a, l);
  l.complete({{"out", "o1"}});
  const std::size_t events = event_count(a);
  CHECK_THROWS_AS(d.complete_idempotent({{"out", "o2"}}), tenure::Conflict);
  CHECK_THROWS_AS(d.complete({{"out", "o1"}}), tenure::LeaseClosed);
  CHECK(c.complete_idempotent({{"out", "o1"}}));
  CHECK(event_count(a) == events);

  const tenure::Lease f = a.claim("p", "j1", "w", 60s);
  const tenure::Lease fc = copy_of(a, f);
  f.fail("boom");
  const tenure::Lease g = a.claim("p", "j1", "w", 60s);
  const tenure::Lease gc = copy_of(a, g);
  g.release();
  const tenure::Applied<tenure::JobState> r = gc.release_idempotent();
  CHECK((r.replayed && r.value == tenure::JobState::Requested));
  CHECK_THROWS_AS(fc.fail_idempotent("boom"), tenure::StaleLease);
  const tenure::Lease h = a.claim("p", "j1", "w", 60s);
  const tenure::Applied<tenure::time_point> e = h.renew_idempotent(120s);
  CHECK((!e.replayed && e.value == h.expires()));
  h.release();
}

TEST_CASE("idempotent: a failure with a retry delay replays with the same reason and delay only") {
  tenure::Authority a = tenure::Authority::open(fresh_db("idem-retry-after"));
  a.create_production("p");
  a.submit("p", tenure::JobSpec("j").max_attempts(5));
  const tenure::Lease l = a.claim("p", "j", "w", 60s);
  const tenure::Lease c = copy_of(a, l);
  CHECK_THROWS_AS(l.fail_retry_after_idempotent("later", std::chrono::nanoseconds(1500)), tenure::InvalidDuration);
  CHECK_THROWS_AS(l.fail_retry_after_idempotent("later", -1s), tenure::InvalidDuration);
  CHECK(a.job("p", "j").state == tenure::JobState::Claimed);
  const tenure::Applied<tenure::JobState> first = l.fail_retry_after_idempotent("later", 30s);
  CHECK((!first.replayed && first.value == tenure::JobState::Requested));
  const tenure::JobView v = a.job("p", "j");
  REQUIRE(v.due.has_value());
  CHECK(*v.due == v.updated + 30s);
  const std::size_t events = event_count(a);
  // refusals leave the copy usable; the replay closes it
  CHECK_THROWS_AS(c.fail_retry_after_idempotent("later", 31s), tenure::Conflict);
  CHECK_THROWS_AS(c.fail_retry_after_idempotent("other", 30s), tenure::Conflict);
  CHECK_THROWS_AS(c.fail_idempotent("later", true), tenure::Conflict);
  CHECK_THROWS_AS(c.fail_retry_after("later", 30s), tenure::LeaseClosed);
  const tenure::Applied<tenure::JobState> again = c.fail_retry_after_idempotent("later", 30s);
  CHECK((again.replayed && again.value == tenure::JobState::Requested));
  CHECK(c.status() == tenure::LeaseStatus::Closed);
  CHECK(event_count(a) == events);
  CHECK(a.job("p", "j").due == v.due);
}

TEST_CASE("idempotent: claim_next_many_idempotent replays every member; one no longer current gets its own status") {
  tenure::Authority a = tenure::Authority::open(fresh_db("idem-claim-many"));
  a.create_production("p");
  const tenure::ClaimRequest r("batch-1");
  tenure::Applied<std::vector<tenure::Claimed>> none = a.claim_next_many_idempotent("p", "w", 60s, 3, r);
  CHECK((!none.replayed && none.value.empty()));
  for (const char* j : {"j0", "j1", "j2", "j3"}) a.submit("p", tenure::JobSpec(j));
  const tenure::Applied<std::vector<tenure::Claimed>> first = a.claim_next_many_idempotent("p", "w", 60s, 3, r);
  CHECK(!first.replayed);  // the request ID stayed unused when nothing was claimable
  REQUIRE(first.value.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(first.value[i].ok());
    CHECK(!first.value[i].replayed);
    CHECK(first.value[i].lease.job() == "j" + std::to_string(i));
    CHECK(first.value[i].lease.attempt() == 1);
  }
  CHECK(first.value[0].lease.claim_id() != first.value[1].lease.claim_id());
  const std::size_t events = event_count(a);

  const tenure::Applied<std::vector<tenure::Claimed>> again = a.claim_next_many_idempotent("p", "w", 60s, 3, r);
  CHECK(again.replayed);
  REQUIRE(again.value.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK((again.value[i].ok() && again.value[i].replayed));
    CHECK(again.value[i].lease.claim_id() == first.value[i].lease.claim_id());
    CHECK(again.value[i].lease.attempt() == 1);
    CHECK(again.value[i].lease.expires() == first.value[i].lease.expires());
  }
  CHECK(event_count(a) == events);
  CHECK(a.job("p", "j3").state == tenure::JobState::Requested);

  // the same ID with another secret or other arguments changes nothing
  const tenure::ClaimRequest other("batch-1");
  CHECK_THROWS_AS(a.claim_next_many_idempotent("p", "w", 60s, 3, other), tenure::Conflict);
  CHECK_THROWS_AS(a.claim_next_many_idempotent("p", "w", 60s, 2, r), tenure::Conflict);
  CHECK_THROWS_AS(a.claim_next_many_idempotent("p", "w2", 60s, 3, r), tenure::Conflict);
  CHECK_THROWS_AS(a.claim_next_many_idempotent("p", "w", 61s, 3, r), tenure::Conflict);
  CHECK_THROWS_AS(a.claim_next_idempotent("p", "w", 60s, r), tenure::Conflict);
  const tenure::ClaimRequest single("single-1");
  const tenure::Applied<tenure::Lease> s = a.claim_next_idempotent("p", "w", 60s, single);
  CHECK(s.value.job() == "j3");
  CHECK_THROWS_AS(a.claim_next_many_idempotent("p", "w", 60s, 3, single), tenure::Conflict);
  const std::size_t after = event_count(a);

  // a member completed and one cancelled: their slots hold their own status, no lease
  first.value[1].lease.complete();
  a.cancel("p", "j2");
  const std::size_t settled = event_count(a);
  CHECK(settled == after + 2);
  const tenure::Applied<std::vector<tenure::Claimed>> later = a.claim_next_many_idempotent("p", "w", 60s, 3, r);
  CHECK(later.replayed);
  REQUIRE(later.value.size() == 3);
  CHECK(later.value[0].ok());
  CHECK(later.value[0].lease.claim_id() == first.value[0].lease.claim_id());
  CHECK(later.value[1].status == TENURE_LEASE_CLOSED);
  CHECK(later.value[1].lease.capi() == nullptr);
  CHECK_THROWS_AS(later.value[1].raise(), tenure::LeaseClosed);
  CHECK(later.value[2].status == TENURE_CANCELLED);
  CHECK(later.value[2].name() == "cancelled");
  CHECK(event_count(a) == settled);
  first.value[0].lease.release();
  s.value.release();
}

TEST_CASE("idempotent: batched transitions answer each lease as alone: replays, conflicts, per-lease errors") {
  const std::string db = fresh_db("idem-batch");
  tenure::Authority a = tenure::Authority::open(db);
  const tenure::Authority foreign_auth = tenure::Authority::open(db);
  a.create_production("p");
  for (const char* j : {"c0", "c1", "c2", "c3", "r0", "r1", "r2", "f0", "f1", "f2", "x", "n"}) {
    a.submit("p", tenure::JobSpec(j).max_attempts(5));
  }
  a.submit("p", tenure::JobSpec("h").max_hold(15s));
  auto claim = [&a](const char* j) { return a.claim("p", j, "w", 10s); };

  // completions: two made (facts in another order replay), one with other facts, one fresh
  const tenure::Lease c0 = claim("c0"), c1 = claim("c1"), c2 = claim("c2"), c3 = claim("c3");
  const tenure::Lease k0 = copy_of(a, c0), k1 = copy_of(a, c1), k2 = copy_of(a, c2);
  c0.complete({{"k", "v"}});
  c1.complete({{"a", "1"}, {"b", "2"}});
  c2.complete({{"k", "v"}});
  const tenure::Lease foreign = foreign_auth.claim("p", "x", "w", 10s);
  std::size_t events = event_count(a);
  const std::vector<tenure::Outcome> done = a.complete_many_idempotent(
      {{k0, {{"k", "v"}}}, {k1, {{"b", "2"}, {"a", "1"}}}, {k2, {{"k", "other"}}}, {c3}, {foreign}, {k0}});
  REQUIRE(done.size() == 6);
  CHECK((done[0].ok() && done[0].replayed));
  CHECK((done[1].ok() && done[1].replayed));
  CHECK(done[2].status == TENURE_CONFLICT);
  CHECK(!done[2].replayed);
  CHECK((done[3].ok() && !done[3].replayed));
  CHECK(done[4].status == TENURE_INVALID_ARGUMENT);  // another handle's lease
  CHECK(done[5].status == TENURE_INVALID_ARGUMENT);  // the same job twice
  CHECK(!done[0].expires);
  CHECK(event_count(a) == events + 1);
  CHECK(a.job("p", "c3").state == tenure::JobState::Completed);
  CHECK(c3.status() == tenure::LeaseStatus::Closed);
  // the plain batched call keeps the refusal
  CHECK(a.complete_many({{k0, {{"k", "v"}}}})[0].status == TENURE_LEASE_CLOSED);

  // releases: one made, one whose job was claimed again since (stale), one fresh
  const tenure::Lease r0 = claim("r0"), r1 = claim("r1");
  const tenure::Lease q0 = copy_of(a, r0);
  CHECK(r0.release() == tenure::JobState::Requested);
  const tenure::Lease s1 = copy_of(a, r1);
  r1.release();
  const tenure::Lease reclaimed = claim("r1"), r2 = claim("r2");
  events = event_count(a);
  const std::vector<tenure::Outcome> released = a.release_many_idempotent({q0, s1, r2});
  REQUIRE(released.size() == 3);
  CHECK((released[0].ok() && released[0].replayed && released[0].state == tenure::JobState::Requested));
  CHECK(released[1].status == TENURE_STALE_LEASE);
  CHECK(released[1].state == tenure::JobState::Any);
  CHECK((released[2].ok() && !released[2].replayed && released[2].state == tenure::JobState::Requested));
  CHECK(event_count(a) == events + 1);
  CHECK(a.release_many({q0})[0].status == TENURE_LEASE_CLOSED);

  // failures: the same reason and permanence replays, another is Conflict
  const tenure::Lease f0 = claim("f0"), f1 = claim("f1"), f2 = claim("f2");
  const tenure::Lease g0 = copy_of(a, f0), g1 = copy_of(a, f1);
  CHECK(f0.fail("boom", true) == tenure::JobState::Failed);
  CHECK(f1.fail("boom") == tenure::JobState::Requested);
  events = event_count(a);
  const std::vector<tenure::Outcome> failed =
      a.fail_many_idempotent({{g0, "boom", true}, {g1, "boom", true}, {f2, "fresh"}});
  REQUIRE(failed.size() == 3);
  CHECK((failed[0].ok() && failed[0].replayed && failed[0].state == tenure::JobState::Failed));
  CHECK(failed[1].status == TENURE_CONFLICT);
  CHECK((failed[2].ok() && !failed[2].replayed && failed[2].state == tenure::JobState::Requested));
  CHECK(event_count(a) == events + 1);
  CHECK(a.fail_many_idempotent({{g1, "boom"}})[0].replayed);

  // renewals: one the hold limit capped replays with the expiry it set; a fresh one renews
  const tenure::Lease h = claim("h"), n = claim("n");
  const tenure::Lease hc = copy_of(a, h);
  const std::vector<tenure::Outcome> renewed = a.renew_many_idempotent({h, n}, 60s);
  REQUIRE(renewed.size() == 2);
  CHECK((renewed[0].ok() && !renewed[0].replayed && renewed[1].ok() && !renewed[1].replayed));
  REQUIRE(renewed[0].expires.has_value());
  REQUIRE(renewed[1].expires.has_value());
  CHECK(renewed[0].expires == a.job("p", "h").expires);  // capped by the hold limit
  CHECK(*renewed[0].expires == h.expires());
  CHECK(*renewed[1].expires == n.expires());
  CHECK(*renewed[0].expires < *renewed[1].expires);
  CHECK(renewed[0].state == tenure::JobState::Any);
  events = event_count(a);
  CHECK(a.renew_many({hc}, 60s)[0].status == TENURE_HOLD_LIMIT);
  const std::vector<tenure::Outcome> replayed = a.renew_many_idempotent({hc, q0, foreign}, 60s);
  REQUIRE(replayed.size() == 3);
  CHECK((replayed[0].ok() && replayed[0].replayed));
  CHECK(replayed[0].expires == renewed[0].expires);
  CHECK(hc.expires() == *renewed[0].expires);
  CHECK(replayed[1].status == TENURE_LEASE_CLOSED);
  CHECK(!replayed[1].expires);
  CHECK(replayed[2].status == TENURE_INVALID_ARGUMENT);
  CHECK(event_count(a) == events);
  CHECK_THROWS_AS(a.renew_many_idempotent({}, 60s), tenure::InvalidArgument);
  CHECK_THROWS_AS(a.renew_many_idempotent({n}, 0s), tenure::InvalidDuration);
  CHECK(a.check_store() == 0);
}

TEST_CASE("idempotent: in an edit, claims under a request are pending until the commit; an abort records none") {
  tenure::Authority a = tenure::Authority::open(fresh_db("idem-edit"));
  a.create_production("p");
  for (const char* j : {"e0", "e1", "e2", "e3", "e4"}) a.submit("p", tenure::JobSpec(j));
  const tenure::ClaimRequest r1("edit-1"), r2("edit-2"), r3("edit-3"), gone("edit-gone");
  tenure::Lease one{nullptr}, two{nullptr};
  std::vector<tenure::Claimed> many;
  {
    tenure::Edit e = a.edit();
    tenure::Applied<tenure::Lease> x = e.claim_idempotent("p", "e0", "w", 60s, r1);
    CHECK(!x.replayed);
    CHECK(x.value.status() == tenure::LeaseStatus::Pending);
    tenure::Applied<tenure::Lease> y = e.claim_next_idempotent("p", "w", 60s, r2);
    CHECK(y.value.job() == "e1");
    CHECK_THROWS_AS(e.claim_next_idempotent("p", "w", 61s, r1), tenure::Conflict);  // the edit stays usable
    tenure::Applied<std::vector<tenure::Claimed>> z = e.claim_next_many_idempotent("p", "w", 60s, 2, r3);
    CHECK(!z.replayed);
    REQUIRE(z.value.size() == 2);
    CHECK(z.value[0].ok());
    CHECK(z.value[0].lease.status() == tenure::LeaseStatus::Pending);
    CHECK(z.value[1].lease.job() == "e3");
    e.commit();
    one = std::move(x.value);
    two = std::move(y.value);
    many = std::move(z.value);
  }
  CHECK(one.status() == tenure::LeaseStatus::Active);
  CHECK(many[1].lease.status() == tenure::LeaseStatus::Active);
  const std::size_t events = event_count(a);
  {
    tenure::Edit e = a.edit();
    const tenure::Applied<tenure::Lease> x = e.claim_idempotent("p", "e0", "w", 60s, r1);
    CHECK((x.replayed && x.value.claim_id() == one.claim_id()));
    const tenure::Applied<std::vector<tenure::Claimed>> z = e.claim_next_many_idempotent("p", "w", 60s, 2, r3);
    CHECK(z.replayed);
    REQUIRE(z.value.size() == 2);
    CHECK(z.value[1].lease.claim_id() == many[1].lease.claim_id());
    e.commit();
  }
  CHECK(a.claim_next_idempotent("p", "w", 60s, r2).value.claim_id() == two.claim_id());
  CHECK(event_count(a) == events);
  {
    tenure::Edit e = a.edit();
    const tenure::Applied<tenure::Lease> x = e.claim_next_idempotent("p", "w", 60s, gone);
    CHECK(x.value.job() == "e4");
    e.abort();
    CHECK(x.value.status() == tenure::LeaseStatus::Closed);
  }
  CHECK(event_count(a) == events);
  const tenure::Applied<tenure::Lease> fresh = a.claim_next_idempotent("p", "w", 60s, gone);
  CHECK(!fresh.replayed);
  CHECK(fresh.value.job() == "e4");
  CHECK(a.job("p", "e4").attempts == 1);
}
