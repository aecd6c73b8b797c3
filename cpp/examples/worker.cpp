// An example C++ worker: claims jobs one after another from a production
// that any other program (any language) filled, "processes" each payload,
// keeps its lease alive while working and completes the job with facts.
//
//   worker DB PRODUCTION HOLDER
//
// Build against an installed prefix (`cargo xtask dist PREFIX`):
//   export PKG_CONFIG_PATH=PREFIX/lib/pkgconfig
//   g++ -std=c++17 worker.cpp $(pkg-config --cflags --libs tenure) -o worker
//
// Facts published per job: `bytes` (payload size) and `fnv1a` (FNV-1a 64 of
// the payload, 16 hex digits), next to the authority's own provenance.
#include <tenure/tenure.hpp>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

namespace {

std::string fnv1a_hex(const std::vector<std::uint8_t>& data) {
  std::uint64_t h = 14695981039346656037ULL;
  for (std::uint8_t b : data) {
    h ^= b;
    h *= 1099511628211ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, h);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s DB PRODUCTION HOLDER\n", argv[0]);
    return 2;
  }
  const std::string production = argv[2];
  const std::string holder = argv[3];
  try {
    // Throws tenure::AbiMismatch if the loaded libtenure cannot serve this header.
    const tenure::Authority authority = tenure::Authority::open(argv[1]);
    int completed = 0;
    for (;;) {
      tenure::Lease lease = [&] {
        try {
          return authority.claim_next(production, holder, 30s);
        } catch (const tenure::NoJobAvailable&) {
          return tenure::Lease(nullptr);
        }
      }();
      if (lease.capi() == nullptr) break;

      const std::vector<std::uint8_t> payload = authority.payload(production, lease.job());
      lease.renew(std::chrono::minutes(2));  // a long job would do this from a heartbeat
      try {
        lease.complete({{"bytes", std::to_string(payload.size())}, {"fnv1a", fnv1a_hex(payload)}});
      } catch (const tenure::StaleLease& e) {
        // someone else owns the job now: our work is not registered
        std::fprintf(stderr, "lost %s: %s\n", lease.job().c_str(), e.what());
        continue;
      } catch (const tenure::LeaseExpired& e) {
        std::fprintf(stderr, "lost %s: %s\n", lease.job().c_str(), e.what());
        continue;
      }
      std::printf("completed %s (attempt %u, %zu bytes)\n", lease.job().c_str(), lease.attempt(), payload.size());
      ++completed;
    }
    std::printf("worker %s: %d completed\n", holder.c_str(), completed);
    return 0;
  } catch (const tenure::Error& e) {
    std::fprintf(stderr, "worker: %s (%s)\n", e.what(), std::string(e.name()).c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "worker: %s\n", e.what());
    return 1;
  }
}
