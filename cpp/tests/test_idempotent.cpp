// Idempotent calls through the C++ projection (ABI 1.1; docs/design.md,
// "Idempotent calls"): ClaimRequest, Authority::claim_with /
// claim_next_with returning Applied<Lease>, and the lease transitions'
// _idempotent forms, with a copy of the lease that never heard the answer
// (an imported token) standing for a caller retrying after a lost answer.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
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
  tenure::Applied<tenure::Lease> first = a.claim_with("p", "j0", "w", 60s, r);
  CHECK(!first.replayed);
  const std::size_t events = event_count(a);
  tenure::Applied<tenure::Lease> again = a.claim_with("p", "j0", "w", 60s, r);
  CHECK(again.replayed);
  CHECK(again.value.claim_id() == first.value.claim_id());
  CHECK(again.value.attempt() == 1);
  CHECK(event_count(a) == events);
  const tenure::ClaimRequest other("req-1");
  CHECK_THROWS_AS(a.claim_with("p", "j0", "w", 60s, other), tenure::Conflict);
  CHECK_THROWS_AS(a.claim_with("p", "j0", "w", 61s, r), tenure::Conflict);
  CHECK_THROWS_AS(a.claim_next_with("p", "w", 60s, r), tenure::Conflict);
  CHECK(event_count(a) == events);
  CHECK_THROWS_AS(tenure::ClaimRequest(""), tenure::InvalidArgument);
  CHECK_THROWS_AS(tenure::ClaimRequest("a/b"), tenure::InvalidArgument);
  const tenure::ClaimRequest n("req-2");
  tenure::Applied<tenure::Lease> n1 = a.claim_next_with("p", "w", 60s, n);
  tenure::Applied<tenure::Lease> n2 = a.claim_next_with("p", "w", 60s, n);
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
