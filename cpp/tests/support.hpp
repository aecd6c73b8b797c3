// Shared helpers of the C++ test suite (not part of the installed header).
#ifndef TENURE_CPP_TEST_SUPPORT_HPP
#define TENURE_CPP_TEST_SUPPORT_HPP

#include <tenure/tenure.hpp>

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace testsupport {

/// True when the suite runs against PostgreSQL: `TENURE_TEST_BACKEND=postgres`
/// (set by `cargo xtask` for its PostgreSQL run, the same variable the Rust
/// suite reads), with `TENURE_TEST_PG_URL` (a maintenance URL) and
/// `TENURE_TEST_CREATEDB` (the `createdb` program; PGHOST/PGPORT/PGUSER name
/// the server). The suite needs no libpq: databases are made by `createdb`.
inline bool on_postgres() {
  const char* b = std::getenv("TENURE_TEST_BACKEND");
  return b != nullptr && std::strcmp(b, "postgres") == 0;
}

/// On PostgreSQL: prints why the check is skipped and returns true. Use as
/// `if (!testsupport::skip_on_postgres("why")) { ...SQLite-only checks... }`;
/// never `return` from inside a SUBCASE (doctest would not discover the
/// subcases after it).
inline bool skip_on_postgres(const char* why) {
  if (!on_postgres()) return false;
  std::printf("skipped on PostgreSQL: %s\n", why);
  std::fflush(stdout);
  return true;
}

/// A new empty database on the `TENURE_TEST_PG_URL` server; returns its URL.
inline std::string fresh_pg_database() {
  static std::atomic<unsigned> counter{0};
  static const unsigned salt = std::random_device{}();
  const char* url = std::getenv("TENURE_TEST_PG_URL");
  const char* createdb = std::getenv("TENURE_TEST_CREATEDB");
  if (url == nullptr || createdb == nullptr)
    throw std::runtime_error("TENURE_TEST_BACKEND=postgres needs TENURE_TEST_PG_URL and TENURE_TEST_CREATEDB");
  char name[64];
  std::snprintf(name, sizeof name, "cpp_%ld_%08x_%u", static_cast<long>(getpid()), salt, counter++);
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    execl(createdb, createdb, name, static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error(std::string("createdb failed for ") + name);
  // the maintenance URL with its database name replaced
  const std::string base(url);
  const std::size_t scheme = base.find("://");
  const std::size_t slash = base.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  const std::size_t query = base.find('?');
  return base.substr(0, slash) + "/" + name + (query == std::string::npos ? "" : base.substr(query));
}

/// Scratch directory given by the harness (`TENURE_TEST_DIR`), else /tmp.
inline std::string scratch() {
  const char* d = std::getenv("TENURE_TEST_DIR");
  return d && *d ? std::string(d) : std::string("/tmp");
}

/// A fresh store: a path whose earlier file of that name (and its WAL) is
/// removed, or on PostgreSQL the URL of a new empty database (every call
/// makes a new one; open the returned address twice for two handles).
inline std::string fresh_db(const std::string& name) {
  if (on_postgres()) return fresh_pg_database();
  const std::string p = scratch() + "/" + name + ".db";
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::remove((p + suffix).c_str());
  return p;
}

/// Path of this test program (for re-executing it as a child).
std::string self_exe();

/// The child of the statistics' clock-jump test (`test_stats.cpp`): the
/// statistics of the store at `db` against a full scan, under the clock
/// libfaketime gives; 0 if every check passed.
int stats_jump_child(const char* db);

/// The reports of a `tenure::Worker`, collected from its report callback
/// (which runs on the worker's threads).
struct Reports {
  std::mutex m;
  std::vector<tenure::Report> all;
  void add(const tenure::Report& r) {
    const std::lock_guard<std::mutex> lk(m);
    all.push_back(r);
  }
  std::size_t size() {
    const std::lock_guard<std::mutex> lk(m);
    return all.size();
  }
};

}  // namespace testsupport

#endif
