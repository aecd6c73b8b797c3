// The C++ cells of the bad input census (docs/reliability.md): invalid UTF-8, empty
// strings, truncated tokens, bad request IDs and batch sizes of the idempotent
// calls, a read-only store and a full disk.
#include <doctest/doctest.h>

#include <cstdint>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "support.hpp"

using namespace std::chrono_literals;
using testsupport::fresh_db;

namespace {

std::vector<char> slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

tenure::Authority store_with_job(const std::string& path) {
  auto a = tenure::Authority::open(path);
  a.create_production("p");
  a.submit("p", tenure::JobSpec("kept"));
  return a;
}

bool write_text(const char* path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  return static_cast<bool>(f);
}

// In a child: a private mount namespace (a user namespace too when not
// root), then `dir` bind-mounted read-only over itself.
bool private_read_only(const std::string& dir) {
  const auto uid = getuid();
  const auto gid = getgid();
  if (unshare(CLONE_NEWNS) != 0) {
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) return false;
    if (!write_text("/proc/self/setgroups", "deny")) return false;
    if (!write_text("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1")) return false;
    if (!write_text("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1")) return false;
  }
  return mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 &&
         mount(dir.c_str(), dir.c_str(), nullptr, MS_BIND, nullptr) == 0 &&
         mount(nullptr, dir.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr) == 0;
}

int child_status(pid_t pid) {
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  return WEXITSTATUS(status);
}

}  // namespace

TEST_CASE("census: invalid UTF-8 is InvalidArgument") {
  const auto a = store_with_job(fresh_db("census-utf8"));
  CHECK_THROWS_AS(a.create_production("bad\xff\xfe"), tenure::InvalidArgument);
  CHECK_THROWS_AS(a.claim_next("p", "holder\xc3(", 10s), tenure::InvalidArgument);
  CHECK_THROWS_AS(a.claim("p", "kept", "w\x80", 10s), tenure::InvalidArgument);
  CHECK(a.job("p", "kept").attempts == 0);
}

TEST_CASE("census: empty strings are InvalidArgument") {
  const auto a = store_with_job(fresh_db("census-empty"));
  CHECK_THROWS_AS(a.create_production(""), tenure::InvalidArgument);
  CHECK_THROWS_AS(a.claim("p", "", "w", 10s), tenure::InvalidArgument);
  CHECK_THROWS_AS(a.claim("p", "kept", "", 10s), tenure::InvalidArgument);
  CHECK_THROWS_AS(a.claim_next("", "w", 10s), tenure::InvalidArgument);
  CHECK_THROWS_AS(a.import_lease(""), tenure::TokenMalformed);
  CHECK(a.job("p", "kept").attempts == 0);
}

TEST_CASE("census: bad request IDs, batch sizes and durations of the idempotent calls change nothing") {
  const auto a = store_with_job(fresh_db("census-request"));
  const std::size_t events = a.events(0, 10000).size();
  const std::string nul("a\0b", 3);
  for (const std::string& id : {std::string(""), std::string(129, 'r'), std::string("a/b"), std::string("-r"),
                                std::string("r q"), std::string("r\xff"), nul}) {
    CHECK_THROWS_AS(tenure::ClaimRequest{id}, tenure::InvalidArgument);
  }
  CHECK_NOTHROW(tenure::ClaimRequest(std::string(128, 'r')));
  tenure::ClaimRequest r("req");
  CHECK_THROWS_AS(a.claim_idempotent("p", "kept", "w", 0s, r), tenure::InvalidDuration);
  CHECK_THROWS_AS(a.claim_idempotent("p", "kept", "w", std::chrono::nanoseconds(1500), r), tenure::InvalidDuration);
  CHECK_THROWS_AS(a.claim_idempotent("p", "kept", "w\x80", 10s, r), tenure::InvalidArgument);
  CHECK_THROWS_AS(a.claim_next_many_idempotent("p", "w", 10s, 0, r), tenure::InvalidArgument);
  CHECK_THROWS_AS(a.claim_next_many_idempotent("p", "w", 10s, 1001, r), tenure::InvalidArgument);
  CHECK_THROWS_AS(a.claim_next_many_idempotent("p", "w", 10s, SIZE_MAX, r), tenure::InvalidArgument);
  CHECK_THROWS_AS(a.claim_next_many_idempotent("p", "", 10s, 1, r), tenure::InvalidArgument);
  CHECK_THROWS_AS(a.claim_next_many_idempotent("p", "w", -1s, 1, r), tenure::InvalidDuration);
  {
    tenure::Edit e = a.edit();
    CHECK_THROWS_AS(e.claim_next_many_idempotent("p", "w", 10s, 1001, r), tenure::InvalidArgument);
    CHECK_THROWS_AS(e.claim_idempotent("", "kept", "w", 10s, r), tenure::InvalidArgument);
    e.commit();
  }
  const tenure::ClaimRequest taken = std::move(r);
  CHECK_THROWS_AS(a.claim_next_idempotent("p", "w", 10s, r), tenure::InvalidArgument);  // moved from: no handle
  CHECK_THROWS_AS(a.renew_many_idempotent({}, 10s), tenure::InvalidArgument);
  CHECK_THROWS_AS(a.release_many_idempotent({}), tenure::InvalidArgument);
  CHECK_THROWS_AS(a.fail_many_idempotent({}), tenure::InvalidArgument);
  CHECK_THROWS_AS(a.complete_many_idempotent({}), tenure::InvalidArgument);
  CHECK(a.job("p", "kept").attempts == 0);
  CHECK(a.events(0, 10000).size() == events);
  // the request was never recorded: it claims afresh
  const tenure::Applied<tenure::Lease> l = a.claim_idempotent("p", "kept", "w", 10s, taken);
  CHECK(!l.replayed);
  // a bad item is that lease's own InvalidArgument; text with a NUL byte fails the whole call
  const std::size_t claimed = a.events(0, 10000).size();
  CHECK(a.fail_many_idempotent({{l.value, std::string(1025, 'x')}})[0].status == TENURE_INVALID_ARGUMENT);
  CHECK(a.complete_many_idempotent({{l.value, {{"tenure.k", "v"}}}})[0].status == TENURE_INVALID_ARGUMENT);
  CHECK_THROWS_AS(a.fail_many_idempotent({{l.value, nul}}), tenure::InvalidArgument);
  CHECK_THROWS_AS(l.value.fail_retry_after_idempotent(nul, 1s), tenure::InvalidArgument);
  CHECK(a.events(0, 10000).size() == claimed);
  CHECK(l.value.status() == tenure::LeaseStatus::Active);
  l.value.release();
}

