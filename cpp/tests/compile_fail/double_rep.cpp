// Must not compile: a floating-point duration count (docs/design.md, Durations).
// expect-error: a floating-point std::chrono::duration Rep is rejected
#include <tenure/tenure.hpp>

#ifdef TENURE_COMPILE_FAIL_CONTROL
using Ttl = std::chrono::duration<long long>;  // control: the same code with an integral Rep compiles
#else
using Ttl = std::chrono::duration<double>;
#endif

tenure::Lease claim(const tenure::Authority& a) { return a.claim("p", "j", "w", Ttl(2)); }
