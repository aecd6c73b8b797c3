// Waiting for work, keep-alive and the worker loop through the C++
// projection (ABI 1.1): claim_next_wait wakes on a submit, times out, is
// cancelled by a WaitCancel (and, in C++20, a std::stop_token); Keeper is
// RAII (destruction stops it, never releases) and reports refusals with
// their own class; tenure::Worker runs every job once on its slots, settles
// each with the handler's outcome, and releases what is still held when
// the grace period after a stop ends.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "support.hpp"

using namespace std::chrono_literals;
using testsupport::fresh_db;
using testsupport::Reports;
using steady = std::chrono::steady_clock;

namespace {

static_assert(!std::is_copy_constructible<tenure::Keeper>::value, "Keeper is move-only");
static_assert(std::is_nothrow_move_constructible<tenure::Keeper>::value, "");
static_assert(std::is_nothrow_destructible<tenure::Keeper>::value, "");
static_assert(!std::is_copy_constructible<tenure::WaitCancel>::value, "WaitCancel is move-only");
static_assert(!std::is_copy_constructible<tenure::Worker>::value, "");
static_assert(std::is_nothrow_destructible<tenure::Worker>::value, "");

tenure::Authority store(const char* name) {
  tenure::Authority a = tenure::Authority::open(fresh_db(name));
  a.create_production("p");
  return a;
}

std::size_t event_count(const tenure::Authority& a) { return a.events(0, 10000).size(); }

}  // namespace

TEST_CASE("wait: a waiter wakes on a submit from another thread") {
  const tenure::Authority a = store("cpp-wait-wake");
  const auto t0 = steady::now();
  std::thread submitter([&a] {
    std::this_thread::sleep_for(300ms);
    a.submit("p", tenure::JobSpec("late"));
  });
  const tenure::WaitCancel cancel;
  tenure::Lease l = a.claim_next_wait("p", "waiter", 60s, 30s, cancel);
  submitter.join();
  CHECK(steady::now() - t0 >= 250ms);
  CHECK(steady::now() - t0 < 10s);
  CHECK(l.job() == "late");
  CHECK(l.status() == tenure::LeaseStatus::Active);
}

TEST_CASE("wait: timeout, zero timeout and cancel end the wait with NoJobAvailable, changing nothing") {
  const tenure::Authority a = store("cpp-wait-timeout");
  const std::size_t before = event_count(a);
  const tenure::WaitCancel cancel;
  auto t0 = steady::now();
  CHECK_THROWS_AS(a.claim_next_wait("p", "w", 1s, 300ms, cancel), tenure::NoJobAvailable);
  CHECK(steady::now() - t0 >= 290ms);
  CHECK_FALSE(cancel.is_cancelled());
  CHECK_THROWS_AS(a.claim_next_wait("p", "w", 1s, 0s, cancel), tenure::NoJobAvailable);
  CHECK_THROWS_AS(a.claim_next_wait("p", "w", 1s, -1s, cancel), tenure::InvalidDuration);
  CHECK_THROWS_AS(a.claim_next_wait("p", "w", 1s, std::chrono::nanoseconds(1500), cancel), tenure::InvalidDuration);
  CHECK_THROWS_AS(a.claim_next_wait("nope", "w", 1s, 10s, cancel), tenure::NotFound);

  std::thread canceller([&cancel] {
    std::this_thread::sleep_for(300ms);
    cancel.cancel();
  });
  t0 = steady::now();
  CHECK_THROWS_AS(a.claim_next_wait("p", "w", 1s, 60s, cancel), tenure::NoJobAvailable);
  canceller.join();
  CHECK(steady::now() - t0 < 10s);
  CHECK(cancel.is_cancelled());
  CHECK(event_count(a) == before);

  // cancel_waits ends a wait without a handle
  std::thread all([&a] {
    std::this_thread::sleep_for(300ms);
    a.cancel_waits();
  });
  t0 = steady::now();
#if TENURE_HPP_CPLUSPLUS >= 202002L
  CHECK_THROWS_AS(a.claim_next_wait("p", "w", 1s, 60s), tenure::NoJobAvailable);
#else
  CHECK_THROWS_AS(a.claim_next_wait("p", "w", 1s, 60s), tenure::NoJobAvailable);
#endif
  all.join();
  CHECK(steady::now() - t0 < 10s);
  CHECK(event_count(a) == before);
}

