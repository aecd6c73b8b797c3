// Must not compile: a floating-point duration count (docs/design.md, Durations).
// expect-error: a floating-point std::chrono::duration Rep is rejected
#include <tenure/tenure.hpp>

#ifdef TENURE_COMPILE_FAIL_CONTROL
using Ttl = std::chrono::duration<int, std::milli>;  // control: an integral Rep compiles
#else
using Ttl = std::chrono::duration<float, std::milli>;
#endif

void renew(const tenure::Lease& l) { l.renew(Ttl(250)); }
