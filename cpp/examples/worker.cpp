// An example C++ worker built on `tenure::Worker`: four slots drain a
// production that any other program (any language) filled. Each slot waits
// for a job, the worker keeps its lease alive while the handler "processes"
// the payload, and the job is completed with facts. The worker stops when
// no job of the production is left to run, or on SIGTERM / SIGINT (running
// handlers then get a grace period; leases still held after it are
// released).
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

#include <signal.h>
#include <time.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <exception>
#include <mutex>
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

/// Whether a job of `production` is still waiting, running or expired.
bool work_left(const tenure::Authority& authority, const std::string& production) {
  for (tenure::JobState s : {tenure::JobState::Requested, tenure::JobState::Claimed, tenure::JobState::Expired}) {
    tenure::ListQuery q;
    q.state = s;
    q.limit = 1;
    if (!authority.jobs(production, q).empty()) return true;
  }
  return false;
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
  // SIGTERM and SIGINT are taken synchronously by the main thread (blocked
  // here, before the worker's threads start, so they inherit the mask).
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  try {
    // Throws tenure::AbiMismatch if the loaded libtenure cannot serve this header.
    const tenure::Authority authority = tenure::Authority::open(argv[1]);
    std::mutex out;
    int completed = 0;
    tenure::Worker worker(
        authority, tenure::WorkerConfig(production, holder, 30s).slots(4).wait_timeout(500ms).grace(10s),
        [](const tenure::JobContext& job) -> tenure::JobOutcome {
          const std::vector<std::uint8_t>& payload = job.payload();
          return tenure::Complete{{{"bytes", std::to_string(payload.size())}, {"fnv1a", fnv1a_hex(payload)}}};
        },
        [&](const tenure::Report& r) {
          const std::lock_guard<std::mutex> lk(out);
          if (r.result == tenure::JobResult::Completed) {
            std::printf("completed %s (attempt %u)\n", r.job.c_str(), r.attempt);
            ++completed;
          } else {
            std::fprintf(stderr, "not completed %s: %s\n", r.job.c_str(),
                         r.error ? r.error->what() : std::string(tenure::state_name(r.state)).c_str());
          }
        });
    const timespec poll{0, 100 * 1000 * 1000};
    while (work_left(authority, production)) {
      if (sigtimedwait(&stop_signals, nullptr, &poll) > 0) break;
    }
    worker.stop();
    worker.join();
    const std::lock_guard<std::mutex> lk(out);
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