#if TENURE_HPP_CPLUSPLUS >= 202002L
TEST_CASE("wait: a std::stop_token request cancels the wait (C++20)") {
  const tenure::Authority a = store("cpp-wait-stop-token");
  std::stop_source src;
  std::thread stopper([&src] {
    std::this_thread::sleep_for(300ms);
    src.request_stop();
  });
  const auto t0 = steady::now();
  CHECK_THROWS_AS(a.claim_next_wait("p", "w", 1s, 60s, src.get_token()), tenure::NoJobAvailable);
  stopper.join();
  CHECK(steady::now() - t0 >= 250ms);
  CHECK(steady::now() - t0 < 10s);
  // already requested: ends at once, even with a job ready
  a.submit("p", tenure::JobSpec("j"));
  CHECK_THROWS_AS(a.claim_next_wait("p", "w", 1s, 60s, src.get_token()), tenure::NoJobAvailable);
  CHECK(a.job("p", "j").state == tenure::JobState::Requested);
  // a token without a stop state just waits for the job
  tenure::Lease l = a.claim_next_wait("p", "w", 1s, 10s, std::stop_token{});
  CHECK(l.job() == "j");
}
#endif

TEST_CASE("keeper: keeps a short lease alive; destruction stops it and never releases") {
  const tenure::Authority a = store("cpp-keeper");
  a.submit("p", tenure::JobSpec("j"));
  const tenure::Lease l = a.claim("p", "j", "w", 400ms);
  const auto first = l.expires();
  {
    const tenure::Keeper k = l.keep_alive(400ms, 80ms);
    std::this_thread::sleep_for(1200ms);
    CHECK(k.status() == tenure::KeeperState::Running);
    CHECK(k.renewals() >= 3);
    CHECK_FALSE(k.error().has_value());
    CHECK(l.expires() > first + 700ms);
    CHECK(a.job("p", "j").state == tenure::JobState::Claimed);
  }
  const std::size_t events = event_count(a);
  std::this_thread::sleep_for(700ms);
  CHECK(event_count(a) == events);  // no renewal, no release
  CHECK(a.job("p", "j").state == tenure::JobState::Expired);

  CHECK_THROWS_AS(l.keep_alive(1s, 1s), tenure::InvalidDuration);
  CHECK_THROWS_AS(l.keep_alive(1s, 0s), tenure::InvalidDuration);
  CHECK_THROWS_AS(l.keep_alive(1s, std::chrono::nanoseconds(1500)), tenure::InvalidDuration);
  const tenure::Keeper empty(nullptr);
  CHECK_THROWS_AS(empty.stop(), tenure::InvalidArgument);
  CHECK(empty.renewals() == 0);
}

TEST_CASE("keeper: a refused renewal is reported with its own class; stop() ends renewals") {
  const tenure::Authority a = store("cpp-keeper-refused");
  a.submit("p", tenure::JobSpec("c"));
  a.submit("p", tenure::JobSpec("s"));
  const tenure::Lease l = a.claim("p", "c", "w", 60s);
  const tenure::Keeper k = l.keep_alive(60s, 50ms);
  a.cancel("p", "c");
  for (int i = 0; i < 500 && k.status() == tenure::KeeperState::Running; ++i) std::this_thread::sleep_for(10ms);
  CHECK(k.status() == tenure::KeeperState::Refused);
  REQUIRE(k.error().has_value());
  CHECK(k.error()->status() == TENURE_CANCELLED);
  CHECK(std::string(k.error()->what()).find("p/c") != std::string::npos);
  CHECK_THROWS_AS(k.throw_if_refused(), tenure::Cancelled);

  const tenure::Lease s = a.claim("p", "s", "w", 60s);
  const tenure::Keeper ks = s.keep_alive(60s, 20ms);
  std::this_thread::sleep_for(150ms);
  ks.stop();
  CHECK(ks.status() == tenure::KeeperState::Stopped);
  const std::uint64_t n = ks.renewals();
  CHECK(n >= 1);
  std::this_thread::sleep_for(200ms);
  CHECK(ks.renewals() == n);
  ks.throw_if_refused();  // nothing to throw
  s.complete();
}

