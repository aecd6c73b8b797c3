// Must not compile: a custom class as the duration count (docs/design.md, Durations).
// expect-error: a non-integral (class) std::chrono::duration Rep is rejected
#include <tenure/tenure.hpp>

#ifdef TENURE_COMPILE_FAIL_CONTROL
using Ttl = std::chrono::duration<long>;  // control: an integral Rep compiles
#else
// A class that behaves like a number: still not exactly convertible.
struct Ticks {
  long v = 0;
  Ticks() = default;
  Ticks(long x) : v(x) {}  // NOLINT(google-explicit-constructor)
  operator long() const { return v; }
};
using Ttl = std::chrono::duration<Ticks>;
#endif

tenure::Lease next(tenure::Edit& e) { return e.claim_next("p", "w", Ttl(30)); }
