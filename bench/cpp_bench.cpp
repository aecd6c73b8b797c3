// The tenure lifecycle through the C++ projection, for `cargo xtask bench`.
//   cpp_bench DIR full|normal CYCLES  ->  one JSON line on stdout
#include <tenure/tenure.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  if (argc != 4) {
    std::fprintf(stderr, "usage: cpp_bench DIR full|normal CYCLES\n");
    return 2;
  }
  const bool normal = std::string(argv[2]) == "normal";
  const long cycles = std::strtol(argv[3], nullptr, 10);
  const auto auth = tenure::Authority::open(std::string(argv[1]) + "/cpp.db",
                                            tenure::Options().synchronous(normal ? tenure::Synchronous::Normal
                                                                                 : tenure::Synchronous::Full));
  auth.create_production("bench");
  {
    tenure::Edit edit = auth.edit();
    for (long i = 0; i < cycles; i++) {
      char id[32];
      std::snprintf(id, sizeof id, "j%08ld", i);
      edit.submit("bench", tenure::JobSpec(id).payload("payload", 7).max_attempts(1000));
    }
    edit.commit();
  }
  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < cycles; i++) {
    tenure::Lease lease = auth.claim_next("bench", "bench-worker", 30s);
    lease.renew(60s);
    lease.complete();
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("{\"workload\":\"cpp-lifecycle\",\"sync\":\"%s\",\"cycles\":%ld,\"seconds\":%.6f,\"cycles_per_s\":%.2f}\n",
              normal ? "NORMAL" : "FULL", cycles, secs, static_cast<double>(cycles) / secs);
  return 0;
}