TEST_CASE("worker: slots run every job once, settle it with the handler's outcome and report it") {
  const tenure::Authority a = store("cpp-worker");
  for (int i = 0; i < 12; ++i) a.submit("p", tenure::JobSpec("ok-" + std::to_string(i)).payload("x", 1));
  a.submit("p", tenure::JobSpec("retry").max_attempts(2));
  a.submit("p", tenure::JobSpec("fail"));
  a.submit("p", tenure::JobSpec("throw").max_attempts(1));
  Reports reports;
  std::atomic<int> concurrent{0}, most{0}, runs{0};
  {
    tenure::Worker w(
        a, tenure::WorkerConfig("p", "cpp-worker", 10s).slots(4).wait_timeout(200ms),
        [&](const tenure::JobContext& job) -> tenure::JobOutcome {
          ++runs;
          const int now = ++concurrent;
          int seen = most.load();
          while (now > seen && !most.compare_exchange_weak(seen, now)) {
          }
          std::this_thread::sleep_for(50ms);
          --concurrent;
          CHECK(job.lease().status() == tenure::LeaseStatus::Active);
          CHECK_FALSE(job.lease_lost().has_value());
          CHECK_FALSE(job.stopping());
          if (job.job() == "retry") return tenure::Retry{"again", 10ms};
          if (job.job() == "fail") return tenure::Fail{"no"};
          if (job.job() == "throw") throw std::runtime_error("boom");
          return tenure::Complete{{{"bytes", std::to_string(job.payload().size())}}};
        },
        [&](const tenure::Report& r) { reports.add(r); });
    for (int i = 0; i < 1000 && reports.size() < 16; ++i) std::this_thread::sleep_for(10ms);
    w.stop();
    w.join();
  }
  CHECK(runs.load() == 16);  // 12 + retry twice + fail + throw
  CHECK(most.load() > 1);
  CHECK(most.load() <= 4);
  REQUIRE(reports.all.size() == 16);
  std::map<std::string, std::vector<tenure::Report>> by_job;
  for (const tenure::Report& r : reports.all) by_job[r.job].push_back(r);
  // Each slot reports after its own settling call: the retried job's second
  // attempt, on another slot, may be reported first.
  for (auto& entry : by_job)
    std::stable_sort(entry.second.begin(), entry.second.end(),
                     [](const tenure::Report& x, const tenure::Report& y) { return x.attempt < y.attempt; });
  for (int i = 0; i < 12; ++i) {
    const std::string id = "ok-" + std::to_string(i);
    REQUIRE(by_job[id].size() == 1);
    CHECK(by_job[id][0].result == tenure::JobResult::Completed);
    CHECK(a.job("p", id).state == tenure::JobState::Completed);
    bool has = false;
    for (const tenure::PublishedFact& f : a.facts("p", id)) has |= f.key == "bytes" && f.value == "1";
    CHECK(has);
  }
  REQUIRE(by_job["retry"].size() == 2);
  CHECK(by_job["retry"][0].result == tenure::JobResult::Failed);
  CHECK(by_job["retry"][0].state == tenure::JobState::Requested);
  CHECK(by_job["retry"][1].state == tenure::JobState::Failed);
  CHECK(by_job["retry"][1].attempt == 2);
  CHECK(by_job["fail"][0].state == tenure::JobState::Failed);
  CHECK(by_job["throw"][0].result == tenure::JobResult::Failed);
  CHECK(a.job("p", "throw").last_error.value_or("").find("boom") != std::string::npos);
  CHECK(a.job("p", "fail").last_error.value_or("") == "no");
}

