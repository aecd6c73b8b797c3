// Must not compile: bool is not a count of time (docs/design.md, Durations).
// expect-error: std::chrono::duration<bool> is rejected
#include <tenure/tenure.hpp>

#ifdef TENURE_COMPILE_FAIL_CONTROL
using Ttl = std::chrono::duration<unsigned char>;  // control: an integral Rep compiles
#else
using Ttl = std::chrono::duration<bool>;
#endif

tenure::Options options() { return tenure::Options().busy_timeout(Ttl(true)); }
std::int64_t micros() { return tenure::to_micros(Ttl(true)); }
