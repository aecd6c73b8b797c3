// Header hygiene: see tu_a.cpp.
#include <tenure/tenure.hpp>
#include <tenure/tenure.hpp>

std::int64_t tu_b_micros() { return tenure::to_micros(std::chrono::milliseconds(2000)); }

std::string tu_b_round_trip(const char* db) {
  const tenure::Authority a = tenure::Authority::open(db);
  a.create_production("p");
  a.submit("p", tenure::JobSpec("from-b"));
  const tenure::Lease l = a.claim("p", "from-b", "tu-b", std::chrono::seconds(30));
  l.complete({{"tu", "b"}});
  return l.job();
}

// Instantiate the conversion for many Rep/Period pairs under the strict
// warning flags the harness uses (-Wconversion, -Wsign-conversion, ...).
std::int64_t tu_b_many() {
  using namespace std::chrono;
  return tenure::to_micros(nanoseconds(1000)) + tenure::to_micros(duration<unsigned, std::milli>(1)) +
         tenure::to_micros(duration<unsigned long long, std::micro>(1)) +
         tenure::to_micros(duration<short, std::ratio<1, 3>>(3)) +
         tenure::to_micros(duration<signed char, std::ratio<60>>(1)) +
         tenure::to_micros(duration<int, std::exa>(0)) + tenure::to_micros(duration<long, std::atto>(0)) +
         tenure::to_micros(duration<const int>(1));
}