TEST_CASE("worker: at the end of the grace period held leases are released and reported") {
  const tenure::Authority a = store("cpp-worker-grace");
  a.submit("p", tenure::JobSpec("slow"));
  a.submit("p", tenure::JobSpec("quick"));
  Reports reports;
  std::atomic<bool> release_slow{false};
  std::atomic<int> started{0};
  {
    tenure::Worker w(
        a, tenure::WorkerConfig("p", "w", 10s).slots(2).grace(300ms),
        [&](const tenure::JobContext& job) -> tenure::JobOutcome {
          ++started;
          if (job.job() == "slow") {
            while (!release_slow.load()) std::this_thread::sleep_for(5ms);
          } else {
            while (!job.stopping()) std::this_thread::sleep_for(5ms);  // finishes within the grace
          }
          return tenure::Complete{};
        },
        [&](const tenure::Report& r) { reports.add(r); });
    for (int i = 0; i < 1000 && started.load() < 2; ++i) std::this_thread::sleep_for(10ms);
    REQUIRE(started.load() == 2);
    const auto t0 = steady::now();
    w.stop();
    CHECK(w.stopping());
    w.join();
    CHECK(steady::now() - t0 >= 250ms);
    CHECK(steady::now() - t0 < 10s);
  }
  REQUIRE(reports.size() == 2);
  std::map<std::string, tenure::Report> by_job;
  for (const tenure::Report& r : reports.all) by_job.emplace(r.job, r);
  CHECK(by_job.at("quick").result == tenure::JobResult::Completed);
  CHECK(by_job.at("slow").result == tenure::JobResult::Released);
  CHECK(by_job.at("slow").state == tenure::JobState::Requested);
  CHECK(a.job("p", "slow").state == tenure::JobState::Requested);
  // the slow handler's outcome is not applied once it returns
  release_slow = true;
  std::this_thread::sleep_for(200ms);
  CHECK(a.job("p", "slow").state == tenure::JobState::Requested);
  CHECK(reports.size() == 2);
}

TEST_CASE("worker: a configuration the Rust worker refuses is refused before any thread starts") {
  // The same checks as WorkerConfig::check in crates/tenure/src/worker.rs,
  // made by the core through tenure_worker_config_check.
  const tenure::Authority a = store("cpp-worker-bad");
  a.submit("p", tenure::JobSpec("j"));
  const auto events = event_count(a);
  std::atomic<int> ran{0};
  const auto start = [&](const tenure::WorkerConfig& c) {
    tenure::Worker w(a, c, [&](const tenure::JobContext&) -> tenure::JobOutcome {
      ++ran;
      return tenure::Complete{};
    });
    w.stop();
    w.join();
  };
  CHECK_THROWS_AS(start(tenure::WorkerConfig("p", "bad\nholder", 10s)), tenure::InvalidArgument);
  CHECK_THROWS_AS(start(tenure::WorkerConfig("p", "w", 10s).slots(0)), tenure::InvalidArgument);
  CHECK_THROWS_AS(start(tenure::WorkerConfig("p", "w", 10s).slots(1025)), tenure::InvalidArgument);
  CHECK_THROWS_AS(start(tenure::WorkerConfig("p", "w", 10s).renew_every(10s)), tenure::InvalidDuration);
  CHECK_THROWS_AS(start(tenure::WorkerConfig("p", "w", 10s).wait_timeout(0s)), tenure::InvalidDuration);
  CHECK_THROWS_AS(start(tenure::WorkerConfig("p", "w", 10s).wait_timeout(25h)), tenure::InvalidDuration);
  CHECK_THROWS_AS(start(tenure::WorkerConfig("p", "w", 10s).grace(25h)), tenure::InvalidDuration);
  CHECK_THROWS_AS(start(tenure::WorkerConfig("p", "w", 10s).grace(-1s)), tenure::InvalidDuration);
  // nothing ran, nothing was claimed
  CHECK(ran.load() == 0);
  CHECK(a.job("p", "j").state == tenure::JobState::Requested);
  CHECK(event_count(a) == events);
  // the bounds themselves are accepted
  CHECK(tenure_worker_config_check("p", "w", 1024, 10'000'000, 3'333'333, 86'400'000'000, 86'400'000'000) ==
        TENURE_OK);
  CHECK_NOTHROW(start(tenure::WorkerConfig("p", "w", 10s).slots(2).wait_timeout(24h).grace(24h)));
  CHECK_NOTHROW(start(tenure::WorkerConfig("p", "w", 10s).grace(0s)));
}

