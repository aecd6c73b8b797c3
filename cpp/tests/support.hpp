// Shared helpers of the C++ test suite (not part of the installed header).
#ifndef TENURE_CPP_TEST_SUPPORT_HPP
#define TENURE_CPP_TEST_SUPPORT_HPP

#include <tenure/tenure.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace testsupport {

/// Scratch directory given by the harness (`TENURE_TEST_DIR`), else /tmp.
inline std::string scratch() {
  const char* d = std::getenv("TENURE_TEST_DIR");
  return d && *d ? std::string(d) : std::string("/tmp");
}

/// A fresh store path: any earlier file of that name (and its WAL) is removed.
inline std::string fresh_db(const std::string& name) {
  const std::string p = scratch() + "/" + name + ".db";
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::remove((p + suffix).c_str());
  return p;
}

/// Path of this test program (for re-executing it as a child).
std::string self_exe();

}  // namespace testsupport

#endif
