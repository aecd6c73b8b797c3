// Entry point of the C++ suite: doctest, plus a child mode used by the
// clock-rollback test (this program re-executed under libfaketime).
//   tenure_cpp_tests [doctest options]      run the suite
//   tenure_cpp_tests --rollback-child DB    the child: every guarded
//                                           operation must throw ClockRollback
//   tenure_cpp_tests --import-child DB      reads a lease token from stdin
//                                           (never argv), imports it and
//                                           completes the job
//   tenure_cpp_tests --stats-jump-child DB  the statistics against a full
//                                           scan under a jumped clock
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <iostream>
#include <string>

#include "support.hpp"

std::string testsupport::self_exe() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return std::string();
  buf[n] = 0;
  return std::string(buf);
}

namespace {

int rollback_child(const char* db) {
  using namespace std::chrono_literals;
  int failures = 0;
  auto expect = [&](bool ok, const char* what) {
    if (!ok) {
      std::cerr << "child: FAILED " << what << "\n";
      ++failures;
    }
  };
  try {
    const auto a = tenure::Authority::open(db);
    const tenure::ClockReading c = a.clock();
    expect(c.blocked && c.now < c.mark, "clock reads below the mark");
    try {
      (void)a.claim("p", "j", "past", 30s);
      expect(false, "claim threw");
    } catch (const tenure::ClockRollback& e) {
      expect(e.status() == TENURE_CLOCK_ROLLBACK, "status is TENURE_CLOCK_ROLLBACK");
      expect(std::string(e.what()).find("high-water mark") != std::string::npos, "message names the mark");
    }
    try {
      (void)a.claim_next("p", "past", std::chrono::minutes(1));
      expect(false, "claim_next threw");
    } catch (const tenure::ClockRollback&) {
    }
  } catch (const std::exception& e) {
    std::cerr << "child: unexpected exception: " << e.what() << "\n";
    ++failures;
  }
  std::cout << "child: " << (failures == 0 ? "ok" : "failed") << "\n";
  return failures == 0 ? 0 : 1;
}

int import_child(const char* db) {
  std::string token;
  std::getline(std::cin, token);
  try {
    const auto a = tenure::Authority::open(db);
    const tenure::Lease l = a.import_lease(token);
    tenure::detail::wipe(&token[0], token.size());
    if (l.status() != tenure::LeaseStatus::Active) return 1;
    l.complete({{"by", "child"}, {"pid", std::to_string(getpid())}});
    std::cout << "child: completed " << l.job() << "\n";
    return 0;
  } catch (const tenure::Error& e) {
    std::cerr << "child: " << e.name() << ": " << e.what() << "\n";
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--rollback-child") == 0) return rollback_child(argv[2]);
  if (argc == 3 && std::strcmp(argv[1], "--import-child") == 0) return import_child(argv[2]);
  if (argc == 3 && std::strcmp(argv[1], "--stats-jump-child") == 0) return testsupport::stats_jump_child(argv[2]);
  doctest::Context ctx(argc, argv);
  return ctx.run();
}