TEST_CASE("census: a truncated token is TokenMalformed") {
  const auto a = store_with_job(fresh_db("census-trunc"));
  const tenure::Lease l = a.claim("p", "kept", "w", 60s);
  const std::string token = l.export_token();
  for (std::size_t cut : {token.size() - 1, token.size() / 2, std::string("tenure-lease-v1.").size() + 3}) {
    CHECK_THROWS_AS(a.import_lease(std::string_view(token).substr(0, cut)), tenure::TokenMalformed);
  }
  l.complete();
}

TEST_CASE("census: a read-only store is Store and stays unchanged") {
  const std::string dir = testsupport::scratch() + "/census-ro";
  mkdir(dir.c_str(), 0755);
  const std::string path = dir + "/ro.db";
  for (const char* s : {"", "-wal", "-shm", "-tenure-queue"}) std::remove((path + s).c_str());
  { const auto a = store_with_job(path); }
  const auto before = slurp(path);
  REQUIRE(!before.empty());
  std::fflush(nullptr);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (!private_read_only(dir)) _exit(97);
    if (open((dir + "/probe").c_str(), O_WRONLY | O_CREAT, 0600) >= 0) _exit(96);
    try {
      const auto a = tenure::Authority::open(path);
      int refused = 0;
      try { a.create_production("x"); } catch (const tenure::Store&) { refused++; }
      try { a.submit("p", tenure::JobSpec("k")); } catch (const tenure::Store&) { refused++; }
      try { (void)a.claim_next("p", "w", 60s); } catch (const tenure::Store&) { refused++; }
      _exit(refused == 3 ? 11 : 3);
    } catch (const tenure::Store&) {
      _exit(10);
    } catch (...) {
      _exit(2);
    }
  }
  const int code = child_status(pid);
  if (code == 97) MESSAGE("no private read-only mount possible here");
  CHECK((code == 10 || code == 11));
  CHECK(slurp(path) == before);
  const auto a = tenure::Authority::open(path);
  CHECK(a.check_store() == 0);
}

TEST_CASE("census: a full disk is Store and keeps committed work") {
  const std::string path = fresh_db("census-full");
  { const auto a = store_with_job(path); }
  struct stat sb {};
  REQUIRE(stat(path.c_str(), &sb) == 0);
  std::fflush(nullptr);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    try {
      const auto a = tenure::Authority::open(path);
      signal(SIGXFSZ, SIG_IGN);
      const rlimit lim{static_cast<rlim_t>(sb.st_size) + 8192, RLIM_INFINITY};
      if (setrlimit(RLIMIT_FSIZE, &lim) != 0) _exit(3);
      const std::vector<char> payload(500000, 'x');
      for (int i = 0; i < 8; i++) {
        a.submit("p", tenure::JobSpec("big" + std::to_string(i)).payload(payload.data(), payload.size()));
      }
      _exit(4);
    } catch (const tenure::Store&) {
      _exit(0);
    } catch (...) {
      _exit(5);
    }
  }
  CHECK(child_status(pid) == 0);
  const auto a = tenure::Authority::open(path);
  CHECK(a.job("p", "kept").state == tenure::JobState::Requested);
  CHECK_THROWS_AS(a.job("p", "big0"), tenure::NotFound);
  CHECK(a.check_store() == 0);
}
