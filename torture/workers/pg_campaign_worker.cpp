// The C++ worker process of the PostgreSQL server campaign
// (`postgres_campaign` in crates/tenure/tests/pg_outage.rs):
//
//   pg_campaign_worker URL PRODUCTION HOLDER RECORD
//
// `tenure::Worker` with 4 slots, 60 s leases (keepers renew them), waits of
// 500 ms. Each handler run appends `R <job> <claim> <us>` when it begins and
// `E <job> <claim> <us>` when it returns (jobs take 20 ms) to RECORD; each
// report appends `C <job> <claim>` (completed) or `O <job> <claim> <result>`.
// SIGTERM stops the worker; the last line is
// `S <completed> <failed> <released> <lost> <outages>`. Exit 0 when stopped
// by SIGTERM, 3 when the worker stopped by itself, 1 on an error.
#include <tenure/tenure.hpp>

#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <thread>

namespace {

int record_fd = -1;

void line(const std::string& text) {
  const std::string l = text + "\n";
  // O_APPEND: one write per line, whole lines whatever the slots do.
  if (::write(record_fd, l.data(), l.size()) < 0) std::perror("record");
}

long long now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s URL PRODUCTION HOLDER RECORD\n", argv[0]);
    return 2;
  }
  const std::string holder = argv[3];
  record_fd = ::open(argv[4], O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (record_fd < 0) {
    std::perror(argv[4]);
    return 1;
  }
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  try {
    const tenure::Authority authority = tenure::Authority::open(argv[1], tenure::Options().busy_timeout(2s));
    std::atomic<long> completed{0}, failed{0}, released{0}, lost{0};
    tenure::Worker worker(
        authority, tenure::WorkerConfig(argv[2], holder, 60s).slots(4).wait_timeout(500ms).grace(10s),
        [](const tenure::JobContext& job) -> tenure::JobOutcome {
          const std::string id = job.job() + " " + job.lease().claim_id();
          line("R " + id + " " + std::to_string(now_us()));
          std::this_thread::sleep_for(20ms);
          line("E " + id + " " + std::to_string(now_us()));
          return tenure::Complete{};
        },
        [&](const tenure::Report& r) {
          switch (r.result) {
            case tenure::JobResult::Completed:
              ++completed;
              line("C " + r.job + " " + r.claim_id);
              return;
            case tenure::JobResult::Failed:
              ++failed;
              break;
            case tenure::JobResult::Released:
              ++released;
              break;
            default:
              ++lost;
              break;
          }
          line("O " + r.job + " " + r.claim_id + " " +
               (r.error ? std::string(r.error->what()) : std::string(tenure::state_name(r.state))));
        });
    const timespec poll{0, 100 * 1000 * 1000};
    bool asked = false;
    while (!worker.gave_up() && !worker.stopping()) {
      if (sigtimedwait(&stop_signals, nullptr, &poll) > 0) {
        asked = true;
        break;
      }
    }
    worker.stop();
    worker.join();
    line("S " + std::to_string(completed.load()) + " " + std::to_string(failed.load()) + " " +
         std::to_string(released.load()) + " " + std::to_string(lost.load()) + " " +
         std::to_string(worker.outages()));
    if (!asked) {
      std::fprintf(stderr, "%s: the worker stopped by itself\n", holder.c_str());
      return 3;
    }
    return 0;
  } catch (const tenure::Error& e) {
    std::fprintf(stderr, "%s: %s (%s)\n", holder.c_str(), e.what(), std::string(e.name()).c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", holder.c_str(), e.what());
    return 1;
  }
}
