// Header hygiene: included twice here and again in tu_b.cpp; the three
// objects link into one program (no duplicate symbols, ODR-safe inlines).
#include <tenure/tenure.hpp>
#include <tenure/tenure.hpp>

std::int64_t tu_a_micros() { return tenure::to_micros(std::chrono::seconds(2)); }

std::string tu_a_round_trip(const char* db) {
  const tenure::Authority a = tenure::Authority::open(db);
  a.create_production("p");
  a.submit("p", tenure::JobSpec("from-a"));
  const tenure::Lease l = a.claim("p", "from-a", "tu-a", std::chrono::seconds(30));
  l.complete({{"tu", "a"}});
  return l.job();
}