TEST_CASE("worker: a lease lost while the handler runs is reported Lost with the refusal, as the Rust loop") {
  // crates/tenure/tests/worker.rs: a_lost_lease_is_reported_and_the_handler_can_see_it
  const tenure::Authority a = store("cpp-worker-lost");
  a.submit("p", tenure::JobSpec("j"));
  Reports reports;
  std::atomic<bool> saw_loss{false};
  {
    tenure::Worker w(
        a, tenure::WorkerConfig("p", "w-lost", 10s).renew_every(50ms),
        [&](const tenure::JobContext& job) -> tenure::JobOutcome {
          a.cancel("p", "j");
          const auto t0 = steady::now();
          while (!job.lease_lost() && steady::now() - t0 < 10s) std::this_thread::sleep_for(5ms);
          saw_loss = job.lease_lost().has_value() && job.lease_lost()->status() == TENURE_CANCELLED;
          return tenure::Complete{};
        },
        [&](const tenure::Report& r) { reports.add(r); });
    for (int i = 0; i < 1000 && reports.size() < 1; ++i) std::this_thread::sleep_for(10ms);
    w.stop();
    w.join();
  }
  CHECK(saw_loss.load());
  REQUIRE(reports.size() == 1);
  const tenure::Report& r = reports.all.at(0);
  CHECK(r.result == tenure::JobResult::Lost);
  REQUIRE(r.error.has_value());
  CHECK(r.error->status() == TENURE_CANCELLED);
  CHECK(r.job == "j");
  CHECK(r.attempt == 1);
  CHECK(a.job("p", "j").state == tenure::JobState::Cancelled);
}

TEST_CASE("worker: the longest grace period (24 h) is waited without overflow; a finishing handler ends join") {
  const tenure::Authority a = store("cpp-worker-long-grace");
  a.submit("p", tenure::JobSpec("j"));
  Reports reports;
  std::atomic<bool> running{false};
  {
    tenure::Worker w(
        a, tenure::WorkerConfig("p", "w", 10s).grace(24h),
        [&](const tenure::JobContext& job) -> tenure::JobOutcome {
          running = true;
          while (!job.stopping()) std::this_thread::sleep_for(5ms);
          return tenure::Complete{};
        },
        [&](const tenure::Report& r) { reports.add(r); });
    for (int i = 0; i < 1000 && !running.load(); ++i) std::this_thread::sleep_for(10ms);
    REQUIRE(running.load());
    w.stop();
    w.join();
  }
  REQUIRE(reports.size() == 1);
  CHECK(reports.all.at(0).result == tenure::JobResult::Completed);
  CHECK(a.job("p", "j").state == tenure::JobState::Completed);
}

TEST_CASE("worker: a worker across three productions serves each") {
  const tenure::Authority a = tenure::Authority::open(fresh_db("cpp-worker-across"));
  const std::vector<std::string> prods{"pa", "pb", "pc"};
  for (const std::string& p : prods) {
    a.create_production(p);
    for (int i = 0; i < 4; ++i) a.submit(p, tenure::JobSpec(p + "-" + std::to_string(i)));
  }
  testsupport::Reports reports;
  {
    tenure::Worker w(
        a, tenure::WorkerConfig(prods, "cpp-across", 10s).slots(2).wait_timeout(200ms),
        [](const tenure::JobContext&) -> tenure::JobOutcome { return tenure::Complete{}; },
        [&](const tenure::Report& r) { reports.add(r); });
    for (int i = 0; i < 1000 && reports.size() < 12; ++i) std::this_thread::sleep_for(10ms);
    w.stop();
    w.join();
  }
  REQUIRE(reports.all.size() == 12);
  std::map<std::string, int> served;
  for (const tenure::Report& r : reports.all) {
    CHECK(r.result == tenure::JobResult::Completed);
    ++served[r.production];
  }
  for (const std::string& p : prods) {
    CHECK(served[p] == 4);
    CHECK(a.jobs(p).size() == 4);
    for (const tenure::JobView& v : a.jobs(p)) CHECK(v.state == tenure::JobState::Completed);
  }
}

