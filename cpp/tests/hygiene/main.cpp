// Header hygiene: a program made of tu_a.cpp, tu_b.cpp and this file, each
// including tenure.hpp. Prints the plain closing line "N passed, M failed".
#include <tenure/tenure.hpp>

#include <cstdio>
#include <string>

std::int64_t tu_a_micros();
std::int64_t tu_b_micros();
std::int64_t tu_b_many();
std::string tu_a_round_trip(const char* db);
std::string tu_b_round_trip(const char* db);

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DB\n", argv[0]);
    return 2;
  }
  int passed = 0, failed = 0;
  auto check = [&](bool ok, const char* what) {
    ok ? ++passed : ++failed;
    if (!ok) std::fprintf(stderr, "FAILED: %s\n", what);
  };
  check(tu_a_micros() == 2000000 && tu_b_micros() == 2000000, "both TUs convert");
  check(tu_b_many() == 1 + 1000 + 1 + 1000000 + 60000000 + 0 + 0 + 1000000, "many instantiations");
  check(tu_a_round_trip(argv[1]) == "from-a", "TU a round trip");
  check(tu_b_round_trip(argv[1]) == "from-b", "TU b round trip");
  const tenure::Authority a = tenure::Authority::open(argv[1]);
  check(a.production_facts("p").size() >= 2, "facts from both TUs");
  std::printf("hygiene: %d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