TEST_CASE("worker: a production list the core refuses") {
  const tenure::Authority a = store("cpp-worker-across-bad");
  const auto handler = [](const tenure::JobContext&) -> tenure::JobOutcome { return tenure::Complete{}; };
  // No production: refused before a thread starts.
  CHECK_THROWS_AS(tenure::Worker(a, tenure::WorkerConfig(std::vector<std::string>{}, "w", 10s), handler),
                  tenure::InvalidArgument);
  CHECK_THROWS_AS(
      tenure::Worker(a, tenure::WorkerConfig(std::vector<std::string>{"p", "bad/id"}, "w", 10s), handler),
      tenure::InvalidArgument);
  // A duplicate: refused by the core at the first wait; join() throws it.
  tenure::Worker w(a, tenure::WorkerConfig(std::vector<std::string>{"p", "p"}, "w", 10s).wait_timeout(200ms),
                   handler);
  CHECK_THROWS_AS(w.join(), tenure::InvalidArgument);
}

namespace {

/// The outage events a worker reported (from its slot threads).
struct Outages {
  std::mutex m;
  std::vector<tenure::OutageEvent> all;
  void add(const tenure::OutageEvent& e) {
    const std::lock_guard<std::mutex> lk(m);
    all.push_back(e);
  }
  std::vector<tenure::OutageEvent> seen() {
    const std::lock_guard<std::mutex> lk(m);
    return all;
  }
  std::size_t count(tenure::OutageEvent::Kind k) {
    const std::lock_guard<std::mutex> lk(m);
    return static_cast<std::size_t>(
        std::count_if(all.begin(), all.end(), [k](const tenure::OutageEvent& e) { return e.kind == k; }));
  }
};

/// A TCP forwarder to the suite's PostgreSQL server (PGHOST, PGPORT): a
/// store opened through it loses its server on `down()` (every connection
/// cut, the port refuses) and finds it again on `up()` (the same port).
class Forwarder {
 public:
  Forwarder() {
    const char* host = std::getenv("PGHOST");
    const char* port = std::getenv("PGPORT");
    REQUIRE(host != nullptr);
    REQUIRE(port != nullptr);
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    REQUIRE(getaddrinfo(host, port, &hints, &found) == 0);
    std::memcpy(&upstream_, found->ai_addr, found->ai_addrlen);
    upstream_len_ = found->ai_addrlen;
    upstream_family_ = found->ai_family;
    freeaddrinfo(found);
    REQUIRE(listen_on(0));
    sockaddr_in bound{};
    socklen_t len = sizeof bound;
    REQUIRE(getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &len) == 0);
    port_ = ntohs(bound.sin_port);
    thread_ = std::thread([this] { run(); });
  }
  Forwarder(const Forwarder&) = delete;
  Forwarder& operator=(const Forwarder&) = delete;
  ~Forwarder() {
    quit_ = true;
    thread_.join();
  }
  /// `url` (a `postgres://` URL of the suite's server) through this forwarder.
  std::string through(const std::string& url) const {
    const std::size_t at = url.find('@');
    const std::size_t slash = url.find('/', at);
    return url.substr(0, at + 1) + "127.0.0.1:" + std::to_string(port_) + url.substr(slash);
  }
  void down() { set(false); }
  void up() { set(true); }

 private:
  bool listen_on(int port) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
    if (listen_fd_ < 0) return false;
    const int one = 1;
    (void)setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(listen_fd_, 64) != 0) {
      ::close(listen_fd_);
      listen_fd_ = -1;
      return false;
    }
    return true;
  }
  void set(bool open) {
    open_ = open;
    const std::uint64_t want = ++asked_;
    while (done_.load() < want) std::this_thread::sleep_for(5ms);
  }
  void cut() {
    for (const auto& p : pairs_) {
      ::close(p.first);
      ::close(p.second);
    }
    pairs_.clear();
    if (listen_fd_ >= 0) ::close(listen_fd_);
    listen_fd_ = -1;
  }
  void run() {
    char buf[16384];
    while (!quit_) {
      const std::uint64_t asked = asked_.load();
      if (!open_ && listen_fd_ >= 0) cut();
      if (open_ && listen_fd_ < 0 && !listen_on(port_)) {
        std::this_thread::sleep_for(10ms);
        continue;
      }
      done_ = asked;
      std::vector<pollfd> fds;
      if (listen_fd_ >= 0) fds.push_back({listen_fd_, POLLIN, 0});
      for (const auto& p : pairs_) {
        fds.push_back({p.first, POLLIN, 0});
        fds.push_back({p.second, POLLIN, 0});
      }
      if (poll(fds.data(), fds.size(), 20) <= 0) continue;
      std::size_t i = 0;
      if (listen_fd_ >= 0) {
        if (fds[0].revents & POLLIN) {
          const int c = accept(listen_fd_, nullptr, nullptr);
          const int u = c < 0 ? -1 : socket(upstream_family_, SOCK_STREAM, 0);
          if (u >= 0 && connect(u, reinterpret_cast<const sockaddr*>(&upstream_), upstream_len_) == 0) {
            pairs_.emplace_back(c, u);
          } else {
            if (c >= 0) ::close(c);
            if (u >= 0) ::close(u);
          }
        }
        i = 1;
      }
      const std::size_t polled = (fds.size() - i) / 2;  // a pair accepted just now was not polled
      std::vector<std::pair<int, int>> alive;
      for (std::size_t k = 0; k < pairs_.size(); ++k) {
        const std::pair<int, int> p = pairs_[k];
        bool ok = true;
        for (std::size_t side = 0; k < polled && side < 2 && ok; ++side) {
          const pollfd& f = fds[i + 2 * k + side];
          if (!(f.revents & (POLLIN | POLLHUP | POLLERR))) continue;
          const int from = side == 0 ? p.first : p.second;
          const int to = side == 0 ? p.second : p.first;
          const ssize_t n = read(from, buf, sizeof buf);
          ok = n > 0 && send(to, buf, static_cast<std::size_t>(n), MSG_NOSIGNAL) == n;
        }
        if (ok) {
          alive.push_back(p);
        } else {
          ::close(p.first);
          ::close(p.second);
        }
      }
      pairs_.swap(alive);
    }
    cut();
  }

  sockaddr_storage upstream_{};
  socklen_t upstream_len_ = 0;
  int upstream_family_ = AF_INET;
  int listen_fd_ = -1;
  int port_ = 0;
  std::vector<std::pair<int, int>> pairs_;
  std::atomic<bool> open_{true};
  std::atomic<bool> quit_{false};
  std::atomic<std::uint64_t> asked_{0};
  std::atomic<std::uint64_t> done_{0};
  std::thread thread_;
};

tenure::JobOutcome complete(const tenure::JobContext&) { return tenure::Complete{{}}; }

}  // namespace

TEST_CASE("worker: a failed wait that is no outage pauses, reports nothing and stops nothing") {
  const tenure::Authority a = tenure::Authority::open(fresh_db("cpp-worker-no-outage"));
  Outages events;
  const auto start = steady::now();
  tenure::Worker w(a,
                   tenure::WorkerConfig("missing", "w", 10s).wait_timeout(200ms).outage_limit(0s).on_outage(
                       [&](const tenure::OutageEvent& e) { events.add(e); }),
                   complete);
  std::this_thread::sleep_for(1500ms);
  CHECK_FALSE(w.stopping());  // NotFound is no outage: a limit of 0 s does not stop it
  w.stop();
  w.join();
  CHECK(steady::now() - start < 10s);
  CHECK(w.outages() == 0);
  CHECK_FALSE(w.gave_up());
  CHECK(events.seen().empty());
}

TEST_CASE("worker: an outage limit out of range is refused at the start") {
  const tenure::Authority a = tenure::Authority::open(fresh_db("cpp-worker-outage-limit"));
  CHECK_THROWS_AS(tenure::Worker(a, tenure::WorkerConfig("p", "w", 10s).outage_limit(-1ms), complete),
                  tenure::InvalidDuration);
  CHECK_THROWS_AS(tenure::Worker(a, tenure::WorkerConfig("p", "w", 10s).outage_limit(25h), complete),
                  tenure::InvalidDuration);
}

TEST_CASE("worker: a store server that goes away is one outage; it ends when the server is back") {
  if (testsupport::on_postgres()) {
    Forwarder fw;
    const tenure::Authority a = tenure::Authority::open(fw.through(fresh_db("cpp-worker-outage")));
    a.create_production("p");
    Outages events;
    Reports reports;
    tenure::Worker w(a,
                     tenure::WorkerConfig("p", "w", 10s).slots(3).wait_timeout(200ms).on_outage(
                         [&](const tenure::OutageEvent& e) { events.add(e); }),
                     complete, [&](const tenure::Report& r) { reports.add(r); });
    std::this_thread::sleep_for(300ms);
    fw.down();
    for (int i = 0; i < 500 && w.outages() == 0; ++i) std::this_thread::sleep_for(10ms);
    CHECK(w.outages() == 1);
    std::this_thread::sleep_for(1500ms);
    fw.up();
    for (int i = 0; i < 1000 && events.count(tenure::OutageEvent::Kind::Ended) == 0; ++i)
      std::this_thread::sleep_for(10ms);
    a.submit("p", tenure::JobSpec("after"));
    for (int i = 0; i < 1000 && reports.size() == 0; ++i) std::this_thread::sleep_for(10ms);
    w.stop();
    w.join();
    CHECK(w.outages() == 1);  // three slots noticed it: one outage
    CHECK_FALSE(w.gave_up());
    const std::vector<tenure::OutageEvent> seen = events.seen();
    REQUIRE(seen.size() == 2);
    CHECK(seen[0].kind == tenure::OutageEvent::Kind::Began);
    REQUIRE(seen[0].error.has_value());
    CHECK((seen[0].error->status() == TENURE_STORE || seen[0].error->status() == TENURE_BUSY));
    CHECK(seen[1].kind == tenure::OutageEvent::Kind::Ended);
    CHECK(seen[1].duration >= 1s);
    REQUIRE(reports.size() == 1);
    CHECK(reports.all[0].result == tenure::JobResult::Completed);
  } else {
    std::printf("skipped on SQLite: a SQLite store has no server to lose\n");
  }
}

TEST_CASE("worker: a store server away past the outage limit stops the worker once") {
  if (testsupport::on_postgres()) {
    Forwarder fw;
    const tenure::Authority a = tenure::Authority::open(fw.through(fresh_db("cpp-worker-gave-up")));
    a.create_production("p");
    Outages events;
    tenure::Worker w(a,
                     tenure::WorkerConfig("p", "w", 10s).slots(2).wait_timeout(200ms).outage_limit(1s).on_outage(
                         [&](const tenure::OutageEvent& e) { events.add(e); }),
                     complete);
    std::this_thread::sleep_for(300ms);
    fw.down();
    const auto down = steady::now();
    for (int i = 0; i < 2000 && !w.stopping(); ++i) std::this_thread::sleep_for(10ms);
    CHECK(w.stopping());
    CHECK(steady::now() - down >= 1s);
    CHECK(steady::now() - down < 10s);
    w.join();  // does not throw
    CHECK(w.gave_up());
    CHECK(w.outages() == 1);
    const std::vector<tenure::OutageEvent> seen = events.seen();
    REQUIRE(seen.size() == 2);
    CHECK(seen[0].kind == tenure::OutageEvent::Kind::Began);
    CHECK(seen[1].kind == tenure::OutageEvent::Kind::GaveUp);
    CHECK(seen[1].duration >= 1s);
  } else {
    std::printf("skipped on SQLite: a SQLite store has no server to lose\n");
  }
}
