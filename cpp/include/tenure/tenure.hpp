// tenure.hpp: header-only C++17 projection of the tenure C ABI (libtenure).
//
// Include this one header and link `-ltenure` (`pkg-config --cflags --libs
// tenure` after `cargo xtask dist PREFIX`). It needs `tenure.h` on the
// include path (it is installed beside it) and calls nothing but the C ABI:
// every rule (ID syntax, the 1 µs ..= 24 h lease range, state transitions,
// expiry, token checks) is the core's. This header only converts types and
// maps statuses to exceptions.
//
// Contract of the projection (decisions docs/design.md leaves to the
// projections):
// - Handles: `Authority`, `Lease`, `Edit`, `WaitCancel` and `Keeper` are
//   move-only RAII owners of the C handles (`std::unique_ptr` with the C `_free` as deleter); `capi()`
//   returns the raw handle (still owned). Destructors never throw. Destroying
//   a `Lease` frees memory only: it never writes, renews or releases.
//   Destroying an open `Edit` aborts it (the C `tenure_edit_free`).
//   Destroying a `Keeper` stops its renewals and never releases the lease.
//   A
//   moved-from object holds no handle; using it throws `InvalidArgument`
//   (the C ABI rejects the NULL handle) and its accessors return empty values.
// - Strings: `std::string_view` in, `std::string` out. A view containing a
//   NUL byte cannot cross the C boundary: it throws `InvalidArgument` before
//   anything is called.
// - Payloads: pointer + size (and `std::span` when compiled as C++20) in,
//   `std::vector<std::uint8_t>` out.
// - Errors: every non-OK status throws the subclass of `tenure::Error` named
//   after the C status (`TENURE_STALE_LEASE` -> `tenure::StaleLease`), with
//   the library's message (never a secret) as `what()`; a status this header
//   does not know (a newer library) throws `tenure::Error` itself.
// - Durations: every duration parameter is a `std::chrono::duration<Rep,
//   Period>`. Non-integral `Rep` (floating point, `bool`, a class) is a
//   compile error with a `static_assert` message. The count is converted to
//   whole microseconds exactly, for any integral `Rep` and any `Period`; a
//   value that is not a whole number of microseconds or overflows `int64_t`
//   on the way throws `InvalidDuration` and calls nothing. No rounding ever.
//   The range (a TTL > 0 and <= 24 h, a delay 0 ..= 366 days) is checked by
//   the core through the C ABI.
// - Times: `tenure::time_point`, a `system_clock` time point with
//   microsecond resolution (µs since the Unix epoch, exactly as stored).
// - Threads: an `Authority` and a `Lease` may be shared by threads (all their
//   member functions are `const` and thread-safe); an `Edit` is used by one
//   thread at a time; `WaitCancel` and `Keeper` are thread-safe.
// - Worker: `tenure::Worker` only sequences C calls (wait, keep alive, read
//   the payload, complete / fail / release); it adds no rule.
// - Secrets: only `Lease::export_token()` reveals a lease credential. No type
//   here has a stream operator or other text form that could print one.
// - ABI: `tenure::abi_version` holds the header's version; `check_abi()`
//   (called by `Authority::open`) throws `AbiMismatch` if the loaded library
//   has another major or an older minor than the header.

// The language standard is checked before anything else: below C++17 the
// header stops with one #error instead of a cascade of template errors.
// MSVC reports the standard in `_MSVC_LANG` (`__cplusplus` stays 199711L
// unless /Zc:__cplusplus is given).
#if defined(_MSVC_LANG) && _MSVC_LANG > __cplusplus
#define TENURE_HPP_CPLUSPLUS _MSVC_LANG
#elif defined(__cplusplus)
#define TENURE_HPP_CPLUSPLUS __cplusplus
#else
#define TENURE_HPP_CPLUSPLUS 0L
#endif

#if TENURE_HPP_CPLUSPLUS < 201703L
#error "tenure.hpp requires C++17 or later (compile with -std=c++17 or /std:c++17); C code includes tenure.h"
#else

#ifndef TENURE_TENURE_HPP
#define TENURE_TENURE_HPP

#include <tenure.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <ratio>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#if TENURE_HPP_CPLUSPLUS >= 202002L
#include <span>
#include <stop_token>
#endif

namespace tenure {

// ---------------------------------------------------------------------------
// Versions
// ---------------------------------------------------------------------------

/// The C ABI version this header was generated for (`TENURE_ABI_*`).
namespace abi_version {
/// Major: incompatible changes; the shared library's soname number.
inline constexpr std::uint32_t major = TENURE_ABI_MAJOR;
/// Minor: additions.
inline constexpr std::uint32_t minor = TENURE_ABI_MINOR;
/// `(major << 16) | minor`, the form `tenure_abi_version()` returns.
inline constexpr std::uint32_t packed = TENURE_ABI_VERSION;
}  // namespace abi_version

/// The ABI version of the library loaded at run time, `(major << 16) | minor`.
inline std::uint32_t loaded_abi_version() noexcept { return tenure_abi_version(); }

/// Whether a library reporting ABI `packed` can serve this header: same
/// major, and a minor at least the header's (the header may use every symbol
/// of its minor).
constexpr bool abi_compatible(std::uint32_t packed) noexcept {
  return (packed >> 16) == abi_version::major && (packed & 0xFFFFu) >= abi_version::minor;
}

/// The package version of the loaded library (e.g. `"0.1.0"`).
inline std::string version() {
  const char* v = tenure_version();
  return v ? std::string(v) : std::string();
}

/// The library loaded at run time does not match this header's ABI.
/// Not a `tenure::Error`: no C call failed, the program is mis-linked.
class AbiMismatch : public std::runtime_error {
 public:
  explicit AbiMismatch(std::uint32_t loaded)
      : std::runtime_error("tenure: libtenure ABI " + std::to_string(loaded >> 16) + "." +
                           std::to_string(loaded & 0xFFFFu) + " cannot serve tenure.hpp built for ABI " +
                           std::to_string(abi_version::major) + "." +
                           std::to_string(abi_version::minor) +
                           " (the major must match and the minor be at least the header's)"),
        loaded_(loaded) {}
  /// The loaded library's packed ABI version.
  std::uint32_t loaded() const noexcept { return loaded_; }

 private:
  std::uint32_t loaded_;
};

/// Throw `AbiMismatch` unless `abi_compatible(loaded_abi_version())`.
inline void check_abi() {
  const std::uint32_t v = loaded_abi_version();
  if (!abi_compatible(v)) throw AbiMismatch(v);
}

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/// A static snake_case name for a status (`"stale_lease"`, `"ok"`,
/// `"unknown"` for a number the loaded library does not know).
inline std::string_view status_name(std::uint32_t status) noexcept {
  const char* n = tenure_status_name(status);
  return n ? std::string_view(n) : std::string_view("unknown");
}

/// Base of every error a C call reported: the `tenure_status` and the
/// library's message (`what()`; it never contains a secret). Thrown as is
/// for a status this header does not name (a newer library).
class Error : public std::runtime_error {
 public:
  Error(tenure_status status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  /// The C status number.
  tenure_status status() const noexcept { return status_; }
  /// The status's snake_case name (see `status_name`).
  std::string_view name() const noexcept { return status_name(status_); }

 private:
  tenure_status status_;
};

#define TENURE_HPP_ERROR_CLASS(Name, Status)                                      \
  /** Thrown for `Status`. */                                                      \
  class Name : public Error {                                                      \
   public:                                                                         \
    explicit Name(const std::string& message) : Error(Status, message) {}          \
    static constexpr tenure_status code = Status;                                  \
  };

TENURE_HPP_ERROR_CLASS(InvalidArgument, TENURE_INVALID_ARGUMENT)
TENURE_HPP_ERROR_CLASS(InvalidDuration, TENURE_INVALID_DURATION)
TENURE_HPP_ERROR_CLASS(NotFound, TENURE_NOT_FOUND)
TENURE_HPP_ERROR_CLASS(Conflict, TENURE_CONFLICT)
TENURE_HPP_ERROR_CLASS(NotClaimable, TENURE_NOT_CLAIMABLE)
TENURE_HPP_ERROR_CLASS(NoJobAvailable, TENURE_NO_JOB_AVAILABLE)
TENURE_HPP_ERROR_CLASS(StaleLease, TENURE_STALE_LEASE)
TENURE_HPP_ERROR_CLASS(LeaseExpired, TENURE_LEASE_EXPIRED)
TENURE_HPP_ERROR_CLASS(LeaseClosed, TENURE_LEASE_CLOSED)
TENURE_HPP_ERROR_CLASS(LeasePending, TENURE_LEASE_PENDING)
TENURE_HPP_ERROR_CLASS(NotExtended, TENURE_NOT_EXTENDED)
TENURE_HPP_ERROR_CLASS(Cancelled, TENURE_CANCELLED)
TENURE_HPP_ERROR_CLASS(JobTerminal, TENURE_JOB_TERMINAL)
TENURE_HPP_ERROR_CLASS(ClockRollback, TENURE_CLOCK_ROLLBACK)
TENURE_HPP_ERROR_CLASS(TokenMalformed, TENURE_TOKEN_MALFORMED)
TENURE_HPP_ERROR_CLASS(TokenTooLarge, TENURE_TOKEN_TOO_LARGE)
TENURE_HPP_ERROR_CLASS(TokenUnsupportedVersion, TENURE_TOKEN_UNSUPPORTED_VERSION)
TENURE_HPP_ERROR_CLASS(Busy, TENURE_BUSY)
TENURE_HPP_ERROR_CLASS(SchemaTooNew, TENURE_SCHEMA_TOO_NEW)
TENURE_HPP_ERROR_CLASS(Store, TENURE_STORE)
TENURE_HPP_ERROR_CLASS(Internal, TENURE_INTERNAL)
TENURE_HPP_ERROR_CLASS(HoldLimit, TENURE_HOLD_LIMIT)
TENURE_HPP_ERROR_CLASS(HistoryPruned, TENURE_HISTORY_PRUNED)
TENURE_HPP_ERROR_CLASS(ProductionLive, TENURE_PRODUCTION_LIVE)
TENURE_HPP_ERROR_CLASS(ProductionPaused, TENURE_PRODUCTION_PAUSED)
TENURE_HPP_ERROR_CLASS(ConcurrencyLimit, TENURE_CONCURRENCY_LIMIT)
TENURE_HPP_ERROR_CLASS(RateLimited, TENURE_RATE_LIMITED)
TENURE_HPP_ERROR_CLASS(JobLive, TENURE_JOB_LIVE)

#undef TENURE_HPP_ERROR_CLASS

/// The Python projection's names for the same two classes.
using StoreError = Store;
using InternalError = Internal;

/// Throw the exception class of `status` with `message`. `TENURE_OK` and
/// numbers this header does not name throw the base `Error`.
[[noreturn]] inline void throw_status(tenure_status status, const std::string& message) {
  switch (static_cast<std::uint32_t>(status)) {
    case TENURE_INVALID_ARGUMENT: throw InvalidArgument(message);
    case TENURE_INVALID_DURATION: throw InvalidDuration(message);
    case TENURE_NOT_FOUND: throw NotFound(message);
    case TENURE_CONFLICT: throw Conflict(message);
    case TENURE_NOT_CLAIMABLE: throw NotClaimable(message);
    case TENURE_NO_JOB_AVAILABLE: throw NoJobAvailable(message);
    case TENURE_STALE_LEASE: throw StaleLease(message);
    case TENURE_LEASE_EXPIRED: throw LeaseExpired(message);
    case TENURE_LEASE_CLOSED: throw LeaseClosed(message);
    case TENURE_LEASE_PENDING: throw LeasePending(message);
    case TENURE_NOT_EXTENDED: throw NotExtended(message);
    case TENURE_CANCELLED: throw Cancelled(message);
    case TENURE_JOB_TERMINAL: throw JobTerminal(message);
    case TENURE_CLOCK_ROLLBACK: throw ClockRollback(message);
    case TENURE_TOKEN_MALFORMED: throw TokenMalformed(message);
    case TENURE_TOKEN_TOO_LARGE: throw TokenTooLarge(message);
    case TENURE_TOKEN_UNSUPPORTED_VERSION: throw TokenUnsupportedVersion(message);
    case TENURE_BUSY: throw Busy(message);
    case TENURE_SCHEMA_TOO_NEW: throw SchemaTooNew(message);
    case TENURE_STORE: throw Store(message);
    case TENURE_INTERNAL: throw Internal(message);
    case TENURE_HOLD_LIMIT: throw HoldLimit(message);
    case TENURE_HISTORY_PRUNED: throw HistoryPruned(message);
    case TENURE_PRODUCTION_LIVE: throw ProductionLive(message);
    case TENURE_PRODUCTION_PAUSED: throw ProductionPaused(message);
    case TENURE_CONCURRENCY_LIMIT: throw ConcurrencyLimit(message);
    case TENURE_RATE_LIMITED: throw RateLimited(message);
    case TENURE_JOB_LIVE: throw JobLive(message);
    default: throw Error(status, message);
  }
}

/// The message of the last failed C call on this thread (`""` if none).
inline std::string last_error_message() {
  std::size_t need = 0;
  (void)tenure_last_error_message(nullptr, 0, &need);
  if (need <= 1) return std::string();
  std::string s(need, '\0');
  if (tenure_last_error_message(&s[0], s.size(), &need) != TENURE_OK) return std::string();
  s.resize(need - 1);
  return s;
}

/// For code mixing C calls on `capi()` handles with this header: do nothing
/// for `TENURE_OK`, else throw the status's class with the thread's last
/// error message. Call it right after the C call, on the same thread.
inline void check(tenure_status status) {
  if (status == TENURE_OK) return;
  std::string msg = last_error_message();
  if (msg.empty()) msg = std::string(status_name(status));
  throw_status(status, msg);
}

// ---------------------------------------------------------------------------
// Durations and times
// ---------------------------------------------------------------------------

/// A point in the authority's time: µs since the Unix epoch, exactly.
using time_point = std::chrono::time_point<std::chrono::system_clock, std::chrono::microseconds>;

namespace detail {

constexpr std::intmax_t gcd(std::intmax_t a, std::intmax_t b) noexcept {
  while (b != 0) {
    const std::intmax_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/// `Period` seconds = `num / den` µs, reduced (`gcd(num, den) == 1`), so a
/// count `v` is a whole number of µs exactly when `den` divides it. `num`
/// itself may not fit `intmax_t` (e.g. `std::exa`): then every non-zero
/// count overflows.
template <class Period>
struct micro_factor {
  static constexpr std::intmax_t g = gcd(Period::den, 1000000);
  static constexpr std::intmax_t den = Period::den / g;
  static constexpr std::intmax_t mul = 1000000 / g;
  static constexpr bool num_overflows = Period::num > std::numeric_limits<std::intmax_t>::max() / mul;
  static constexpr std::intmax_t num = num_overflows ? 0 : Period::num * mul;
};

template <class Rep>
inline constexpr bool is_count_rep_v =
    std::is_integral<Rep>::value && !std::is_same<std::remove_cv_t<Rep>, bool>::value;

[[noreturn]] inline void bad_duration(const char* why, std::intmax_t num, std::intmax_t den) {
  throw InvalidDuration("invalid duration: " + std::string(why) + " (a count of " + std::to_string(num) +
                        "/" + std::to_string(den) + " s periods; tenure never rounds)");
}

inline std::string cstr(std::string_view s, const char* what) {
  if (s.find('\0') != std::string_view::npos) {
    throw InvalidArgument(std::string("invalid argument: ") + what + " contains a NUL byte");
  }
  return std::string(s);
}

/// `strings` checked as `cstr` (each named `what`) and viewed as the C
/// array of their pointers; `data()` is null for an empty list.
class CStrList {
 public:
  CStrList(const std::vector<std::string>& strings, const char* what) {
    names_.reserve(strings.size());
    for (const auto& s : strings) names_.push_back(cstr(s, what));
    ptrs_.reserve(names_.size());
    for (const auto& n : names_) ptrs_.push_back(n.c_str());
  }
  CStrList(const CStrList&) = delete;
  CStrList& operator=(const CStrList&) = delete;
  const char* const* data() const { return ptrs_.empty() ? nullptr : ptrs_.data(); }
  std::size_t size() const { return ptrs_.size(); }

 private:
  std::vector<std::string> names_;
  std::vector<const char*> ptrs_;
};

inline std::string str(const char* p) { return p ? std::string(p) : std::string(); }

inline std::optional<std::string> opt_str(const char* p) {
  if (!p) return std::nullopt;
  return std::string(p);
}

inline time_point tp(std::int64_t us) noexcept { return time_point(std::chrono::microseconds(us)); }

inline void wipe(void* p, std::size_t n) noexcept {
  volatile unsigned char* b = static_cast<volatile unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) b[i] = 0;
}

/// `std::unique_ptr` deleter calling the C `_free` function `F` (each
/// handle and list type has one).
template <class T, void (*F)(T*)>
struct Free {
  void operator()(T* h) const noexcept { F(h); }
};
using AuthorityFree = Free<tenure_authority, &tenure_authority_free>;
using OptionsFree = Free<tenure_options, &tenure_options_free>;
using LeaseFree = Free<tenure_lease, &tenure_lease_free>;
using EditFree = Free<tenure_edit, &tenure_edit_free>;
using JobViewFree = Free<tenure_job_view, &tenure_job_view_free>;
using JobListFree = Free<tenure_job_list, &tenure_job_list_free>;
using ProductionListFree = Free<tenure_production_list, &tenure_production_list_free>;
using ScheduleDefFree = Free<tenure_schedule_def, &tenure_schedule_def_free>;
using ScheduleListFree = Free<tenure_schedule_list, &tenure_schedule_list_free>;
using FactListFree = Free<tenure_fact_list, &tenure_fact_list_free>;
using EventListFree = Free<tenure_event_list, &tenure_event_list_free>;
using StatsFree = Free<tenure_stats, &tenure_stats_free>;
using GatesFree = Free<tenure_gates, &tenure_gates_free>;
using WaitCancelFree = Free<tenure_wait_cancel, &tenure_wait_cancel_free>;
using ClaimRequestFree = Free<tenure_claim_request, &tenure_claim_request_free>;
using KeeperFree = Free<tenure_keeper, &tenure_keeper_free>;
using JobOptionsFree = Free<tenure_job_options, &tenure_job_options_free>;

}  // namespace detail

/// Convert a duration to whole microseconds, exactly.
///
/// - Compile time: `Rep` must be a built-in integral type other than `bool`
///   (floating point and class types are rejected with a `static_assert`).
/// - Run time: throws `InvalidDuration` if `d` is not a whole number of
///   microseconds (e.g. `nanoseconds(1500)`, `duration<int, ratio<1, 3>>(1)`)
///   or if the microsecond count does not fit `int64_t`. Nothing is rounded.
/// - The sign and the 24 h bound are NOT checked here: every lease call
///   passes the exact count to the C ABI, whose core rejects `<= 0` and
///   `> 24 h` with `TENURE_INVALID_DURATION` (thrown as `InvalidDuration`).
template <class Rep, class Period>
std::int64_t to_micros(std::chrono::duration<Rep, Period> d) {
  using R = std::remove_cv_t<Rep>;
  static_assert(!std::is_floating_point<R>::value,
                "tenure: a floating-point std::chrono::duration Rep is rejected: lease durations must be "
                "whole microseconds and tenure never rounds; use an integral count such as "
                "std::chrono::milliseconds");
  static_assert(!std::is_same<R, bool>::value,
                "tenure: std::chrono::duration<bool> is rejected: bool is not a count of time; use an "
                "integral count such as std::chrono::seconds");
  static_assert(std::is_floating_point<R>::value || std::is_same<R, bool>::value || std::is_integral<R>::value,
                "tenure: a non-integral (class) std::chrono::duration Rep is rejected: only built-in "
                "integral counts convert to microseconds exactly; use e.g. std::chrono::seconds");
  if constexpr (detail::is_count_rep_v<R>) {
    using F = detail::micro_factor<Period>;
    using W = std::conditional_t<(sizeof(R) > sizeof(std::intmax_t)), R,
                                 std::conditional_t<std::is_signed<R>::value, std::intmax_t, std::uintmax_t>>;
    const W v = static_cast<W>(d.count());
    if (v % static_cast<W>(F::den) != 0) {
      detail::bad_duration("not a whole number of microseconds", Period::num, Period::den);
    }
    const W q = v / static_cast<W>(F::den);
    if (q == 0) return 0;
    if constexpr (F::num_overflows) {
      detail::bad_duration("overflows int64_t microseconds", Period::num, Period::den);
    } else {
      constexpr std::int64_t hi = std::numeric_limits<std::int64_t>::max() / F::num;
      if (q > 0 && q > static_cast<W>(hi)) {
        detail::bad_duration("overflows int64_t microseconds", Period::num, Period::den);
      }
      if constexpr (std::is_signed<W>::value) {
        constexpr std::int64_t lo = std::numeric_limits<std::int64_t>::min() / F::num;
        if (q < static_cast<W>(lo)) {
          detail::bad_duration("overflows int64_t microseconds", Period::num, Period::den);
        }
      }
      return static_cast<std::int64_t>(q) * static_cast<std::int64_t>(F::num);
    }
  } else {
    (void)d;
    return 0;
  }
}

// ---------------------------------------------------------------------------
// Value types
// ---------------------------------------------------------------------------

/// A job's observed state (`tenure_job_state`). `Any` is a listing filter.
enum class JobState : std::uint32_t {
  Any = TENURE_JOB_ANY,
  Requested = TENURE_JOB_REQUESTED,
  Claimed = TENURE_JOB_CLAIMED,
  Expired = TENURE_JOB_EXPIRED,
  Completed = TENURE_JOB_COMPLETED,
  Failed = TENURE_JOB_FAILED,
  Cancelled = TENURE_JOB_CANCELLED,
};

/// The state's static name (`"requested"`, ...; `"unknown"` for numbers the
/// library does not know).
inline std::string_view state_name(JobState s) noexcept {
  const char* n = tenure_job_state_name(static_cast<std::uint32_t>(s));
  return n ? std::string_view(n) : std::string_view("unknown");
}

/// Local status of a lease handle (`tenure_lease_status`).
enum class LeaseStatus : std::uint32_t {
  Pending = TENURE_LEASE_STATUS_PENDING,
  Active = TENURE_LEASE_STATUS_ACTIVE,
  Closed = TENURE_LEASE_STATUS_CLOSED,
};

/// Outcome of an idempotent submission (`tenure_submitted`).
enum class SubmitOutcome : std::uint32_t {
  Created = TENURE_SUBMITTED_CREATED,
  Existing = TENURE_SUBMITTED_EXISTING,
};

/// Outcome of a job cancel (`tenure_cancelled`).
enum class CancelOutcome : std::uint32_t {
  Now = TENURE_CANCELLED_NOW,
  Already = TENURE_CANCELLED_ALREADY,
};

/// SQLite `synchronous` setting.
enum class Synchronous : std::uint32_t {
  Full = TENURE_SYNCHRONOUS_FULL,
  Normal = TENURE_SYNCHRONOUS_NORMAL,
};

/// A retention policy (docs/design.md, "Retention"): how old, on the
/// authority's clock, history may get before pruning removes it. An age not
/// set keeps that kind forever. Ages are `std::chrono` durations of whole
/// seconds (integral `Rep`, checked at compile time like every duration
/// here); a value that is not a whole number of seconds, or not positive,
/// throws `InvalidDuration` and calls nothing; the upper bound (3650 days)
/// is the core's, checked through the C ABI.
class Retention {
 public:
  /// Events older than this are pruned, oldest first.
  template <class Rep, class Period>
  Retention& event_age(std::chrono::duration<Rep, Period> d) {
    event_s_ = seconds(d);
    return *this;
  }
  /// Terminal jobs whose last transition is older than this are pruned
  /// with their facts (a tombstone keeps their ID and content digest).
  template <class Rep, class Period>
  Retention& terminal_job_age(std::chrono::duration<Rep, Period> d) {
    terminal_job_s_ = seconds(d);
    return *this;
  }
  /// Tombstones older than this are pruned; the job ID is then new again.
  template <class Rep, class Period>
  Retention& tombstone_age(std::chrono::duration<Rep, Period> d) {
    tombstone_s_ = seconds(d);
    return *this;
  }
  /// The ages in whole seconds as the C ABI takes them (0: not set).
  std::uint64_t event_age_s() const noexcept { return event_s_; }
  std::uint64_t terminal_job_age_s() const noexcept { return terminal_job_s_; }
  std::uint64_t tombstone_age_s() const noexcept { return tombstone_s_; }

 private:
  template <class Rep, class Period>
  static std::uint64_t seconds(std::chrono::duration<Rep, Period> d) {
    const std::int64_t us = to_micros(d);
    if (us <= 0) {
      throw InvalidDuration("invalid duration: a retention age must be positive (leave it unset to keep that kind)");
    }
    if (us % 1000000 != 0) {
      throw InvalidDuration("invalid duration: a retention age must be a whole number of seconds; tenure never rounds");
    }
    return static_cast<std::uint64_t>(us / 1000000);
  }
  std::uint64_t event_s_ = 0;
  std::uint64_t terminal_job_s_ = 0;
  std::uint64_t tombstone_s_ = 0;
};

/// What one prune step removed (`tenure_prune_report`).
struct PruneReport {
  std::uint64_t jobs = 0;        ///< terminal jobs removed (each leaves a tombstone)
  std::uint64_t tombstones = 0;  ///< tombstones removed
  std::uint64_t events = 0;      ///< events removed
  std::uint64_t horizon = 0;     ///< the history horizon after the step
  bool more = false;             ///< a kind hit the per-step bound: call again
};

/// What `Authority::delete_production` removed (`tenure_deleted_counts`).
struct DeletedCounts {
  std::uint64_t jobs = 0;
  std::uint64_t facts = 0;
  std::uint64_t events = 0;
  std::uint64_t tombstones = 0;
};

/// How to open a store. Defaults are the C ABI's (`tenure_open_options_init`).
class Options {
 public:
  Options() { check(tenure_open_options_init(&raw_)); }
  /// SQLite `synchronous` (default `Full`).
  Options& synchronous(Synchronous s) noexcept {
    raw_.synchronous = static_cast<std::uint32_t>(s);
    return *this;
  }
  /// How long a write waits for the writer lock before `Busy`. Converted
  /// exactly to µs (see `to_micros`); the range is checked when opening.
  template <class Rep, class Period>
  Options& busy_timeout(std::chrono::duration<Rep, Period> d) {
    raw_.busy_timeout_us = to_micros(d);
    return *this;
  }
  /// Group commit (default on): concurrent one-step calls of one
  /// `Authority` on a SQLite store share one transaction and one commit;
  /// off, every call is its own transaction (`tenure_options_set_group_commit`,
  /// ABI 1.1; docs/design.md, "Group commit").
  Options& group_commit(bool on) noexcept {
    group_commit_ = on;
    return *this;
  }
  /// Whether group commit is on.
  bool group_commit() const noexcept { return group_commit_; }
  /// A retention policy the authority applies automatically: one bounded
  /// prune step after every 64 committed one-step calls (every 8 while the
  /// last step hit its bound), in its own short transaction (`tenure_options_set_retention`, ABI 1.1; off by default,
  /// a policy with no age set turns it off).
  Options& retention(const Retention& policy) noexcept {
    retention_ = policy;
    return *this;
  }
  /// The automatic retention policy (no age set: off).
  const Retention& retention() const noexcept { return retention_; }
  /// The C struct (the settings it has fields for).
  const tenure_open_options& capi() const noexcept { return raw_; }

 private:
  tenure_open_options raw_{};
  bool group_commit_ = true;
  Retention retention_{};
};

/// A retry back-off policy (docs/design.md, "Scheduling and hold limits"):
/// after a retryable failure of attempt n that names no delay, the job is
/// due after min(cap, base × 2^(n-1)). Both are `std::chrono` durations
/// converted exactly to µs (`to_micros`); the rules (base positive, cap ≥
/// base, both at most 366 days) are the core's, checked where the policy is
/// used (`JobSpec::backoff` at submission, `set_production_backoff`), which
/// throws `InvalidDuration`.
class Backoff {
 public:
  template <class Rep1, class Period1, class Rep2, class Period2>
  Backoff(std::chrono::duration<Rep1, Period1> base, std::chrono::duration<Rep2, Period2> cap)
      : base_(to_micros(base)), cap_(to_micros(cap)) {}
  /// The first step.
  std::chrono::microseconds base() const noexcept { return base_; }
  /// The largest step.
  std::chrono::microseconds cap() const noexcept { return cap_; }
  friend bool operator==(const Backoff& a, const Backoff& b) noexcept {
    return a.base_ == b.base_ && a.cap_ == b.cap_;
  }
  friend bool operator!=(const Backoff& a, const Backoff& b) noexcept { return !(a == b); }

 private:
  std::chrono::microseconds base_;
  std::chrono::microseconds cap_;
};

/// One job to submit. Owns copies of its ID and payload. Defaults are the C
/// ABI's (`tenure_job_spec_init`: priority 0, max_attempts 3, no payload,
/// due at once, no hold limit, no back-off of its own).
class JobSpec {
 public:
  explicit JobSpec(std::string_view job) : job_(detail::cstr(job, "job ID")) {
    check(tenure_job_spec_init(&raw_));
  }
  /// Opaque payload bytes (copied; the core bounds the size). `data` may be
  /// NULL only when `size` is 0 (else `InvalidArgument`).
  JobSpec& payload(const void* data, std::size_t size) {
    if (data == nullptr && size != 0) throw InvalidArgument("invalid argument: payload is NULL but its size is not 0");
    const auto* b = static_cast<const std::uint8_t*>(data);
    payload_.assign(b, b + (data ? size : 0));
    return *this;
  }
#if TENURE_HPP_CPLUSPLUS >= 202002L
  /// Opaque payload bytes (copied).
  JobSpec& payload(std::span<const std::byte> bytes) { return payload(bytes.data(), bytes.size()); }
  /// Opaque payload bytes (copied).
  JobSpec& payload(std::span<const std::uint8_t> bytes) { return payload(bytes.data(), bytes.size()); }
#endif
  /// Higher runs first; ties go to the oldest submission.
  JobSpec& priority(std::int32_t p) noexcept {
    raw_.priority = p;
    return *this;
  }
  /// Claims allowed in total (the core checks 1 ..= 1000).
  JobSpec& max_attempts(std::uint32_t n) noexcept {
    raw_.max_attempts = n;
    return *this;
  }
  /// Not claimable until `delay` after the submission is recorded (exact
  /// µs; zero: at once; the core allows 0 ..= 366 days). Not part of the
  /// job's content: resubmitting with another delay is `Existing`.
  template <class Rep, class Period>
  JobSpec& not_before(std::chrono::duration<Rep, Period> delay) {
    not_before_ = std::chrono::microseconds(to_micros(delay));
    return *this;
  }
  /// Hard ownership limit per claim: no lease on the job lives past its
  /// claim time + `limit` (exact µs; the core requires it positive and at
  /// most 366 days); a renewal it stops throws `HoldLimit`.
  template <class Rep, class Period>
  JobSpec& max_hold(std::chrono::duration<Rep, Period> limit) {
    max_hold_ = std::chrono::microseconds(to_micros(limit));
    return *this;
  }
  /// The job's own retry back-off (overrides its production's).
  JobSpec& backoff(const Backoff& policy) noexcept {
    backoff_ = policy;
    return *this;
  }
  const std::string& job() const noexcept { return job_; }
  const std::vector<std::uint8_t>& payload() const noexcept { return payload_; }
  const std::optional<std::chrono::microseconds>& not_before() const noexcept { return not_before_; }
  const std::optional<std::chrono::microseconds>& max_hold() const noexcept { return max_hold_; }
  const std::optional<Backoff>& backoff() const noexcept { return backoff_; }
  /// The C job options of the scheduling fields (`tenure_job_options`, ABI
  /// 1.1), or NULL when none is set; the range checks are the core's.
  std::unique_ptr<tenure_job_options, detail::JobOptionsFree> capi_options() const {
    if (!not_before_ && !max_hold_ && !backoff_) return nullptr;
    tenure_job_options* raw = nullptr;
    check(tenure_job_options_new(&raw));
    std::unique_ptr<tenure_job_options, detail::JobOptionsFree> o(raw);
    if (not_before_) check(tenure_job_options_set_not_before(raw, not_before_->count()));
    if (max_hold_) check(tenure_job_options_set_max_hold(raw, max_hold_->count()));
    if (backoff_) check(tenure_job_options_set_backoff(raw, backoff_->base().count(), backoff_->cap().count()));
    return o;
  }
  /// The C struct, pointing into this object (valid while it lives unchanged).
  tenure_job_spec capi() const noexcept {
    tenure_job_spec s = raw_;
    s.job = job_.c_str();
    s.payload = payload_.empty() ? nullptr : payload_.data();
    s.payload_len = payload_.size();
    return s;
  }

 private:
  std::string job_;
  std::vector<std::uint8_t> payload_;
  tenure_job_spec raw_{};
  std::optional<std::chrono::microseconds> not_before_;
  std::optional<std::chrono::microseconds> max_hold_;
  std::optional<Backoff> backoff_;
};

/// A caller fact published at completion.
struct Fact {
  std::string key;
  std::string value;
};

/// A published fact as read back (`tenure.*` keys are the authority's
/// provenance: claim ID, holder, attempt, completion time, ...).
struct PublishedFact {
  std::string job;
  std::string key;
  std::string value;
};

/// A snapshot of one job.
struct JobView {
  std::string production;
  std::string job;
  JobState state = JobState::Any;
  std::uint32_t attempts = 0;
  std::uint32_t max_attempts = 0;
  std::int32_t priority = 0;
  std::optional<std::string> holder;    ///< of the latest claim
  std::optional<std::string> claim_id;  ///< of the latest claim
  std::optional<time_point> expires;    ///< of the latest claim
  time_point created{};
  time_point updated{};
  std::uint64_t payload_len = 0;
  std::optional<std::string> last_error;  ///< reason of the latest failure
  /// A requested job's not-before time: not claimable while the
  /// authority's clock reads earlier (none once claimed, or due at once).
  std::optional<time_point> due;
  std::optional<std::chrono::microseconds> max_hold;  ///< hard per-claim ownership limit
  std::optional<Backoff> backoff;                     ///< the job's own retry back-off
  /// The latest progress checkpoint a lease of the job wrote, kept across
  /// attempts (ABI 1.2; a single job's view only, never a listing's).
  std::optional<std::vector<std::uint8_t>> progress;
};

/// A schedule's definition (`tenure_schedule_def`, ABI 1.2; see
/// docs/schedules.md): a name and a cadence, the slot jobs' options, the
/// catch-up bound and the overlap policy. Bad values throw the core's
/// error (`InvalidArgument`, `InvalidDuration`) where they are set or, for
/// the name, the attempts and the catch-up bound, where the definition is
/// used.
class ScheduleDef {
 public:
  /// Slots at the multiples of `interval` since the Unix epoch (whole
  /// seconds, 1 s ..= 366 days).
  template <class Rep, class Period>
  static ScheduleDef every(std::string_view name, std::chrono::duration<Rep, Period> interval) {
    const std::string n = detail::cstr(name, "schedule name");
    tenure_schedule_def* raw = nullptr;
    check(tenure_schedule_def_new_every(n.c_str(), to_micros(interval), &raw));
    return ScheduleDef(raw);
  }
  /// Slots at the matches of a five-field cron expression in UTC.
  static ScheduleDef cron(std::string_view name, std::string_view expression) {
    const std::string n = detail::cstr(name, "schedule name");
    const std::string e = detail::cstr(expression, "cron expression");
    tenure_schedule_def* raw = nullptr;
    check(tenure_schedule_def_new_cron(n.c_str(), e.c_str(), &raw));
    return ScheduleDef(raw);
  }
  /// Slots at the matches of a five-field cron expression read in the
  /// named IANA time zone `tz` (`"Europe/Paris"`, case-sensitive); an
  /// unknown zone is `InvalidArgument`. Slots stay instants (see
  /// docs/schedules.md for daylight-saving changes).
  static ScheduleDef cron(std::string_view name, std::string_view expression, std::string_view tz) {
    const std::string n = detail::cstr(name, "schedule name");
    const std::string e = detail::cstr(expression, "cron expression");
    const std::string z = detail::cstr(tz, "time zone");
    tenure_schedule_def* raw = nullptr;
    check(tenure_schedule_def_new_cron_in(n.c_str(), e.c_str(), z.c_str(), &raw));
    return ScheduleDef(raw);
  }
  /// Every slot job's payload.
  ScheduleDef& payload(std::string_view bytes) {
    check(tenure_schedule_def_set_payload(h_.get(), reinterpret_cast<const std::uint8_t*>(bytes.data()),
                                          bytes.size()));
    return *this;
  }
  /// Every slot job's priority and attempts.
  ScheduleDef& job(std::int32_t priority, std::uint32_t max_attempts) {
    check(tenure_schedule_def_set_job(h_.get(), priority, max_attempts));
    return *this;
  }
  /// Every slot job's hold limit.
  template <class Rep, class Period>
  ScheduleDef& max_hold(std::chrono::duration<Rep, Period> limit) {
    check(tenure_schedule_def_set_max_hold(h_.get(), to_micros(limit)));
    return *this;
  }
  /// Every slot job's retry back-off.
  ScheduleDef& backoff(const Backoff& b) {
    check(tenure_schedule_def_set_backoff(h_.get(), b.base().count(), b.cap().count()));
    return *this;
  }
  /// The catch-up bound (1 ..= 1000) and whether a slot is skipped while
  /// the previous slot's job is live.
  ScheduleDef& catch_up(std::uint32_t n, bool skip_overlap = false) {
    check(tenure_schedule_def_set_catch_up(h_.get(), n, skip_overlap));
    return *this;
  }
  const tenure_schedule_def* raw() const noexcept { return h_.get(); }

 private:
  explicit ScheduleDef(tenure_schedule_def* raw) : h_(raw) {}
  std::unique_ptr<tenure_schedule_def, detail::ScheduleDefFree> h_;
};

/// A schedule as listed.
struct ScheduleInfo {
  std::string production;
  std::string name;
  std::string cadence;  ///< `"every 30s"`, `"cron 0 2 * * *"`, `"cron 0 2 * * * Europe/Paris"`
  std::optional<std::string> tz;  ///< a cron cadence's named time zone (none: UTC, or an interval)
  bool paused = false;
  std::uint32_t catch_up = 1;
  std::optional<time_point> last_slot;  ///< the newest slot enqueued
  std::optional<time_point> next_slot;  ///< none while paused
};

/// What one scheduler step did.
struct ScheduleStep {
  std::size_t enqueued = 0;            ///< slot jobs created
  std::uint64_t dropped = 0;           ///< slots dropped (catch-up bound, overlap)
  std::optional<time_point> next_slot;  ///< none without an active schedule
};

/// A production as listed.
struct ProductionView {
  std::string name;
  time_point created{};
  std::optional<time_point> cancelled;
  std::optional<Backoff> backoff;  ///< default retry back-off of its jobs
};

/// One event (never carries a secret).
struct Event {
  std::uint64_t seq = 0;
  time_point at{};
  std::string production;
  std::optional<std::string> job;  ///< empty for production events
  std::string kind;                ///< `"claimed"`, `"completed"`, ... (open set)
  JobState state = JobState::Any;  ///< job state after the event (`Any` if none)
  std::optional<std::string> claim_id;
  std::optional<std::string> holder;
  std::uint32_t attempt = 0;  ///< 0 if none
  std::optional<time_point> expires;
  std::string detail;
};

/// Paging and filtering of `Authority::jobs` (C defaults: any state, from
/// the start, `limit` 0 = the C default page of 100).
struct ListQuery {
  JobState state = JobState::Any;
  std::optional<std::string> after;  ///< last job ID of the previous page
  std::size_t limit = 0;
};

/// The authority's clock reading and durable high-water mark.
struct ClockReading {
  time_point now{};
  time_point mark{};
  bool blocked = false;  ///< guarded operations are refused (clock below mark)
};

/// Exact nearest-rank percentiles of a set of durations (none when `count`
/// is 0).
struct Percentiles {
  std::uint64_t count = 0;
  std::optional<std::chrono::microseconds> p50;
  std::optional<std::chrono::microseconds> p95;
  std::optional<std::chrono::microseconds> p99;
};

/// A production's flow over the statistics' window.
struct Flow {
  std::uint64_t claims = 0;
  std::uint64_t completions = 0;
  std::uint64_t retryable_failures = 0;  ///< failures that left the job requested
  std::uint64_t permanent_failures = 0;  ///< failures that ended the job
  std::uint64_t expiries = 0;            ///< leases whose expiry fell in the window
  Percentiles wait;                      ///< from due to claim
  Percentiles run;                       ///< from claim to close
  bool truncated = false;                ///< the window held more events than are read
};

/// A production's rate limit as set: at most `claims` claims per
/// `interval`, at most `burst` at once.
struct RateLimit {
  std::uint32_t claims = 0;
  std::chrono::microseconds interval{0};
  std::uint32_t burst = 0;
  friend bool operator==(const RateLimit& a, const RateLimit& b) noexcept {
    return a.claims == b.claims && a.interval == b.interval && a.burst == b.burst;
  }
  friend bool operator!=(const RateLimit& a, const RateLimit& b) noexcept { return !(a == b); }
};

/// A production's claim gates as set (`Authority::gates`).
struct Gates {
  std::optional<time_point> paused;  ///< when it was paused, if it is
  std::optional<std::uint32_t> concurrency_limit;
  std::optional<RateLimit> rate_limit;
};

/// One production's statistics: exact counts by observed state.
struct ProductionStats {
  std::string name;
  bool cancelled = false;
  std::uint64_t waiting_due = 0;
  std::uint64_t waiting_later = 0;
  std::uint64_t claimed_live = 0;
  std::uint64_t claimed_expired = 0;  ///< expired with attempts left, not yet reclaimed
  std::uint64_t completed = 0;
  std::uint64_t failed = 0;
  std::uint64_t cancelled_jobs = 0;
  std::optional<std::chrono::microseconds> oldest_due_age;
  std::optional<time_point> next_due;  ///< earliest due time of a job not yet due
  std::uint64_t expiring_within = 0;   ///< live leases expiring within the horizon
  std::uint32_t max_live_attempts = 0;
  Gates gates;  ///< the claim gates, read in the same snapshot
  Flow flow;
};

/// Queue statistics read in one snapshot (`Authority::stats`).
struct Stats {
  time_point now{};  ///< the reading the figures are classified against
  time_point high_water{};
  std::vector<ProductionStats> productions;
};

namespace detail {

/// Gates from a C handle's accessors (`tenure_gates_*` or
/// `tenure_production_stats_*`).
template <class H>
Gates gates_from(const H* h, bool (*paused_us)(const H*, std::int64_t*),
                 bool (*concurrency)(const H*, std::uint32_t*),
                 bool (*rate)(const H*, std::uint32_t*, std::int64_t*, std::uint32_t*)) {
  Gates out;
  std::int64_t us = 0;
  if (paused_us(h, &us)) out.paused = tp(us);
  std::uint32_t k = 0;
  if (concurrency(h, &k)) out.concurrency_limit = k;
  RateLimit r;
  std::int64_t interval = 0;
  if (rate(h, &r.claims, &interval, &r.burst)) {
    r.interval = std::chrono::microseconds(interval);
    out.rate_limit = r;
  }
  return out;
}

inline std::uint64_t stats_count(const tenure_production_stats* p, std::uint32_t which) {
  std::uint64_t n = 0;
  tenure_production_stats_count(p, which, &n);
  return n;
}

inline std::optional<std::chrono::microseconds> stats_us(const tenure_production_stats* p, std::uint32_t which) {
  std::int64_t us = 0;
  if (!tenure_production_stats_time_us(p, which, &us)) return std::nullopt;
  return std::chrono::microseconds(us);
}

inline Stats stats_from(tenure_stats* raw) {
  std::unique_ptr<tenure_stats, StatsFree> owned(raw);
  const tenure_stats* s = owned.get();
  Stats out;
  out.now = tp(tenure_stats_now_us(s));
  out.high_water = tp(tenure_stats_high_water_us(s));
  const std::size_t n = tenure_stats_len(s);
  out.productions.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const tenure_production_stats* p = tenure_stats_get(s, i);
    ProductionStats ps;
    ps.name = str(tenure_production_stats_name(p));
    ps.cancelled = tenure_production_stats_cancelled(p);
    ps.waiting_due = stats_count(p, TENURE_STATS_WAITING_DUE);
    ps.waiting_later = stats_count(p, TENURE_STATS_WAITING_LATER);
    ps.claimed_live = stats_count(p, TENURE_STATS_CLAIMED_LIVE);
    ps.claimed_expired = stats_count(p, TENURE_STATS_CLAIMED_EXPIRED);
    ps.completed = stats_count(p, TENURE_STATS_COMPLETED);
    ps.failed = stats_count(p, TENURE_STATS_FAILED);
    ps.cancelled_jobs = stats_count(p, TENURE_STATS_CANCELLED);
    ps.oldest_due_age = stats_us(p, TENURE_STATS_OLDEST_DUE_AGE);
    if (auto d = stats_us(p, TENURE_STATS_NEXT_DUE)) ps.next_due = time_point(*d);
    ps.expiring_within = stats_count(p, TENURE_STATS_EXPIRING_WITHIN);
    ps.max_live_attempts = tenure_production_stats_max_live_attempts(p);
    ps.gates = gates_from(p, &tenure_production_stats_paused_us, &tenure_production_stats_concurrency_limit,
                          &tenure_production_stats_rate_limit);
    Flow& f = ps.flow;
    f.claims = stats_count(p, TENURE_STATS_CLAIMS);
    f.completions = stats_count(p, TENURE_STATS_COMPLETIONS);
    f.retryable_failures = stats_count(p, TENURE_STATS_RETRYABLE_FAILURES);
    f.permanent_failures = stats_count(p, TENURE_STATS_PERMANENT_FAILURES);
    f.expiries = stats_count(p, TENURE_STATS_EXPIRIES);
    f.wait = Percentiles{stats_count(p, TENURE_STATS_WAIT_COUNT), stats_us(p, TENURE_STATS_WAIT_P50),
                         stats_us(p, TENURE_STATS_WAIT_P95), stats_us(p, TENURE_STATS_WAIT_P99)};
    f.run = Percentiles{stats_count(p, TENURE_STATS_RUN_COUNT), stats_us(p, TENURE_STATS_RUN_P50),
                        stats_us(p, TENURE_STATS_RUN_P95), stats_us(p, TENURE_STATS_RUN_P99)};
    f.truncated = tenure_production_stats_flow_truncated(p);
    out.productions.push_back(std::move(ps));
  }
  return out;
}

/// C facts pointing into `strings` (which must outlive the result).
inline std::vector<tenure_fact> c_facts(const std::vector<Fact>& facts, std::vector<std::string>& strings) {
  strings.clear();
  strings.reserve(facts.size() * 2);
  for (const Fact& f : facts) {
    strings.push_back(cstr(f.key, "fact key"));
    strings.push_back(cstr(f.value, "fact value"));
  }
  std::vector<tenure_fact> out;
  out.reserve(facts.size());
  for (std::size_t i = 0; i < facts.size(); ++i) {
    out.push_back(tenure_fact{strings[2 * i].c_str(), strings[2 * i + 1].c_str()});
  }
  return out;
}

inline JobView job_from(const tenure_job_view* v) {
  JobView j;
  j.production = str(tenure_job_view_production(v));
  j.job = str(tenure_job_view_job(v));
  j.state = static_cast<JobState>(tenure_job_view_state(v));
  j.attempts = tenure_job_view_attempts(v);
  j.max_attempts = tenure_job_view_max_attempts(v);
  j.priority = tenure_job_view_priority(v);
  j.holder = opt_str(tenure_job_view_holder(v));
  j.claim_id = opt_str(tenure_job_view_claim_id(v));
  std::int64_t us = 0;
  if (tenure_job_view_expires_us(v, &us)) j.expires = tp(us);
  j.created = tp(tenure_job_view_created_us(v));
  j.updated = tp(tenure_job_view_updated_us(v));
  j.payload_len = tenure_job_view_payload_len(v);
  j.last_error = opt_str(tenure_job_view_last_error(v));
  if (tenure_job_view_due_us(v, &us)) j.due = tp(us);
  if (tenure_job_view_max_hold_us(v, &us)) j.max_hold = std::chrono::microseconds(us);
  std::int64_t cap = 0;
  if (tenure_job_view_backoff_base_us(v, &us) && tenure_job_view_backoff_cap_us(v, &cap)) {
    j.backoff = Backoff(std::chrono::microseconds(us), std::chrono::microseconds(cap));
  }
  if (tenure_job_view_has_progress(v)) {
    const std::uint8_t* p = tenure_job_view_progress(v);
    j.progress = std::vector<std::uint8_t>(p, p + tenure_job_view_progress_len(v));
  }
  return j;
}

inline std::vector<PublishedFact> facts_from(tenure_fact_list* raw) {
  std::unique_ptr<tenure_fact_list, FactListFree> list(raw);
  std::vector<PublishedFact> out;
  const std::size_t n = tenure_fact_list_len(list.get());
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(PublishedFact{str(tenure_fact_list_job(list.get(), i)), str(tenure_fact_list_key(list.get(), i)),
                                str(tenure_fact_list_value(list.get(), i))});
  }
  return out;
}

inline std::vector<Event> events_from(tenure_event_list* raw) {
  std::unique_ptr<tenure_event_list, EventListFree> list(raw);
  const tenure_event_list* l = list.get();
  std::vector<Event> out;
  const std::size_t n = tenure_event_list_len(l);
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    Event e;
    e.seq = tenure_event_list_seq(l, i);
    e.at = tp(tenure_event_list_at_us(l, i));
    e.production = str(tenure_event_list_production(l, i));
    e.job = opt_str(tenure_event_list_job(l, i));
    e.kind = str(tenure_event_list_kind(l, i));
    e.state = static_cast<JobState>(tenure_event_list_state(l, i));
    e.claim_id = opt_str(tenure_event_list_claim_id(l, i));
    e.holder = opt_str(tenure_event_list_holder(l, i));
    e.attempt = tenure_event_list_attempt(l, i);
    std::int64_t us = 0;
    if (tenure_event_list_expires_us(l, i, &us)) e.expires = tp(us);
    e.detail = str(tenure_event_list_detail(l, i));
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace detail

// ---------------------------------------------------------------------------
// Waiting for work and keep-alive (ABI 1.1)
// ---------------------------------------------------------------------------

/// A cancel handle for `Authority::claim_next_wait` (`tenure_wait_cancel`).
/// Move-only; thread-safe: one thread cancels while others wait with it.
/// Cancellation is final and ends every wait using the handle, now or
/// later. `cancel()` is not async-signal-safe.
class WaitCancel {
 public:
  /// A new handle that is not cancelled.
  WaitCancel() {
    tenure_wait_cancel* raw = nullptr;
    check(tenure_wait_cancel_new(&raw));
    h_.reset(raw);
  }
  /// Adopt a C handle (may be NULL).
  explicit WaitCancel(tenure_wait_cancel* adopt) noexcept : h_(adopt) {}
  WaitCancel(WaitCancel&&) noexcept = default;
  WaitCancel& operator=(WaitCancel&&) noexcept = default;
  WaitCancel(const WaitCancel&) = delete;
  WaitCancel& operator=(const WaitCancel&) = delete;
  ~WaitCancel() = default;

  /// The C handle (still owned by this object).
  tenure_wait_cancel* capi() const noexcept { return h_.get(); }
  /// Cancel every wait using this handle (idempotent).
  void cancel() const { check(tenure_wait_cancel_cancel(h_.get())); }
  /// Whether `cancel()` was called (tells a cancelled wait from a timeout).
  bool is_cancelled() const noexcept { return tenure_wait_cancel_is_cancelled(h_.get()); }

 private:
  std::unique_ptr<tenure_wait_cancel, detail::WaitCancelFree> h_;
};

// ---------------------------------------------------------------------------
// Idempotent calls (ABI 1.1; docs/design.md, "Idempotent calls")
// ---------------------------------------------------------------------------

/// The outcome of an idempotent call: its value and whether it was a
/// replay of an earlier call that had already committed (nothing changed).
template <class T>
struct Applied {
  T value;
  bool replayed;
};

/// A claim's request ID with the secret the claim will carry, generated in
/// this process (`tenure_claim_request`). Pass the same object to retry a
/// claim whose answer was lost: `claim_idempotent`, `claim_next_idempotent` and
/// `claim_next_many_idempotent` (on `Authority` and `Edit`) then return the same
/// lease(s) while current. Move-only; thread-safe.
class ClaimRequest {
 public:
  /// A request with a fresh secret; the ID is validated like a job ID
  /// (`InvalidArgument`).
  explicit ClaimRequest(std::string_view request_id) {
    const std::string id = detail::cstr(request_id, "request ID");
    tenure_claim_request* raw = nullptr;
    check(tenure_claim_request_new(id.c_str(), &raw));
    h_.reset(raw);
  }
  ClaimRequest(ClaimRequest&&) noexcept = default;
  ClaimRequest& operator=(ClaimRequest&&) noexcept = default;
  ClaimRequest(const ClaimRequest&) = delete;
  ClaimRequest& operator=(const ClaimRequest&) = delete;
  ~ClaimRequest() = default;

  /// The C handle (still owned by this object).
  tenure_claim_request* capi() const noexcept { return h_.get(); }

 private:
  std::unique_ptr<tenure_claim_request, detail::ClaimRequestFree> h_;
};

/// What a `Keeper` is doing (`tenure_keeper_state`).
enum class KeeperState : std::uint32_t {
  Running = TENURE_KEEPER_RUNNING,
  Stopped = TENURE_KEEPER_STOPPED,
  LeaseClosed = TENURE_KEEPER_LEASE_CLOSED,
  Refused = TENURE_KEEPER_REFUSED,
};

/// Renews one lease on a library thread (`tenure_keeper`, made by
/// `Lease::keep_alive`). Move-only RAII: the destructor stops it (waiting
/// for a renewal under way) and never releases the lease; it never throws.
/// Thread-safe. It owns what it needs: the `Lease` and `Authority` it came
/// from may be destroyed first.
class Keeper {
 public:
  /// Adopt a C handle (may be NULL).
  explicit Keeper(tenure_keeper* adopt) noexcept : h_(adopt) {}
  Keeper(Keeper&&) noexcept = default;
  Keeper& operator=(Keeper&&) noexcept = default;
  Keeper(const Keeper&) = delete;
  Keeper& operator=(const Keeper&) = delete;
  ~Keeper() = default;

  /// The C handle (still owned by this object).
  tenure_keeper* capi() const noexcept { return h_.get(); }
  /// Stop renewing; after it returns no renewal happens. Never releases.
  void stop() const { check(tenure_keeper_stop(h_.get())); }
  /// Running, stopped, the lease closed by its owner, or refused.
  KeeperState status() const { return raw_status().first; }
  /// The refused renewal that stopped the keeper (its status and message),
  /// if one did.
  std::optional<Error> error() const {
    const auto [st, err] = raw_status();
    if (st != KeeperState::Refused) return std::nullopt;
    std::size_t need = 0;
    (void)tenure_keeper_error_message(h_.get(), nullptr, 0, &need);
    std::string msg(need > 0 ? need : 1, '\0');
    if (tenure_keeper_error_message(h_.get(), &msg[0], msg.size(), &need) == TENURE_OK && need > 0) {
      msg.resize(need - 1);
    } else {
      msg = std::string(status_name(err));
    }
    return Error(err, msg);
  }
  /// Throw the refusal's own exception class (`StaleLease`, `Cancelled`,
  /// ...) if a refused renewal stopped the keeper; else do nothing.
  void throw_if_refused() const {
    if (const std::optional<Error> e = error()) throw_status(e->status(), e->what());
  }
  /// How many renewals it has made.
  std::uint64_t renewals() const noexcept { return tenure_keeper_renewals(h_.get()); }

 private:
  std::pair<KeeperState, tenure_status> raw_status() const {
    tenure_keeper_state st{};
    tenure_status err{};
    check(tenure_keeper_status(h_.get(), &st, &err));
    return {static_cast<KeeperState>(st), err};
  }

  std::unique_ptr<tenure_keeper, detail::KeeperFree> h_;
};

// ---------------------------------------------------------------------------
// Lease
// ---------------------------------------------------------------------------

/// An owning lease on one job (`tenure_lease`). Move-only; thread-safe to
/// share by reference. Destroying it frees memory only: it never writes,
/// renews or releases (an abandoned lease simply expires).
class Lease {
 public:
  /// Adopt a C handle (may be NULL).
  explicit Lease(tenure_lease* adopt) noexcept : h_(adopt) {}
  Lease(Lease&&) noexcept = default;
  Lease& operator=(Lease&&) noexcept = default;
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  ~Lease() = default;

  /// The C handle (still owned by this object).
  tenure_lease* capi() const noexcept { return h_.get(); }
  /// Give up ownership of the C handle.
  tenure_lease* release_capi() noexcept { return h_.release(); }

  std::string production() const { return detail::str(tenure_lease_production(h_.get())); }
  std::string job() const { return detail::str(tenure_lease_job(h_.get())); }
  std::string holder() const { return detail::str(tenure_lease_holder(h_.get())); }
  /// The claim ID: the public fencing token (36-character UUID text).
  std::string claim_id() const { return detail::str(tenure_lease_claim_id(h_.get())); }
  /// Which attempt this claim is (1-based).
  std::uint32_t attempt() const noexcept { return tenure_lease_attempt(h_.get()); }
  /// Expiry as last confirmed by the store.
  time_point expires() const noexcept { return detail::tp(tenure_lease_expires_us(h_.get())); }
  /// The local status (the store decides; see docs/design.md, invariant 3).
  LeaseStatus status() const noexcept { return static_cast<LeaseStatus>(tenure_lease_status_get(h_.get())); }

  /// Extend the expiry to now + `ttl` (exact µs; must be later than the
  /// current expiry and commit before it).
  template <class Rep, class Period>
  void renew(std::chrono::duration<Rep, Period> ttl) const {
    const std::int64_t us = to_micros(ttl);
    check(tenure_lease_renew(h_.get(), us));
  }
  /// Store `progress` (at most 4096 bytes) as the job's progress
  /// checkpoint (ABI 1.2), which `JobView::progress` shows and the job's
  /// next attempt reads. Only the current lease may: a stale, expired or
  /// closed lease throws as for any transition and writes nothing.
  void checkpoint(const std::vector<std::uint8_t>& progress) const {
    check(tenure_lease_checkpoint(h_.get(), progress.data(), progress.size()));
  }
  /// `renew` and `checkpoint` in one transition (ABI 1.2): both or neither.
  template <class Rep, class Period>
  void renew_checkpoint(std::chrono::duration<Rep, Period> ttl, const std::vector<std::uint8_t>& progress) const {
    const std::int64_t us = to_micros(ttl);
    check(tenure_lease_renew_checkpoint(h_.get(), us, progress.data(), progress.size()));
  }
  /// Give the job back unfinished; closes the lease. Returns the job's state.
  JobState release() const {
    tenure_job_state st{};
    check(tenure_lease_release(h_.get(), &st));
    return static_cast<JobState>(st);
  }
  /// Report failure (`reason` at most 1024 bytes); closes the lease.
  JobState fail(std::string_view reason, bool permanent = false) const {
    const std::string r = detail::cstr(reason, "reason");
    tenure_job_state st{};
    check(tenure_lease_fail(h_.get(), r.c_str(), permanent, &st));
    return static_cast<JobState>(st);
  }
  /// Report a retryable failure and name when to retry: requested again,
  /// due `delay` after the failure is recorded (exact µs, 0 ..= 366 days;
  /// zero: at once, whatever back-off applies) while attempts remain, else
  /// failed. Closes the lease; returns the job's new state.
  template <class Rep, class Period>
  JobState fail_retry_after(std::string_view reason, std::chrono::duration<Rep, Period> delay) const {
    const std::int64_t us = to_micros(delay);
    const std::string r = detail::cstr(reason, "reason");
    tenure_job_state st{};
    check(tenure_lease_fail_retry_after(h_.get(), r.c_str(), us, &st));
    return static_cast<JobState>(st);
  }
  /// Complete the job, publishing `facts` (and provenance) atomically.
  void complete(const std::vector<Fact>& facts = {}) const {
    std::vector<std::string> keep;
    const std::vector<tenure_fact> c = detail::c_facts(facts, keep);
    check(tenure_lease_complete(h_.get(), c.empty() ? nullptr : c.data(), c.size()));
  }
  /// `renew` as an idempotent call: a renewal this lease already made to
  /// the expiry this one asks for is a replay. Returns the expiry.
  template <class Rep, class Period>
  Applied<time_point> renew_idempotent(std::chrono::duration<Rep, Period> ttl) const {
    const std::int64_t us = to_micros(ttl);
    std::int64_t exp = 0;
    bool replayed = false;
    check(tenure_lease_renew_idempotent(h_.get(), us, &exp, &replayed));
    return {detail::tp(exp), replayed};
  }
  /// `release` as an idempotent call: a release this lease already made is
  /// a replay with the state it left.
  Applied<JobState> release_idempotent() const {
    tenure_job_state st{};
    bool replayed = false;
    check(tenure_lease_release_idempotent(h_.get(), &st, &replayed));
    return {static_cast<JobState>(st), replayed};
  }
  /// `fail` as an idempotent call: the same reason and permanence is a
  /// replay; another is `Conflict`.
  Applied<JobState> fail_idempotent(std::string_view reason, bool permanent = false) const {
    const std::string r = detail::cstr(reason, "reason");
    tenure_job_state st{};
    bool replayed = false;
    check(tenure_lease_fail_idempotent(h_.get(), r.c_str(), permanent, &st, &replayed));
    return {static_cast<JobState>(st), replayed};
  }
  /// `fail_retry_after` as an idempotent call: the same reason and retry
  /// delay is a replay with the state it left; another reason, delay or a
  /// permanent failure is `Conflict`.
  template <class Rep, class Period>
  Applied<JobState> fail_retry_after_idempotent(std::string_view reason,
                                                std::chrono::duration<Rep, Period> delay) const {
    const std::int64_t us = to_micros(delay);
    const std::string r = detail::cstr(reason, "reason");
    tenure_job_state st{};
    bool replayed = false;
    check(tenure_lease_fail_retry_after_idempotent(h_.get(), r.c_str(), us, &st, &replayed));
    return {static_cast<JobState>(st), replayed};
  }
  /// `complete` as an idempotent call: the same facts (any order) is a
  /// replay (returns true); other facts are `Conflict`.
  bool complete_idempotent(const std::vector<Fact>& facts = {}) const {
    std::vector<std::string> keep;
    const std::vector<tenure_fact> c = detail::c_facts(facts, keep);
    bool replayed = false;
    check(tenure_lease_complete_idempotent(h_.get(), c.empty() ? nullptr : c.data(), c.size(), &replayed));
    return replayed;
  }
  /// Keep the lease alive: a `Keeper` renews it for `ttl` every `every`
  /// (shorter than `ttl`; both exact µs) until stopped, destroyed, refused,
  /// or the lease is closed. Renewals show in `expires()`. Never releases.
  template <class Rep1, class Period1, class Rep2, class Period2>
  Keeper keep_alive(std::chrono::duration<Rep1, Period1> ttl, std::chrono::duration<Rep2, Period2> every) const {
    const std::int64_t ttl_us = to_micros(ttl);
    const std::int64_t every_us = to_micros(every);
    tenure_keeper* out = nullptr;
    check(tenure_lease_keep_alive(h_.get(), ttl_us, every_us, &out));
    return Keeper(out);
  }
  /// Export the credential as token text (`tenure-lease-v1.…`). It is a
  /// password: keep it out of logs and command lines. Only an active lease
  /// can be exported. The intermediate buffer is wiped.
  std::string export_token() const {
    std::size_t need = 0;
    tenure_status st = tenure_lease_export_token(h_.get(), nullptr, 0, &need);
    if (st != TENURE_INVALID_ARGUMENT || need == 0) {
      check(st == TENURE_OK ? TENURE_INTERNAL : st);
    }
    std::vector<char> buf(need);
    st = tenure_lease_export_token(h_.get(), buf.data(), buf.size(), &need);
    if (st != TENURE_OK) {
      detail::wipe(buf.data(), buf.size());
      check(st);
    }
    std::string token(buf.data());
    detail::wipe(buf.data(), buf.size());
    return token;
  }

 private:
  std::unique_ptr<tenure_lease, detail::LeaseFree> h_;
};

// ---------------------------------------------------------------------------
// Batched calls
// ---------------------------------------------------------------------------

/// The leases of a batched call, by reference (`{a, b}` from `Lease`
/// objects, or `refs(vector)`).
using LeaseRefs = std::vector<std::reference_wrapper<const Lease>>;

/// References to every lease of `leases` (e.g. the result of
/// `claim_next_many`), in order.
inline LeaseRefs refs(const std::vector<Lease>& leases) {
  return LeaseRefs(leases.begin(), leases.end());
}

/// One lease of a `fail_many` batch.
struct Failure {
  std::reference_wrapper<const Lease> lease;
  std::string reason;
  bool permanent = false;
};

/// One lease of a `complete_many` batch with the facts it publishes.
struct Completion {
  std::reference_wrapper<const Lease> lease;
  std::vector<Fact> facts = {};
};

/// One lease's outcome in a batched call: `ok()`, or the status the single
/// call would have thrown for that lease (a refused lease changed nothing).
/// Never thrown by the batched call itself; `raise()` throws it as its
/// exception class if wanted.
struct Outcome {
  tenure_status status = TENURE_OK;
  /// `release_many`/`fail_many` (and their `_idempotent` forms): the job's
  /// new state if `ok()`, else `Any`.
  JobState state = JobState::Any;
  /// The `_idempotent` forms (and `claim_next_many_idempotent`): `ok()` as a
  /// replay of a call that had already committed (this lease changed
  /// nothing). Always false for the plain calls and refused leases.
  bool replayed = false;
  /// `renew_many_idempotent`: the lease's expiry if `ok()`; else empty.
  std::optional<time_point> expires = std::nullopt;

  bool ok() const noexcept { return status == TENURE_OK; }
  /// The status's snake_case name (`"ok"`, `"stale_lease"`, ...).
  std::string_view name() const noexcept { return status_name(status); }
  /// Throw the status's exception class (message: its name) unless `ok()`.
  void raise() const {
    if (!ok()) throw_status(status, std::string(name()));
  }
};

/// One member of a `claim_next_many_idempotent` batch: `ok()` with its `lease`,
/// or, in a replay where that member's claim is no longer current, the
/// claim's own status (`StaleLease`, `LeaseExpired`, `LeaseClosed`,
/// `Cancelled`, `NotFound`) with an empty `lease`. `replayed` is the
/// call's; `state` and `expires` are unset (the lease has its expiry).
struct Claimed : Outcome {
  Lease lease{nullptr};
};

namespace detail {

/// A vector's data, NULL when empty (the C call then refuses the size).
template <class T>
T* or_null(std::vector<T>& v) noexcept {
  return v.empty() ? nullptr : v.data();
}
template <class T>
const T* or_null(const std::vector<T>& v) noexcept {
  return v.empty() ? nullptr : v.data();
}

/// The length of a claim batch's out arrays for `n` jobs asked for: `n`,
/// at most `TENURE_MAX_BATCH` (the C call refuses a larger `n` before it
/// touches an array, so an absurd `n` is `InvalidArgument`, never an
/// allocation of that size).
inline std::size_t claim_room(std::size_t n) noexcept { return n < TENURE_MAX_BATCH ? n : TENURE_MAX_BATCH; }

/// A C `bool` array of `n` falses (NULL when `n` is 0).
inline std::unique_ptr<bool[]> bools(std::size_t n) {
  return n == 0 ? nullptr : std::make_unique<bool[]>(n);
}

/// The C handles of a batch.
inline std::vector<const tenure_lease*> c_leases(const LeaseRefs& leases) {
  std::vector<const tenure_lease*> out;
  out.reserve(leases.size());
  for (const Lease& l : leases) out.push_back(l.capi());
  return out;
}

/// The C arrays of a `fail_many` batch. They point into its own strings,
/// so it is neither copied nor moved.
struct FailArgs {
  explicit FailArgs(const std::vector<Failure>& items) : permanent(bools(items.size())) {
    leases.reserve(items.size());
    reasons.reserve(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
      leases.push_back(items[i].lease.get().capi());
      reasons.push_back(cstr(items[i].reason, "reason"));
      permanent[i] = items[i].permanent;
    }
    for (const std::string& r : reasons) ptrs.push_back(r.c_str());
  }
  FailArgs(const FailArgs&) = delete;
  FailArgs& operator=(const FailArgs&) = delete;

  std::vector<const tenure_lease*> leases;
  std::vector<std::string> reasons;
  std::vector<const char*> ptrs;
  std::unique_ptr<bool[]> permanent;
};

/// The C arrays of a `complete_many` batch (pointing into its own strings:
/// neither copied nor moved).
struct CompleteArgs {
  explicit CompleteArgs(const std::vector<Completion>& items) : keep(items.size()), facts(items.size()) {
    for (std::size_t i = 0; i < items.size(); ++i) {
      leases.push_back(items[i].lease.get().capi());
      facts[i] = c_facts(items[i].facts, keep[i]);
      ptrs.push_back(facts[i].empty() ? nullptr : facts[i].data());
      counts.push_back(facts[i].size());
    }
  }
  CompleteArgs(const CompleteArgs&) = delete;
  CompleteArgs& operator=(const CompleteArgs&) = delete;

  std::vector<const tenure_lease*> leases;
  std::vector<std::vector<std::string>> keep;
  std::vector<std::vector<tenure_fact>> facts;
  std::vector<const tenure_fact*> ptrs;
  std::vector<std::size_t> counts;
};

/// The out-arrays of a batched call of `n` leases (statuses, states,
/// replayed flags and, if `expiry`, expiries; a call passes those it has)
/// and the `Outcome`s they give.
class BatchOut {
 public:
  explicit BatchOut(std::size_t n, bool expiry = false)
      : st_(n, TENURE_OK), js_(n, TENURE_JOB_ANY), replayed_(bools(n)), exp_(expiry ? n : 0, 0) {}

  tenure_status* statuses() noexcept { return or_null(st_); }
  tenure_job_state* states() noexcept { return or_null(js_); }
  bool* replayed() noexcept { return replayed_.get(); }
  std::int64_t* expiries() noexcept { return or_null(exp_); }

  std::vector<Outcome> outcomes() const {
    std::vector<Outcome> out(st_.size());
    for (std::size_t i = 0; i < st_.size(); ++i) {
      out[i].status = st_[i];
      out[i].state = static_cast<JobState>(js_[i]);
      if (!out[i].ok()) continue;
      out[i].replayed = replayed_[i];
      if (!exp_.empty()) out[i].expires = tp(exp_[i]);
    }
    return out;
  }

 private:
  std::vector<tenure_status> st_;
  std::vector<tenure_job_state> js_;
  std::unique_ptr<bool[]> replayed_;
  std::vector<std::int64_t> exp_;
};

}  // namespace detail

// ---------------------------------------------------------------------------
// Operations shared by Authority and Edit
// ---------------------------------------------------------------------------

namespace detail {

/// The C functions behind the operations `Authority` and `Edit` share, per
/// C handle type: the two sets have the same shape and differ only in the
/// handle (`tenure_authority_*` / `tenure_edit_*`).
template <class Handle>
struct shared_capi;

template <>
struct shared_capi<tenure_authority> {
  static constexpr auto create_production = &tenure_authority_create_production;
  static constexpr auto cancel_production = &tenure_authority_cancel_production;
  static constexpr auto submit_with = &tenure_authority_submit_with;
  static constexpr auto set_production_backoff = &tenure_authority_set_production_backoff;
  static constexpr auto clear_production_backoff = &tenure_authority_clear_production_backoff;
  static constexpr auto pause_production = &tenure_authority_pause_production;
  static constexpr auto resume_production = &tenure_authority_resume_production;
  static constexpr auto set_concurrency_limit = &tenure_authority_set_concurrency_limit;
  static constexpr auto clear_concurrency_limit = &tenure_authority_clear_concurrency_limit;
  static constexpr auto set_rate_limit = &tenure_authority_set_rate_limit;
  static constexpr auto clear_rate_limit = &tenure_authority_clear_rate_limit;
  static constexpr auto cancel = &tenure_authority_cancel;
  static constexpr auto claim = &tenure_authority_claim;
  static constexpr auto claim_next = &tenure_authority_claim_next;
  static constexpr auto claim_idempotent = &tenure_authority_claim_with;
  static constexpr auto claim_next_idempotent = &tenure_authority_claim_next_with;
  static constexpr auto claim_next_many = &tenure_authority_claim_next_many;
  static constexpr auto claim_next_many_idempotent = &tenure_authority_claim_next_many_with;
  static constexpr auto renew_many = &tenure_authority_renew_many;
  static constexpr auto release_many = &tenure_authority_release_many;
  static constexpr auto fail_many = &tenure_authority_fail_many;
  static constexpr auto complete_many = &tenure_authority_complete_many;
};

template <>
struct shared_capi<tenure_edit> {
  static constexpr auto create_production = &tenure_edit_create_production;
  static constexpr auto cancel_production = &tenure_edit_cancel_production;
  static constexpr auto submit_with = &tenure_edit_submit_with;
  static constexpr auto set_production_backoff = &tenure_edit_set_production_backoff;
  static constexpr auto clear_production_backoff = &tenure_edit_clear_production_backoff;
  static constexpr auto pause_production = &tenure_edit_pause_production;
  static constexpr auto resume_production = &tenure_edit_resume_production;
  static constexpr auto set_concurrency_limit = &tenure_edit_set_concurrency_limit;
  static constexpr auto clear_concurrency_limit = &tenure_edit_clear_concurrency_limit;
  static constexpr auto set_rate_limit = &tenure_edit_set_rate_limit;
  static constexpr auto clear_rate_limit = &tenure_edit_clear_rate_limit;
  static constexpr auto cancel = &tenure_edit_cancel;
  static constexpr auto claim = &tenure_edit_claim;
  static constexpr auto claim_next = &tenure_edit_claim_next;
  static constexpr auto claim_idempotent = &tenure_edit_claim_with;
  static constexpr auto claim_next_idempotent = &tenure_edit_claim_next_with;
  static constexpr auto claim_next_many = &tenure_edit_claim_next_many;
  static constexpr auto claim_next_many_idempotent = &tenure_edit_claim_next_many_with;
  static constexpr auto renew_many = &tenure_edit_renew_many;
  static constexpr auto release_many = &tenure_edit_release_many;
  static constexpr auto fail_many = &tenure_edit_fail_many;
  static constexpr auto complete_many = &tenure_edit_complete_many;
};

/// The operations `Authority` and `Edit` share, written once (CRTP):
/// `Derived::capi()` gives the C handle, `shared_capi<Handle>` the C
/// functions. On an `Edit` they run inside its transaction (leases it mints
/// are pending until the commit).
template <class Derived, class Handle>
class SharedOps {
 public:
  /// Create a production; true if it was new.
  bool create_production(std::string_view production) const {
    const std::string p = cstr(production, "production ID");
    bool created = false;
    check(C::create_production(h(), p.c_str(), &created));
    return created;
  }
  /// Cancel every non-terminal job of a production; returns how many.
  std::uint64_t cancel_production(std::string_view production) const {
    const std::string p = cstr(production, "production ID");
    std::uint64_t n = 0;
    check(C::cancel_production(h(), p.c_str(), &n));
    return n;
  }
  /// Submit one job (idempotent for identical content; `Conflict`
  /// otherwise). Its scheduling fields go through `tenure_job_options`
  /// (ABI 1.1): a bad delay, hold limit or back-off throws
  /// `InvalidDuration` and submits nothing.
  SubmitOutcome submit(std::string_view production, const JobSpec& spec) const {
    const std::string p = cstr(production, "production ID");
    const tenure_job_spec s = spec.capi();
    const auto options = spec.capi_options();
    tenure_submitted out{};
    check(C::submit_with(h(), p.c_str(), &s, options.get(), &out));
    return static_cast<SubmitOutcome>(out);
  }
  /// Set (a policy) or clear (`std::nullopt`) a production's default retry
  /// back-off: a retryable failure that names no delay, of a job without
  /// its own back-off, makes the job due after the policy's step. Not an
  /// event; jobs already waiting keep their due time.
  void set_production_backoff(std::string_view production, const std::optional<Backoff>& policy) const {
    const std::string p = cstr(production, "production ID");
    if (policy) {
      check(C::set_production_backoff(h(), p.c_str(), policy->base().count(), policy->cap().count()));
    } else {
      check(C::clear_production_backoff(h(), p.c_str()));
    }
  }
  /// Pause a production (ABI 1.2): until it is resumed no claim of it
  /// succeeds (claim-next finds nothing, a named claim throws
  /// `ProductionPaused`); submissions and held leases keep working. False
  /// if it was already paused.
  bool pause_production(std::string_view production) const {
    const std::string p = cstr(production, "production ID");
    bool changed = false;
    check(C::pause_production(h(), p.c_str(), &changed));
    return changed;
  }
  /// Resume a paused production; its waiters wake. False if it was not paused.
  bool resume_production(std::string_view production) const {
    const std::string p = cstr(production, "production ID");
    bool changed = false;
    check(C::resume_production(h(), p.c_str(), &changed));
    return changed;
  }
  /// Set a production's concurrency limit (1 ..= 1 000 000, else
  /// `InvalidArgument`): at most `limit` of its leases live at once; a
  /// named claim beyond it throws `ConcurrencyLimit`. Lowering it revokes
  /// no lease.
  void set_concurrency_limit(std::string_view production, std::uint32_t limit) const {
    const std::string p = cstr(production, "production ID");
    check(C::set_concurrency_limit(h(), p.c_str(), limit));
  }
  /// Clear a production's concurrency limit.
  void clear_concurrency_limit(std::string_view production) const {
    const std::string p = cstr(production, "production ID");
    check(C::clear_concurrency_limit(h(), p.c_str()));
  }
  /// Set a production's rate limit: at most `claims` claims per `interval`,
  /// at most `burst` at once (`claims`, `burst` 1 ..= 1 000 000, else
  /// `InvalidArgument`; `interval` exact µs, at most 24 h and at least 1 µs
  /// per claim, else `InvalidDuration`). A named claim beyond it throws
  /// `RateLimited`.
  template <class Rep, class Period>
  void set_rate_limit(std::string_view production, std::uint32_t claims, std::chrono::duration<Rep, Period> interval,
                      std::uint32_t burst) const {
    const std::int64_t us = to_micros(interval);
    const std::string p = cstr(production, "production ID");
    check(C::set_rate_limit(h(), p.c_str(), claims, us, burst));
  }
  /// Clear a production's rate limit.
  void clear_rate_limit(std::string_view production) const {
    const std::string p = cstr(production, "production ID");
    check(C::clear_rate_limit(h(), p.c_str()));
  }
  /// Coordinator cancel of one job.
  CancelOutcome cancel(std::string_view production, std::string_view job) const {
    const std::string p = cstr(production, "production ID");
    const std::string j = cstr(job, "job ID");
    tenure_cancelled out{};
    check(C::cancel(h(), p.c_str(), j.c_str(), &out));
    return static_cast<CancelOutcome>(out);
  }
  /// Claim a named job for `ttl` (exact µs; the core allows 1 µs ..= 24 h).
  template <class Rep, class Period>
  Lease claim(std::string_view production, std::string_view job, std::string_view holder,
              std::chrono::duration<Rep, Period> ttl) const {
    const std::int64_t us = to_micros(ttl);
    const std::string p = cstr(production, "production ID");
    const std::string j = cstr(job, "job ID");
    const std::string hd = cstr(holder, "holder");
    tenure_lease* out = nullptr;
    check(C::claim(h(), p.c_str(), j.c_str(), hd.c_str(), us, &out));
    return Lease(out);
  }
  /// Claim the next claimable job (highest priority, then oldest);
  /// `NoJobAvailable` when there is none.
  template <class Rep, class Period>
  Lease claim_next(std::string_view production, std::string_view holder,
                   std::chrono::duration<Rep, Period> ttl) const {
    const std::int64_t us = to_micros(ttl);
    const std::string p = cstr(production, "production ID");
    const std::string hd = cstr(holder, "holder");
    tenure_lease* out = nullptr;
    check(C::claim_next(h(), p.c_str(), hd.c_str(), us, &out));
    return Lease(out);
  }
  /// Claim a named job under `request` (see `ClaimRequest`): a retry with
  /// the same request returns the same lease (`replayed`) while it is
  /// current, else that claim's own error; the same ID with another secret
  /// or other arguments is `Conflict`.
  template <class Rep, class Period>
  Applied<Lease> claim_idempotent(std::string_view production, std::string_view job, std::string_view holder,
                            std::chrono::duration<Rep, Period> ttl, const ClaimRequest& request) const {
    const std::int64_t us = to_micros(ttl);
    const std::string p = cstr(production, "production ID");
    const std::string j = cstr(job, "job ID");
    const std::string hd = cstr(holder, "holder");
    tenure_lease* out = nullptr;
    bool replayed = false;
    check(C::claim_idempotent(h(), p.c_str(), j.c_str(), hd.c_str(), us, request.capi(), &out, &replayed));
    return {Lease(out), replayed};
  }
  /// Claim the next claimable job under `request` (as `claim_idempotent`).
  template <class Rep, class Period>
  Applied<Lease> claim_next_idempotent(std::string_view production, std::string_view holder,
                                 std::chrono::duration<Rep, Period> ttl, const ClaimRequest& request) const {
    const std::int64_t us = to_micros(ttl);
    const std::string p = cstr(production, "production ID");
    const std::string hd = cstr(holder, "holder");
    tenure_lease* out = nullptr;
    bool replayed = false;
    check(C::claim_next_idempotent(h(), p.c_str(), hd.c_str(), us, request.capi(), &out, &replayed));
    return {Lease(out), replayed};
  }

  // Batched calls (ABI 1.1; see docs/design.md, "Batched calls"). A batch
  // holds 1 ..= 1000 items, else `InvalidArgument`. On an `Authority` the
  // call is one transaction with one `Outcome` per lease; an exception
  // means the whole call failed and nothing changed. In an `Edit` the batch
  // is all or nothing: a refused lease throws its error (the edit stays
  // usable), otherwise every outcome is ok.

  /// Claim up to `n` jobs in claim-next order; fewer (possibly none) when
  /// fewer are claimable.
  template <class Rep, class Period>
  std::vector<Lease> claim_next_many(std::string_view production, std::string_view holder,
                                     std::chrono::duration<Rep, Period> ttl, std::size_t n) const {
    const std::int64_t us = to_micros(ttl);
    const std::string p = cstr(production, "production ID");
    const std::string hd = cstr(holder, "holder");
    std::vector<tenure_lease*> raw(detail::claim_room(n), nullptr);
    std::size_t count = 0;
    check(C::claim_next_many(h(), p.c_str(), hd.c_str(), us, n, or_null(raw), &count));
    std::vector<Lease> out;
    out.reserve(count);
    for (std::size_t i = 0; i < count && i < raw.size(); ++i) out.emplace_back(raw[i]);
    return out;
  }
  /// `claim_next_many` under `request` (see `ClaimRequest`): a retry with
  /// the same request (same `n`, holder and TTL) is a replay giving each
  /// member its lease while that claim is current, else the claim's own
  /// status (see `Claimed`); another secret or other arguments, or the ID
  /// of a single claim, is `Conflict`. None claimable: an empty vector, and
  /// the request ID stays unused.
  template <class Rep, class Period>
  Applied<std::vector<Claimed>> claim_next_many_idempotent(std::string_view production, std::string_view holder,
                                                     std::chrono::duration<Rep, Period> ttl, std::size_t n,
                                                     const ClaimRequest& request) const {
    const std::int64_t us = to_micros(ttl);
    const std::string p = cstr(production, "production ID");
    const std::string hd = cstr(holder, "holder");
    std::vector<tenure_lease*> raw(detail::claim_room(n), nullptr);
    std::vector<tenure_status> st(raw.size(), TENURE_OK);
    std::size_t count = 0;
    bool replayed = false;
    check(C::claim_next_many_idempotent(h(), p.c_str(), hd.c_str(), us, n, request.capi(), or_null(raw), or_null(st),
                                  &count, &replayed));
    std::vector<Claimed> out(count < raw.size() ? count : raw.size());
    for (std::size_t i = 0; i < out.size(); ++i) {
      out[i].lease = Lease(raw[i]);
      out[i].status = st[i];
      out[i].replayed = replayed;
    }
    return {std::move(out), replayed};
  }
  /// Renew every lease to now + `ttl`.
  template <class Rep, class Period>
  std::vector<Outcome> renew_many(const LeaseRefs& leases, std::chrono::duration<Rep, Period> ttl) const {
    const std::int64_t us = to_micros(ttl);
    const std::vector<const tenure_lease*> c = c_leases(leases);
    BatchOut out(c.size());
    check(C::renew_many(h(), or_null(c), c.size(), us, out.statuses()));
    return out.outcomes();
  }
  /// Release every lease; each ok outcome carries the job's new state.
  std::vector<Outcome> release_many(const LeaseRefs& leases) const {
    const std::vector<const tenure_lease*> c = c_leases(leases);
    BatchOut out(c.size());
    check(C::release_many(h(), or_null(c), c.size(), out.statuses(), out.states()));
    return out.outcomes();
  }
  /// Fail every lease with its reason and permanence; each ok outcome
  /// carries the job's new state.
  std::vector<Outcome> fail_many(const std::vector<Failure>& items) const {
    const FailArgs a(items);
    BatchOut out(items.size());
    check(C::fail_many(h(), or_null(a.leases), or_null(a.ptrs), a.permanent.get(), items.size(), out.statuses(),
                       out.states()));
    return out.outcomes();
  }
  /// Complete every lease, each publishing its facts (and provenance); the
  /// accepted completions commit together.
  std::vector<Outcome> complete_many(const std::vector<Completion>& items) const {
    const CompleteArgs a(items);
    BatchOut out(items.size());
    check(C::complete_many(h(), or_null(a.leases), or_null(a.ptrs), or_null(a.counts), items.size(),
                           out.statuses()));
    return out.outcomes();
  }

 protected:
  SharedOps() = default;
  ~SharedOps() = default;
  SharedOps(const SharedOps&) = default;
  SharedOps(SharedOps&&) noexcept = default;
  SharedOps& operator=(const SharedOps&) = default;
  SharedOps& operator=(SharedOps&&) noexcept = default;

 private:
  using C = shared_capi<Handle>;
  Handle* h() const noexcept { return static_cast<const Derived*>(this)->capi(); }
};

}  // namespace detail

// ---------------------------------------------------------------------------
// Edit
// ---------------------------------------------------------------------------

/// One write transaction (`tenure_edit`): holds the writer lock until
/// `commit()` or `abort()`; keep it short. Leases it mints are pending until
/// the commit. Destroying an edit that is still open aborts it. Move-only;
/// use from one thread at a time. `create_production`, `cancel_production`,
/// `submit`, the production's back-off and claim gates, `cancel`, the claims
/// (also under a request ID) and the batched calls are the `Authority`
/// operations (`detail::SharedOps`), run inside the transaction.
class Edit : public detail::SharedOps<Edit, tenure_edit> {
 public:
  /// Adopt a C handle (may be NULL).
  explicit Edit(tenure_edit* adopt) noexcept : h_(adopt) {}
  Edit(Edit&&) noexcept = default;
  Edit& operator=(Edit&&) noexcept = default;
  Edit(const Edit&) = delete;
  Edit& operator=(const Edit&) = delete;
  ~Edit() = default;

  /// The C handle (still owned by this object).
  tenure_edit* capi() const noexcept { return h_.get(); }

  /// Commit: pending leases become active. On failure nothing was written
  /// and pending leases are closed. Either way the edit is finished.
  void commit() { check(tenure_edit_commit(h_.get())); }
  /// Roll back; pending leases close.
  void abort() { check(tenure_edit_abort(h_.get())); }

  template <class Rep, class Period>
  void renew(const Lease& lease, std::chrono::duration<Rep, Period> ttl) {
    const std::int64_t us = to_micros(ttl);
    check(tenure_edit_renew(h_.get(), lease.capi(), us));
  }
  JobState release(const Lease& lease) {
    tenure_job_state st{};
    check(tenure_edit_release(h_.get(), lease.capi(), &st));
    return static_cast<JobState>(st);
  }
  JobState fail(const Lease& lease, std::string_view reason, bool permanent = false) {
    const std::string r = detail::cstr(reason, "reason");
    tenure_job_state st{};
    check(tenure_edit_fail(h_.get(), lease.capi(), r.c_str(), permanent, &st));
    return static_cast<JobState>(st);
  }
  /// Fail retryably with a retry delay (see `Lease::fail_retry_after`); the
  /// lease closes when the edit commits.
  template <class Rep, class Period>
  JobState fail_retry_after(const Lease& lease, std::string_view reason, std::chrono::duration<Rep, Period> delay) {
    const std::int64_t us = to_micros(delay);
    const std::string r = detail::cstr(reason, "reason");
    tenure_job_state st{};
    check(tenure_edit_fail_retry_after(h_.get(), lease.capi(), r.c_str(), us, &st));
    return static_cast<JobState>(st);
  }
  /// Complete with facts; they become visible with the commit.
  void complete(const Lease& lease, const std::vector<Fact>& facts = {}) {
    std::vector<std::string> keep;
    const std::vector<tenure_fact> c = detail::c_facts(facts, keep);
    check(tenure_edit_complete(h_.get(), lease.capi(), c.empty() ? nullptr : c.data(), c.size()));
  }

 private:
  std::unique_ptr<tenure_edit, detail::EditFree> h_;
};

// ---------------------------------------------------------------------------
// Authority
// ---------------------------------------------------------------------------

/// An open store (`tenure_authority`). Move-only; every member function is
/// `const` and thread-safe: share one `Authority` between threads by
/// reference. Leases and edits made from it stay valid after it is
/// destroyed (the C handles are independent). `create_production`,
/// `cancel_production`, `submit`, the production's back-off and claim
/// gates, `cancel`, the claims (also under a request ID) and the batched
/// calls come from `detail::SharedOps`.
class Authority : public detail::SharedOps<Authority, tenure_authority> {
 public:
  /// Open or create the store at `path`. Checks the loaded library's ABI
  /// first (`check_abi()`).
  static Authority open(std::string_view path, const Options& options = Options()) {
    check_abi();
    const std::string p = detail::cstr(path, "path");
    tenure_options* raw = nullptr;
    check(tenure_options_new(&options.capi(), &raw));
    const std::unique_ptr<tenure_options, detail::OptionsFree> opts(raw);
    check(tenure_options_set_group_commit(opts.get(), options.group_commit()));
    const Retention& r = options.retention();
    check(tenure_options_set_retention(opts.get(), r.event_age_s(), r.terminal_job_age_s(), r.tombstone_age_s()));
    tenure_authority* out = nullptr;
    check(tenure_authority_open_with(p.c_str(), opts.get(), &out));
    return Authority(out);
  }
  /// Adopt a C handle (may be NULL).
  explicit Authority(tenure_authority* adopt) noexcept : h_(adopt) {}
  Authority(Authority&&) noexcept = default;
  Authority& operator=(Authority&&) noexcept = default;
  Authority(const Authority&) = delete;
  Authority& operator=(const Authority&) = delete;
  ~Authority() = default;

  /// The C handle (still owned by this object).
  tenure_authority* capi() const noexcept { return h_.get(); }

  std::vector<ProductionView> productions() const {
    tenure_production_list* raw = nullptr;
    check(tenure_authority_productions(h_.get(), &raw));
    std::unique_ptr<tenure_production_list, detail::ProductionListFree> list(raw);
    std::vector<ProductionView> out;
    const std::size_t n = tenure_production_list_len(raw);
    for (std::size_t i = 0; i < n; ++i) {
      ProductionView p;
      p.name = detail::str(tenure_production_list_name(raw, i));
      p.created = detail::tp(tenure_production_list_created_us(raw, i));
      std::int64_t us = 0;
      if (tenure_production_list_cancelled_us(raw, i, &us)) p.cancelled = detail::tp(us);
      std::int64_t cap = 0;
      if (tenure_production_list_backoff_base_us(raw, i, &us) && tenure_production_list_backoff_cap_us(raw, i, &cap)) {
        p.backoff = Backoff(std::chrono::microseconds(us), std::chrono::microseconds(cap));
      }
      out.push_back(std::move(p));
    }
    return out;
  }
  /// Turn token text back into an active lease after checking it against
  /// the store's current claim, state and expiry.
  Lease import_lease(std::string_view token) const {
    std::string t = detail::cstr(token, "token");
    tenure_lease* out = nullptr;
    const tenure_status st = tenure_authority_import_lease(h_.get(), t.c_str(), &out);
    detail::wipe(&t[0], t.size());
    check(st);
    return Lease(out);
  }
  /// Observe one job.
  JobView job(std::string_view production, std::string_view job) const {
    const std::string p = detail::cstr(production, "production ID");
    const std::string j = detail::cstr(job, "job ID");
    tenure_job_view* raw = nullptr;
    check(tenure_authority_job(h_.get(), p.c_str(), j.c_str(), &raw));
    std::unique_ptr<tenure_job_view, detail::JobViewFree> view(raw);
    return detail::job_from(raw);
  }
  /// A job's payload bytes.
  std::vector<std::uint8_t> payload(std::string_view production, std::string_view job) const {
    const std::string p = detail::cstr(production, "production ID");
    const std::string j = detail::cstr(job, "job ID");
    std::size_t len = 0;
    tenure_status st = tenure_authority_payload(h_.get(), p.c_str(), j.c_str(), nullptr, 0, &len);
    if (st == TENURE_OK) return {};
    if (st != TENURE_INVALID_ARGUMENT || len == 0) check(st);
    std::vector<std::uint8_t> buf(len);
    check(tenure_authority_payload(h_.get(), p.c_str(), j.c_str(), buf.data(), buf.size(), &len));
    buf.resize(len);
    return buf;
  }
  /// One page of a production's jobs in job-ID order.
  std::vector<JobView> jobs(std::string_view production, const ListQuery& query = ListQuery()) const {
    const std::string p = detail::cstr(production, "production ID");
    std::optional<std::string> after;
    if (query.after) after = detail::cstr(*query.after, "after");
    tenure_list_query q{};
    check(tenure_list_query_init(&q));
    q.state = static_cast<std::uint32_t>(query.state);
    q.after = after ? after->c_str() : nullptr;
    q.limit = query.limit;
    tenure_job_list* raw = nullptr;
    check(tenure_authority_jobs(h_.get(), p.c_str(), &q, &raw));
    std::unique_ptr<tenure_job_list, detail::JobListFree> list(raw);
    std::vector<JobView> out;
    const std::size_t n = tenure_job_list_len(raw);
    out.reserve(n);
    for (std::size_t i = 0; i < n; ++i) out.push_back(detail::job_from(tenure_job_list_get(raw, i)));
    return out;
  }
  /// Facts of one job's completion, provenance included.
  std::vector<PublishedFact> facts(std::string_view production, std::string_view job) const {
    const std::string p = detail::cstr(production, "production ID");
    const std::string j = detail::cstr(job, "job ID");
    tenure_fact_list* raw = nullptr;
    check(tenure_authority_facts(h_.get(), p.c_str(), j.c_str(), &raw));
    return detail::facts_from(raw);
  }
  /// Every fact of a production, by job.
  std::vector<PublishedFact> production_facts(std::string_view production) const {
    const std::string p = detail::cstr(production, "production ID");
    tenure_fact_list* raw = nullptr;
    check(tenure_authority_production_facts(h_.get(), p.c_str(), &raw));
    return detail::facts_from(raw);
  }
  /// Events with a sequence number greater than `after`, oldest first, at
  /// most `limit` (0 = the C default of 100).
  std::vector<Event> events(std::uint64_t after = 0, std::size_t limit = 0) const {
    tenure_event_list* raw = nullptr;
    check(tenure_authority_events(h_.get(), after, limit, &raw));
    return detail::events_from(raw);
  }
  /// Events of one production (see `events`).
  std::vector<Event> production_events(std::string_view production, std::uint64_t after = 0,
                                       std::size_t limit = 0) const {
    const std::string p = detail::cstr(production, "production ID");
    tenure_event_list* raw = nullptr;
    check(tenure_authority_production_events(h_.get(), p.c_str(), after, limit, &raw));
    return detail::events_from(raw);
  }
  /// The authority's clock, its durable high-water mark, and whether
  /// guarded operations are refused because the clock reads below it.
  ClockReading clock() const {
    std::int64_t now = 0, mark = 0;
    bool blocked = false;
    check(tenure_authority_clock(h_.get(), &now, &mark, &blocked));
    return ClockReading{detail::tp(now), detail::tp(mark), blocked};
  }
  /// A production's claim gates as set (ABI 1.2); `NotFound` for an
  /// unknown production.
  Gates gates(std::string_view production) const {
    const std::string p = detail::cstr(production, "production ID");
    tenure_gates* raw = nullptr;
    check(tenure_authority_production_gates(h_.get(), p.c_str(), &raw));
    const std::unique_ptr<tenure_gates, detail::GatesFree> owned(raw);
    return detail::gates_from(raw, &tenure_gates_paused_us, &tenure_gates_concurrency_limit,
                              &tenure_gates_rate_limit);
  }
  /// Queue statistics (ABI 1.2): every production, by name (or only
  /// `production`), jobs by observed state, the waiting and lease figures
  /// and the flow over `window`, read in one snapshot; live leases expiring
  /// within `horizon` are counted. Both 0 ..= 30 days (`InvalidDuration`).
  template <class R1 = std::int64_t, class P1 = std::micro, class R2 = std::int64_t, class P2 = std::micro>
  Stats stats(std::optional<std::string_view> production = std::nullopt,
              std::chrono::duration<R1, P1> horizon = std::chrono::seconds(30),
              std::chrono::duration<R2, P2> window = std::chrono::seconds(60)) const {
    std::string p;
    if (production) p = detail::cstr(*production, "production ID");
    tenure_stats* raw = nullptr;
    check(tenure_authority_stats(h_.get(), production ? p.c_str() : nullptr, to_micros(horizon),
                                 to_micros(window), &raw));
    return detail::stats_from(raw);
  }
  /// Run the offline invariant checker; the number of violations (0 = OK).
  std::uint64_t check_store() const {
    std::uint64_t n = 0;
    check(tenure_authority_check(h_.get(), &n));
    return n;
  }
  // The batched transitions as idempotent calls (ABI 1.1; docs/design.md,
  // "Idempotent calls"): each lease is answered as its single `_idempotent`
  // call would answer it alone, in an `Outcome` with `replayed` (a refused
  // lease throws nothing and changed nothing, as in `renew_many`, ...).

  /// `renew_many` as an idempotent call; each ok outcome carries the
  /// lease's expiry (`expires`).
  template <class Rep, class Period>
  std::vector<Outcome> renew_many_idempotent(const LeaseRefs& leases, std::chrono::duration<Rep, Period> ttl) const {
    const std::int64_t us = to_micros(ttl);
    const std::vector<const tenure_lease*> c = detail::c_leases(leases);
    detail::BatchOut out(c.size(), true);
    check(tenure_authority_renew_many_idempotent(h_.get(), detail::or_null(c), c.size(), us, out.statuses(),
                                                 out.expiries(), out.replayed()));
    return out.outcomes();
  }
  /// `release_many` as an idempotent call; each ok outcome carries the
  /// job's state (the one the release left, in a replay).
  std::vector<Outcome> release_many_idempotent(const LeaseRefs& leases) const {
    const std::vector<const tenure_lease*> c = detail::c_leases(leases);
    detail::BatchOut out(c.size());
    check(tenure_authority_release_many_idempotent(h_.get(), detail::or_null(c), c.size(), out.statuses(),
                                                   out.states(), out.replayed()));
    return out.outcomes();
  }
  /// `fail_many` as an idempotent call: the same reason and permanence is
  /// a replay, another is that lease's `Conflict`.
  std::vector<Outcome> fail_many_idempotent(const std::vector<Failure>& items) const {
    const detail::FailArgs a(items);
    detail::BatchOut out(items.size());
    check(tenure_authority_fail_many_idempotent(h_.get(), detail::or_null(a.leases), detail::or_null(a.ptrs),
                                                a.permanent.get(), items.size(), out.statuses(), out.states(),
                                                out.replayed()));
    return out.outcomes();
  }
  /// `complete_many` as an idempotent call: the same facts (any order) is
  /// a replay, other facts are that lease's `Conflict`.
  std::vector<Outcome> complete_many_idempotent(const std::vector<Completion>& items) const {
    const detail::CompleteArgs a(items);
    detail::BatchOut out(items.size());
    check(tenure_authority_complete_many_idempotent(h_.get(), detail::or_null(a.leases), detail::or_null(a.ptrs),
                                                    detail::or_null(a.counts), items.size(), out.statuses(),
                                                    out.replayed()));
    return out.outcomes();
  }
  /// Claim the next claimable job, waiting up to `timeout` (exact µs, 0 ..=
  /// 24 h; zero makes one attempt) for one: the thread sleeps until a
  /// commit of any thread or process may have made a job claimable, a lease
  /// of the production expires, the timeout passes, or `cancel` (or
  /// `cancel_waits()`) cancels it. Timeout and cancellation throw
  /// `NoJobAvailable` (`cancel.is_cancelled()` tells them apart).
  template <class Rep1, class Period1, class Rep2, class Period2>
  Lease claim_next_wait(std::string_view production, std::string_view holder,
                        std::chrono::duration<Rep1, Period1> ttl, std::chrono::duration<Rep2, Period2> timeout,
                        const WaitCancel& cancel) const {
    return wait(production, holder, to_micros(ttl), to_micros(timeout), cancel.capi());
  }
#if TENURE_HPP_CPLUSPLUS >= 202002L
  /// As above; a stop request on `stop` cancels the wait (a
  /// `std::stop_callback` cancels a `WaitCancel` of this call). A token
  /// without a stop state (the default) waits until a job or the timeout.
  template <class Rep1, class Period1, class Rep2, class Period2>
  Lease claim_next_wait(std::string_view production, std::string_view holder,
                        std::chrono::duration<Rep1, Period1> ttl, std::chrono::duration<Rep2, Period2> timeout,
                        std::stop_token stop = {}) const {
    const std::int64_t ttl_us = to_micros(ttl);
    const std::int64_t timeout_us = to_micros(timeout);
    if (!stop.stop_possible()) return wait(production, holder, ttl_us, timeout_us, nullptr);
    const WaitCancel cancel;
    const std::stop_callback on_stop(stop, [&cancel]() noexcept { (void)tenure_wait_cancel_cancel(cancel.capi()); });
    return wait(production, holder, ttl_us, timeout_us, cancel.capi());
  }
#else
  /// As above, without a cancel handle (`cancel_waits()` still ends it).
  template <class Rep1, class Period1, class Rep2, class Period2>
  Lease claim_next_wait(std::string_view production, std::string_view holder,
                        std::chrono::duration<Rep1, Period1> ttl, std::chrono::duration<Rep2, Period2> timeout) const {
    return wait(production, holder, to_micros(ttl), to_micros(timeout), nullptr);
  }
#endif
  /// End every `claim_next_wait` in progress on this authority (waits that
  /// start later are not affected).
  void cancel_waits() const { check(tenure_authority_cancel_waits(h_.get())); }
  /// Begin an explicit edit (takes the writer lock).
  Edit edit() const {
    tenure_edit* out = nullptr;
    check(tenure_edit_begin(h_.get(), &out));
    return Edit(out);
  }
  /// The history horizon: every event with a sequence number up to it was
  /// pruned (0: none). `events` and `production_events` behind it throw
  /// `HistoryPruned`; a tailer resumes after this number.
  std::uint64_t history_horizon() const {
    std::uint64_t seq = 0;
    check(tenure_authority_history_horizon(h_.get(), &seq));
    return seq;
  }
  /// One bounded prune step under `policy` (at most 256 rows of each kind,
  /// one short transaction); call again while `more`. Ages are measured on
  /// the authority's clock (`ClockRollback` while it reads below the
  /// mark); jobs that are not terminal are never touched.
  PruneReport prune(const Retention& policy) const {
    tenure_prune_report r{};
    check(tenure_authority_prune(h_.get(), policy.event_age_s(), policy.terminal_job_age_s(),
                                 policy.tombstone_age_s(), &r));
    return PruneReport{r.jobs, r.tombstones, r.events, r.horizon, r.more};
  }
  /// Put a failed or cancelled job back to waiting (ABI 1.2), due after
  /// `delay`, with `extra_attempts` attempts (1 ..= 1000, at most the job's
  /// `max_attempts`; none: a fresh budget of `max_attempts`). Throws
  /// `JobLive` for a job that is waiting, claimed or expired with attempts
  /// left, `JobTerminal` for a completed one, `Cancelled` in a cancelled
  /// production; nothing changes then.
  void requeue(std::string_view production, std::string_view job,
               std::optional<std::uint32_t> extra_attempts = std::nullopt,
               std::chrono::microseconds delay = std::chrono::microseconds(0)) const {
    const std::string p = detail::cstr(production, "production ID");
    const std::string j = detail::cstr(job, "job ID");
    const std::int64_t extra = extra_attempts ? std::int64_t{*extra_attempts} : -1;
    check(tenure_authority_requeue(h_.get(), p.c_str(), j.c_str(), extra, delay.count()));
  }
  /// `requeue` of up to `limit` (1 ..= 1000) of the production's failed or
  /// cancelled jobs (ABI 1.2): how many were requeued and whether more remain.
  std::pair<std::uint64_t, bool> requeue_all(std::string_view production, std::size_t limit,
                                             std::optional<std::uint32_t> extra_attempts = std::nullopt,
                                             std::chrono::microseconds delay = std::chrono::microseconds(0)) const {
    const std::string p = detail::cstr(production, "production ID");
    const std::int64_t extra = extra_attempts ? std::int64_t{*extra_attempts} : -1;
    std::uint64_t n = 0;
    bool more = false;
    check(tenure_authority_requeue_all(h_.get(), p.c_str(), extra, delay.count(), limit, &n, &more));
    return {n, more};
  }
  /// Claim the next claimable job across `productions` (ABI 1.2), rotating:
  /// this handle asks them in list order starting after the production that
  /// served its previous claim across the same list; `NoJobAvailable` when
  /// none has one.
  template <class Rep, class Period>
  Lease claim_next_across(const std::vector<std::string>& productions, std::string_view holder,
                          std::chrono::duration<Rep, Period> ttl) const {
    const std::int64_t us = to_micros(ttl);
    const detail::CStrList names(productions, "production ID");
    const std::string hd = detail::cstr(holder, "holder");
    tenure_lease* out = nullptr;
    check(tenure_authority_claim_next_across(h_.get(), names.data(), names.size(), hd.c_str(), us, &out));
    return Lease(out);
  }
  /// Claim up to `n` (1 ..= 1000) jobs across `productions` in one
  /// transaction (ABI 1.2), shared out in rounds from this handle's rotation
  /// over the same list (see `claim_next_across`); fewer (possibly none)
  /// when fewer are claimable.
  template <class Rep, class Period>
  std::vector<Lease> claim_next_many_across(const std::vector<std::string>& productions, std::string_view holder,
                                            std::chrono::duration<Rep, Period> ttl, std::size_t n) const {
    const std::int64_t us = to_micros(ttl);
    const detail::CStrList names(productions, "production ID");
    const std::string hd = detail::cstr(holder, "holder");
    std::vector<tenure_lease*> raw(detail::claim_room(n), nullptr);
    std::size_t count = 0;
    check(tenure_authority_claim_next_many_across(h_.get(), names.data(), names.size(), hd.c_str(), us, n,
                                                  detail::or_null(raw), &count));
    std::vector<Lease> out;
    out.reserve(count);
    for (std::size_t i = 0; i < count && i < raw.size(); ++i) out.emplace_back(raw[i]);
    return out;
  }
  /// `claim_next_wait` across `productions` (ABI 1.2): each attempt is a
  /// `claim_next_across`; the wait wakes on a commit that may have made
  /// work claimable in any of them. Timeout and cancellation throw
  /// `NoJobAvailable`.
  template <class Rep1, class Period1, class Rep2, class Period2>
  Lease claim_next_wait_across(const std::vector<std::string>& productions, std::string_view holder,
                               std::chrono::duration<Rep1, Period1> ttl,
                               std::chrono::duration<Rep2, Period2> timeout, const WaitCancel& cancel) const {
    const std::int64_t ttl_us = to_micros(ttl);
    const std::int64_t timeout_us = to_micros(timeout);
    const detail::CStrList names(productions, "production ID");
    const std::string hd = detail::cstr(holder, "holder");
    tenure_lease* out = nullptr;
    check(tenure_authority_claim_next_wait_across(h_.get(), names.data(), names.size(), hd.c_str(), ttl_us,
                                                  timeout_us, cancel.capi(), &out));
    return Lease(out);
  }
  /// Remove a finished production with its jobs, facts, events and
  /// tombstones. Throws `ProductionLive`, changing nothing, while any of
  /// its jobs is not terminal; calling again finishes an interrupted one.
  DeletedCounts delete_production(std::string_view production) const {
    const std::string p = detail::cstr(production, "production ID");
    tenure_deleted_counts c{};
    check(tenure_authority_delete_production(h_.get(), p.c_str(), &c));
    return DeletedCounts{c.jobs, c.facts, c.events, c.tombstones};
  }
  /// Export a production for archiving: `sink(std::string_view line)` is
  /// called once per record (the production, its jobs with payloads, its
  /// facts, its events), each one line of JSON without a newline, exactly
  /// as `tenure production export` writes it. No secret is exported. An
  /// exception thrown by `sink` stops the export and is rethrown here.
  /// Returns the number of records.
  template <class Sink>
  std::uint64_t export_production(std::string_view production, Sink&& sink) const {
    const std::string p = detail::cstr(production, "production ID");
    struct Ctx {
      Sink& sink;
      std::exception_ptr error;
    } ctx{sink, nullptr};
    const tenure_export_sink trampoline = [](const char* line, std::size_t len, void* c) noexcept -> int {
      Ctx& x = *static_cast<Ctx*>(c);
      try {
        x.sink(std::string_view(line, len));
        return 0;
      } catch (...) {
        x.error = std::current_exception();
        return 1;
      }
    };
    std::uint64_t records = 0;
    const tenure_status st = tenure_authority_export_production(h_.get(), p.c_str(), trampoline, &ctx, &records);
    if (ctx.error) std::rethrow_exception(ctx.error);
    check(st);
    return records;
  }
  /// Rewrite a SQLite store so that pruning gives freed space back to the
  /// file system (a full `VACUUM` holding the writer lock: a quiet
  /// moment's job); a no-op on PostgreSQL.
  void vacuum() const { check(tenure_authority_vacuum(h_.get())); }

  /// Create a schedule (docs/schedules.md): true if created, false if the
  /// same definition exists (another one throws `Conflict`).
  bool create_schedule(std::string_view production, const ScheduleDef& def) const {
    const std::string p = detail::cstr(production, "production ID");
    bool created = false;
    check(tenure_authority_create_schedule(h_.get(), p.c_str(), def.raw(), &created));
    return created;
  }
  /// Replace a schedule's definition (`NotFound` if there is none); its
  /// slot record and pause state stay.
  void update_schedule(std::string_view production, const ScheduleDef& def) const {
    const std::string p = detail::cstr(production, "production ID");
    check(tenure_authority_update_schedule(h_.get(), p.c_str(), def.raw()));
  }
  /// Pause a schedule; false if it was paused already.
  bool pause_schedule(std::string_view production, std::string_view name) const {
    return set_paused(production, name, true);
  }
  /// Resume a schedule (from its first slot after now); false if it was not paused.
  bool resume_schedule(std::string_view production, std::string_view name) const {
    return set_paused(production, name, false);
  }
  /// Delete a schedule and its slot record; false if there was none.
  bool delete_schedule(std::string_view production, std::string_view name) const {
    const std::string p = detail::cstr(production, "production ID");
    const std::string n = detail::cstr(name, "schedule name");
    bool deleted = false;
    check(tenure_authority_delete_schedule(h_.get(), p.c_str(), n.c_str(), &deleted));
    return deleted;
  }
  /// The schedules of `production` (every production's without one).
  std::vector<ScheduleInfo> schedules(std::optional<std::string_view> production = std::nullopt) const {
    std::string p;
    if (production) p = detail::cstr(*production, "production ID");
    tenure_schedule_list* raw = nullptr;
    check(tenure_authority_schedules(h_.get(), production ? p.c_str() : nullptr, &raw));
    std::unique_ptr<tenure_schedule_list, detail::ScheduleListFree> list(raw);
    std::vector<ScheduleInfo> out;
    const std::size_t n = tenure_schedule_list_len(raw);
    for (std::size_t i = 0; i < n; ++i) {
      ScheduleInfo s;
      s.production = detail::str(tenure_schedule_list_production(raw, i));
      s.name = detail::str(tenure_schedule_list_name(raw, i));
      s.cadence = detail::str(tenure_schedule_list_cadence(raw, i));
      if (const char* tz = tenure_schedule_list_tz(raw, i)) s.tz = std::string(tz);
      s.paused = tenure_schedule_list_paused(raw, i);
      s.catch_up = tenure_schedule_list_catch_up(raw, i);
      std::int64_t us = 0;
      if (tenure_schedule_list_last_slot_us(raw, i, &us)) s.last_slot = detail::tp(us);
      if (tenure_schedule_list_next_slot_us(raw, i, &us)) s.next_slot = detail::tp(us);
      out.push_back(std::move(s));
    }
    return out;
  }
  /// One scheduler step: enqueue every due slot of every active schedule.
  ScheduleStep run_schedules() const {
    ScheduleStep s;
    std::int64_t next = 0;
    check(tenure_authority_run_schedules(h_.get(), &s.enqueued, &s.dropped, &next));
    if (next != INT64_MIN) s.next_slot = detail::tp(next);
    return s;
  }
  /// The scheduler loop (ABI 1.2): a `run_schedules` step at each due
  /// slot, sleeping in between, until `cancel` is cancelled (or
  /// `cancel_waits()` is called); then it returns. `on_step(enqueued,
  /// dropped)` (optional) is called on this thread after each step that
  /// enqueued or dropped slots; an exception it throws is kept, the loop
  /// goes on, and the first one is rethrown when the loop returns. A step's
  /// error (other than `Busy`, which is retried) ends the loop with it.
  void run_schedules_until(const WaitCancel& cancel,
                           std::function<void(std::size_t, std::uint64_t)> on_step = {}) const {
    struct Ctx {
      std::function<void(std::size_t, std::uint64_t)>& f;
      std::exception_ptr error;
    } ctx{on_step, nullptr};
    const tenure_schedule_step trampoline = [](void* c, std::size_t enqueued, std::uint64_t dropped) noexcept {
      Ctx& x = *static_cast<Ctx*>(c);
      try {
        x.f(enqueued, dropped);
      } catch (...) {
        if (!x.error) x.error = std::current_exception();
      }
    };
    check(tenure_authority_run_schedules_until(h_.get(), cancel.capi(), on_step ? trampoline : nullptr, &ctx));
    if (ctx.error) std::rethrow_exception(ctx.error);
  }

 private:
  bool set_paused(std::string_view production, std::string_view name, bool paused) const {
    const std::string p = detail::cstr(production, "production ID");
    const std::string n = detail::cstr(name, "schedule name");
    bool changed = false;
    check(tenure_authority_pause_schedule(h_.get(), p.c_str(), n.c_str(), paused, &changed));
    return changed;
  }
  Lease wait(std::string_view production, std::string_view holder, std::int64_t ttl_us, std::int64_t timeout_us,
             const tenure_wait_cancel* cancel) const {
    const std::string p = detail::cstr(production, "production ID");
    const std::string hd = detail::cstr(holder, "holder");
    tenure_lease* out = nullptr;
    check(tenure_authority_claim_next_wait(h_.get(), p.c_str(), hd.c_str(), ttl_us, timeout_us, cancel, &out));
    return Lease(out);
  }

  std::unique_ptr<tenure_authority, detail::AuthorityFree> h_;
};

// ---------------------------------------------------------------------------
// Worker loop
// ---------------------------------------------------------------------------

/// Handler outcome: complete the job, publishing `facts`.
struct Complete {
  std::vector<Fact> facts;
};
/// Handler outcome: fail retryably (requested again while attempts remain).
/// With a `delay` the job is due again after it (`Lease::fail_retry_after`;
/// zero: at once; a delay the core refuses, over 366 days or negative, is
/// reported `Lost` with `InvalidDuration` and the lease stays held until
/// it expires); without one, after the job's or its production's back-off,
/// else at once.
struct Retry {
  std::string reason;
  std::optional<std::chrono::microseconds> delay = std::nullopt;
};
/// Handler outcome: fail permanently.
struct Fail {
  std::string reason;
};
/// What a `Worker` handler decided about its job.
using JobOutcome = std::variant<Complete, Retry, Fail>;

/// What happened to one job a `Worker` claimed.
enum class JobResult : std::uint32_t {
  Completed,  ///< completed with the handler's facts
  Failed,     ///< failed (`Retry`, `Fail`, or the handler threw: a retry); `Report::state` is the new state
  Released,   ///< released unfinished (grace period over, payload unreadable); `Report::state`
  Lost,       ///< the lease was refused or the final call failed; `Report::error` says why
};

/// One job's report (`Worker`'s report callback).
struct Report {
  std::string production;
  std::string job;
  std::string claim_id;
  std::uint32_t attempt = 0;
  JobResult result = JobResult::Lost;
  JobState state = JobState::Any;  ///< the job's new state (`Failed`, `Released`)
  std::optional<Error> error;      ///< why (`Lost`)
};

/// What a `Worker` reports about a store server that went away
/// (`WorkerConfig::on_outage`), as the Rust worker's `OutageEvent`.
struct OutageEvent {
  enum class Kind : std::uint32_t {
    Began,   ///< a wait failed because the server is away; the slots back off and keep trying
    Ended,   ///< a wait succeeded again after an outage of `duration`
    GaveUp,  ///< the server stayed away `duration`, past `WorkerConfig::outage_limit`: the worker stops
  };
  Kind kind = Kind::Began;
  std::chrono::microseconds duration{0};  ///< how long the server was away (`Ended`, `GaveUp`)
  std::optional<Error> error;             ///< the failed wait's error (`Began`)
};

/// How a `Worker` runs: one slot, renewal every `ttl / 3`, waits of 60 s,
/// grace 30 s. Durations convert exactly (`to_micros`); the whole
/// configuration is checked by the core (`tenure_worker_config_check`) when
/// the `Worker` starts, exactly as the Rust worker checks its own.
class WorkerConfig {
 public:
  template <class Rep, class Period>
  WorkerConfig(std::string_view production, std::string_view holder, std::chrono::duration<Rep, Period> ttl)
      : production_(detail::cstr(production, "production ID")),
        productions_{production_},
        holder_(detail::cstr(holder, "holder")),
        ttl_(to_micros(ttl)),
        renew_every_(std::max<std::int64_t>(ttl_.count() / 3, 1)) {}
  /// Serve several productions (1 ..= 64, distinct; the core refuses
  /// others: each ID when the `Worker` starts, the list at its first wait):
  /// with more than one, each slot claims across them, rotating
  /// (`claim_next_wait_across`).
  template <class Rep, class Period>
  WorkerConfig(const std::vector<std::string>& productions, std::string_view holder,
               std::chrono::duration<Rep, Period> ttl)
      : WorkerConfig(productions.empty() ? std::string_view() : std::string_view(productions.front()), holder,
                     ttl) {
    this->productions(productions);
  }
  /// Serve these productions instead (as the constructor above).
  WorkerConfig& productions(const std::vector<std::string>& list) {
    std::vector<std::string> names;
    names.reserve(list.size());
    for (const auto& p : list) names.push_back(detail::cstr(p, "production ID"));
    productions_ = std::move(names);
    production_ = productions_.empty() ? std::string() : productions_.front();
    return *this;
  }
  /// Also run the store's schedules while the worker runs: the scheduler
  /// loop (`Authority::run_schedules_until`) on a thread of its own,
  /// stopped with the worker. Off by default.
  WorkerConfig& schedules(bool on) noexcept {
    schedules_ = on;
    return *this;
  }
  /// Concurrent jobs: one thread each (1 ..= 1024, checked when the
  /// `Worker` starts).
  WorkerConfig& slots(std::size_t n) noexcept {
    slots_ = n;
    return *this;
  }
  /// The keep-alive period (shorter than the TTL).
  template <class Rep, class Period>
  WorkerConfig& renew_every(std::chrono::duration<Rep, Period> d) {
    renew_every_ = std::chrono::microseconds(to_micros(d));
    return *this;
  }
  /// How long one wait lasts before the slot waits again (a stop ends
  /// waits at once).
  template <class Rep, class Period>
  WorkerConfig& wait_timeout(std::chrono::duration<Rep, Period> d) {
    wait_timeout_ = std::chrono::microseconds(to_micros(d));
    return *this;
  }
  /// How long running handlers may go on after a stop before their leases
  /// are released.
  template <class Rep, class Period>
  WorkerConfig& grace(std::chrono::duration<Rep, Period> d) {
    grace_ = std::chrono::microseconds(to_micros(d));
    return *this;
  }
  /// Stop once the store server has been away this long (0 ..= 24 h,
  /// checked when the `Worker` starts; by default never). While it is away
  /// the slots back off as the core's outage rule says (`tenure_outage`:
  /// 50 ms doubling to 2 s, jittered).
  template <class Rep, class Period>
  WorkerConfig& outage_limit(std::chrono::duration<Rep, Period> d) {
    outage_limit_ = std::chrono::microseconds(to_micros(d));
    return *this;
  }
  /// Call `f` when the store server goes away, comes back, or stayed away
  /// past the `outage_limit` (`OutageEvent`), from the slot thread that
  /// noticed; an exception it throws is ignored.
  WorkerConfig& on_outage(std::function<void(const OutageEvent&)> f) {
    on_outage_ = std::move(f);
    return *this;
  }
  /// The first production served.
  const std::string& production() const noexcept { return production_; }
  /// Every production served.
  const std::vector<std::string>& productions() const noexcept { return productions_; }
  bool schedules() const noexcept { return schedules_; }
  const std::string& holder() const noexcept { return holder_; }
  std::size_t slots() const noexcept { return slots_; }
  std::chrono::microseconds ttl() const noexcept { return ttl_; }
  std::chrono::microseconds renew_every() const noexcept { return renew_every_; }
  std::chrono::microseconds wait_timeout() const noexcept { return wait_timeout_; }
  std::chrono::microseconds grace() const noexcept { return grace_; }
  std::optional<std::chrono::microseconds> outage_limit() const noexcept { return outage_limit_; }

 private:
  friend class Worker;
  std::string production_;
  std::vector<std::string> productions_;
  std::string holder_;
  std::chrono::microseconds ttl_;
  std::chrono::microseconds renew_every_;
  std::size_t slots_ = 1;
  std::chrono::microseconds wait_timeout_ = std::chrono::seconds(60);
  std::chrono::microseconds grace_ = std::chrono::seconds(30);
  bool schedules_ = false;
  std::optional<std::chrono::microseconds> outage_limit_;
  std::function<void(const OutageEvent&)> on_outage_;
};

namespace detail {

/// A job a worker slot is running: whoever takes it first (its slot when
/// the handler returns, or `Worker::join` when the grace period ends)
/// settles and reports it.
struct Held {
  Held(Lease l, Keeper k) : lease(std::move(l)), keeper(std::move(k)) {}
  Lease lease;
  Keeper keeper;
  std::atomic<bool> taken{false};

  /// True for the first caller; stops the keeper.
  bool take() noexcept {
    if (taken.exchange(true)) return false;
    (void)tenure_keeper_stop(keeper.capi());
    return true;
  }
};

}  // namespace detail

/// What a `Worker` handler sees of its job.
class JobContext {
 public:
  /// The job's lease (kept alive by the worker, which also settles it).
  const Lease& lease() const noexcept { return held_->lease; }
  std::string production() const { return held_->lease.production(); }
  std::string job() const { return held_->lease.job(); }
  std::uint32_t attempt() const noexcept { return held_->lease.attempt(); }
  const std::vector<std::uint8_t>& payload() const noexcept { return payload_; }
  /// The worker is stopping: finish soon (within the grace period).
  bool stopping() const noexcept { return cancel_->is_cancelled(); }
  /// The refusal that stopped the lease's renewals, if any: the lease is
  /// lost and the handler's work will not be accepted.
  std::optional<Error> lease_lost() const { return held_->keeper.error(); }

 private:
  friend class Worker;
  JobContext(const detail::Held* held, std::vector<std::uint8_t> payload, const WaitCancel* cancel)
      : held_(held), payload_(std::move(payload)), cancel_(cancel) {}
  const detail::Held* held_;
  std::vector<std::uint8_t> payload_;
  const WaitCancel* cancel_;
};

/// A worker loop over the C pieces: `slots` threads, each waits for a job
/// (`claim_next_wait` with the worker's `WaitCancel`, or
/// `claim_next_wait_across` for a config of several productions), keeps it alive
/// (`keep_alive`), reads its payload, runs the handler and settles the job
/// with its `JobOutcome` (`complete`, `fail`), then reports it. A handler that
/// throws is a retryable failure. A wait refused for bad input
/// (`InvalidArgument`, `InvalidDuration`: the configuration) stops the
/// worker and `join()` throws it. Other failed waits back off as the core's
/// outage rule says (`tenure_outage`, one tracker shared by the slots, so
/// an outage counts once however many slots notice it): a store server
/// that is away (a lost or refused connection, no free connection slot)
/// gives pauses of 50 ms doubling to 2 s (jittered) and `on_outage` events,
/// any other failure a 1 s pause; once the server has been away past the
/// `outage_limit` the worker stops (`gave_up()`; `join()` does not throw).
/// A keeper that cannot start is reported `Lost` with its error and the
/// lease is left held until it expires, as the Rust loop does (an
/// `InvalidDuration` there also stops the worker).
///
/// Stop (`stop()`, from any thread but not a signal handler): waits are
/// cancelled at once, so no new job is taken; running handlers go on for
/// the grace period. `join()` returns once every slot finished or the grace
/// period ended, then releases the leases still held (reported
/// `Released`). Destroying a `Worker` stops it and does the same. A handler
/// still running then keeps its (detached) thread; its outcome is not
/// applied, and that thread makes no C call once the handler returns (every
/// slot outside a handler is joined first). The `Authority` must outlive the worker; the handler and the
/// report callback are called from the slot threads (and `join()`), at the
/// same time for different jobs. With `WorkerConfig::schedules(true)` a
/// thread of its own runs the scheduler loop (`run_schedules_until` with
/// the worker's `WaitCancel`) until the stop; `join()` joins it. Every
/// rule is the core's: the worker only sequences C calls.
class Worker {
 public:
  using Handler = std::function<JobOutcome(const JobContext&)>;
  using Reporter = std::function<void(const Report&)>;

  /// Start `config.slots()` threads on `authority`; a configuration the core
  /// refuses (`tenure_worker_config_check`) throws its error before any
  /// thread starts.
  Worker(const Authority& authority, WorkerConfig config, Handler handler, Reporter report = {})
      : s_(std::make_shared<Shared>(authority, checked(std::move(config)), std::move(handler),
                                    std::move(report))) {
    const std::size_t n = s_->cfg.slots();
    s_->active = n;
    threads_.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      try {
        threads_.emplace_back([s = s_, i] {
          slot(*s, i);
          {
            const std::lock_guard<std::mutex> lk(s->m);
            --s->active;
          }
          s->cv.notify_all();
        });
      } catch (...) {
        {
          const std::lock_guard<std::mutex> lk(s_->m);
          s_->active -= n - i;
        }
        stop();
        finish();
        throw;
      }
    }
    if (s_->cfg.schedules()) {
      try {
        scheduler_ = std::thread([s = s_] { schedule(*s); });
      } catch (...) {
        stop();
        finish();
        throw;
      }
    }
  }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  Worker(Worker&&) = delete;
  Worker& operator=(Worker&&) = delete;
  /// Stops the worker and waits as `join()` does; never throws.
  ~Worker() {
    stop();
    try {
      finish();
    } catch (...) {
    }
  }

  /// Take no new jobs; the grace period starts now. Idempotent; any thread.
  void stop() noexcept { s_->stop(); }
  /// Whether `stop()` was called (or a bad configuration stopped it).
  bool stopping() const noexcept { return s_->cancel.is_cancelled(); }
  /// How many times the store server went away while this worker ran (an
  /// outage counts once, however many slots noticed it).
  std::uint64_t outages() const noexcept { return s_->outages.load(); }
  /// Whether the worker stopped because the store server stayed away
  /// longer than its `outage_limit`.
  bool gave_up() const noexcept { return s_->gave_up.load(); }
  /// Wait until the worker is stopped and its slots finished, or the grace
  /// period after the stop passed; release every lease still held. Throws
  /// the error that stopped a misconfigured worker.
  void join() { finish(); }

 private:
  /// The configuration, once the core accepted it (else its error).
  static WorkerConfig checked(WorkerConfig c) {
    // Each production ID (none: the empty ID, refused) through the core's
    // check; the list itself (count, duplicates) is the core's at the
    // first wait across it.
    const std::vector<std::string> none{std::string()};
    for (const std::string& p : c.productions().empty() ? none : c.productions()) {
      check(tenure_worker_config_check(p.c_str(), c.holder().c_str(), c.slots(), c.ttl().count(),
                                       c.renew_every().count(), c.wait_timeout().count(), c.grace().count()));
    }
    return c;
  }
  /// The C outage tracker of one worker (`tenure_outage`), shared by its slots.
  struct OutageFree {
    void operator()(tenure_outage* o) const noexcept { tenure_outage_free(o); }
  };
  static std::unique_ptr<tenure_outage, OutageFree> new_outage(const WorkerConfig& c) {
    tenure_outage* o = nullptr;
    check(tenure_outage_new(c.outage_limit_ ? c.outage_limit_->count() : std::numeric_limits<std::int64_t>::min(),
                            c.slots(), &o));
    return std::unique_ptr<tenure_outage, OutageFree>(o);
  }
  struct Shared {
    Shared(const Authority& a, WorkerConfig c, Handler h, Reporter r)
        : auth(&a), cfg(std::move(c)), handler(std::move(h)), report(std::move(r)), outage(new_outage(cfg)) {}
    const Authority* auth;
    WorkerConfig cfg;
    Handler handler;
    Reporter report;
    WaitCancel cancel;
    std::mutex m;
    std::condition_variable cv;
    std::optional<std::chrono::steady_clock::time_point> stopped_at;
    std::size_t active = 0;
    /// Slots inside the handler call: the only ones `finish` may leave
    /// running (detached).
    std::size_t in_handler = 0;
    std::map<std::uint64_t, std::shared_ptr<detail::Held>> held;
    std::uint64_t next = 0;
    std::optional<Error> fatal;
    std::unique_ptr<tenure_outage, OutageFree> outage;
    std::atomic<std::uint64_t> outages{0};
    std::atomic<bool> gave_up{false};

    void stop() noexcept {
      {
        const std::lock_guard<std::mutex> lk(m);
        if (!stopped_at) stopped_at = std::chrono::steady_clock::now();
      }
      (void)tenure_wait_cancel_cancel(cancel.capi());
      cv.notify_all();
    }
    void tell(const OutageEvent& e) const noexcept {
      if (!cfg.on_outage_) return;
      try {
        cfg.on_outage_(e);
      } catch (...) {
      }
    }
    void tell(const Report& r) const noexcept {
      if (!report) return;
      try {
        report(r);
      } catch (...) {
      }
    }
  };

  /// The slot's wait: one production, or across several.
  static Lease claim(const Shared& s) {
    if (s.cfg.productions().size() == 1) {
      return s.auth->claim_next_wait(s.cfg.production(), s.cfg.holder(), s.cfg.ttl(), s.cfg.wait_timeout(),
                                     s.cancel);
    }
    return s.auth->claim_next_wait_across(s.cfg.productions(), s.cfg.holder(), s.cfg.ttl(), s.cfg.wait_timeout(),
                                          s.cancel);
  }
  /// The scheduler thread of a worker with `schedules(true)`: the core's
  /// loop until the worker stops; a failed step (a store error) is tried
  /// again a second later.
  static void schedule(Shared& s) {
    while (!s.cancel.is_cancelled()) {
      try {
        s.auth->run_schedules_until(s.cancel);
        return;
      } catch (...) {
      }
      std::unique_lock<std::mutex> lk(s.m);
      s.cv.wait_for(lk, std::chrono::seconds(1), [&s] { return s.stopped_at.has_value(); });
    }
  }
  static Report report_of(const Lease& l, JobResult result) {
    Report r;
    r.production = l.production();
    r.job = l.job();
    r.claim_id = l.claim_id();
    r.attempt = l.attempt();
    r.result = result;
    return r;
  }
  static Report lost(const Lease& l, const Error& e) {
    Report r = report_of(l, JobResult::Lost);
    r.error = e;
    return r;
  }
  static Report released(const Lease& l) {
    try {
      Report r = report_of(l, JobResult::Released);
      r.state = l.release();
      return r;
    } catch (const Error& e) {
      return lost(l, e);
    }
  }
  static Report failed(const Lease& l, const std::string& reason, bool permanent,
                       std::optional<std::chrono::microseconds> delay = std::nullopt) {
    try {
      Report r = report_of(l, JobResult::Failed);
      r.state = delay ? l.fail_retry_after(reason, *delay) : l.fail(reason, permanent);
      return r;
    } catch (const Error& e) {
      return lost(l, e);
    }
  }

  static void slot(Shared& s, std::size_t i) {
    while (!s.cancel.is_cancelled()) {
      Lease lease(nullptr);
      try {
        lease = claim(s);
      } catch (const NoJobAvailable&) {
        server_back(s, i);
        continue;
      } catch (const Error& e) {
        if (e.status() == TENURE_INVALID_ARGUMENT || e.status() == TENURE_INVALID_DURATION) {
          {
            const std::lock_guard<std::mutex> lk(s.m);
            if (!s.fatal) s.fatal = e;
          }
          s.stop();
        } else if (!s.cancel.is_cancelled()) {
          ride_out(s, i, e);
        }
        continue;
      } catch (...) {
        continue;  // out of memory converting a message: try again
      }
      server_back(s, i);
      run_job(s, std::move(lease));
    }
  }

  /// A wait failed with `e`: back off as the core's outage rule says,
  /// reporting the outage when it begins, and stop the worker once it
  /// lasted past the outage limit.
  static void ride_out(Shared& s, std::size_t i, const Error& e) {
    std::int64_t delay_us = 1000000;
    tenure_outage_step step = TENURE_OUTAGE_RETRY;
    if (tenure_outage_failed(s.outage.get(), i, static_cast<std::uint32_t>(e.status()), e.what(), &delay_us,
                             &step) != TENURE_OK) {
      delay_us = 1000000;
      step = TENURE_OUTAGE_RETRY;
    }
    OutageEvent ev;
    if (step == TENURE_OUTAGE_STOP) {
      if (!s.gave_up.exchange(true)) {
        ev.kind = OutageEvent::Kind::GaveUp;
        ev.duration = std::chrono::microseconds(delay_us);
        s.tell(ev);
      }
      s.stop();
      return;
    }
    if (step == TENURE_OUTAGE_BEGAN) {
      ++s.outages;
      ev.kind = OutageEvent::Kind::Began;
      try {
        ev.error = e;
      } catch (...) {
      }
      s.tell(ev);
    }
    std::unique_lock<std::mutex> lk(s.m);
    s.cv.wait_for(lk, std::chrono::microseconds(delay_us), [&s] { return s.stopped_at.has_value(); });
  }

  /// Slot `i`'s wait answered: its outage is over; the worker's ends with
  /// the last slot that saw it.
  static void server_back(Shared& s, std::size_t i) noexcept {
    std::int64_t us = -1;
    if (tenure_outage_succeeded(s.outage.get(), i, &us) != TENURE_OK || us < 0) return;
    OutageEvent ev;
    ev.kind = OutageEvent::Kind::Ended;
    ev.duration = std::chrono::microseconds(us);
    s.tell(ev);
  }

  static void run_job(Shared& s, Lease lease) {
    Keeper keeper(nullptr);
    try {
      keeper = lease.keep_alive(s.cfg.ttl(), s.cfg.renew_every());
    } catch (const Error& e) {
      // As the Rust loop: the lease is lost to this worker and left as it
      // is (held until it expires); nothing releases it.
      s.tell(lost(lease, e));
      if (e.status() == TENURE_INVALID_DURATION) {
        {
          const std::lock_guard<std::mutex> lk(s.m);
          if (!s.fatal) s.fatal = e;
        }
        s.stop();
      }
      return;
    }
    const auto held = std::make_shared<detail::Held>(std::move(lease), std::move(keeper));
    std::uint64_t id = 0;
    {
      const std::lock_guard<std::mutex> lk(s.m);
      id = s.next++;
      s.held.emplace(id, held);
    }
    std::optional<JobOutcome> outcome;
    std::optional<std::vector<std::uint8_t>> payload;
    try {
      payload = s.auth->payload(held->lease.production(), held->lease.job());
    } catch (...) {
    }
    if (payload) {
      const JobContext ctx(held.get(), std::move(*payload), &s.cancel);
      {
        const std::lock_guard<std::mutex> lk(s.m);
        ++s.in_handler;
      }
      try {
        outcome = s.handler(ctx);
      } catch (const std::exception& e) {
        outcome = Retry{std::string("the handler threw: ") + e.what(), {}};
      } catch (...) {
        outcome = Retry{"the handler threw", {}};
      }
      {
        const std::lock_guard<std::mutex> lk(s.m);
        --s.in_handler;
      }
      s.cv.notify_all();
    }
    {
      const std::lock_guard<std::mutex> lk(s.m);
      s.held.erase(id);
    }
    if (!held->take()) return;  // the grace period ended: join() released and reported it
    const Lease& l = held->lease;
    if (!outcome) {
      s.tell(released(l));
    } else if (const Complete* c = std::get_if<Complete>(&*outcome)) {
      try {
        l.complete(c->facts);
        s.tell(report_of(l, JobResult::Completed));
      } catch (const Error& e) {
        s.tell(lost(l, e));
      }
    } else if (const Retry* r = std::get_if<Retry>(&*outcome)) {
      s.tell(failed(l, r->reason, false, r->delay));
    } else if (const Fail* f = std::get_if<Fail>(&*outcome)) {
      s.tell(failed(l, f->reason, true));
    }
  }

  void finish() {
    if (finished_) return;
    finished_ = true;
    std::unique_lock<std::mutex> lk(s_->m);
    s_->cv.wait(lk, [this] { return s_->stopped_at.has_value(); });
    // The grace period's end, computed without overflow: a grace past the
    // clock's range never ends (the slots' end ends the wait), a negative
    // one has ended. No C call checks a grace period (the Rust loop's
    // 0 ..= 24 h bound is checked at its start), so none is refused here.
    using clock = std::chrono::steady_clock;
    const clock::time_point stopped = *s_->stopped_at;
    const auto room = std::chrono::duration_cast<std::chrono::microseconds>(clock::time_point::max() - stopped);
    const std::chrono::microseconds grace = std::max(s_->cfg.grace(), std::chrono::microseconds::zero());
    const auto slots_done = [this] { return s_->active == 0; };
    if (grace >= room) {
      s_->cv.wait(lk, slots_done);
    } else {
      s_->cv.wait_until(lk, stopped + grace, slots_done);
    }
    // A slot outside its handler is between two C calls on the Authority
    // (its wait was cancelled, or it is reading a payload): wait for it to
    // end or enter its handler, so that no thread left running touches the
    // Authority after `join()` returned. A slot that returns from its
    // handler after this finds its lease taken and ends without a C call.
    s_->cv.wait(lk, [this] { return s_->active == s_->in_handler; });
    std::map<std::uint64_t, std::shared_ptr<detail::Held>> left;
    left.swap(s_->held);
    const bool all_done = s_->active == 0;
    const std::optional<Error> fatal = s_->fatal;
    lk.unlock();
    // The scheduler's loop ends at the stop's cancellation.
    if (scheduler_.joinable()) scheduler_.join();
    for (const auto& entry : left) {
      if (entry.second->take()) s_->tell(released(entry.second->lease));
    }
    for (std::thread& t : threads_) {
      if (all_done) {
        t.join();
      } else {
        t.detach();  // a handler still running keeps its thread
      }
    }
    threads_.clear();
    if (fatal) throw_status(fatal->status(), fatal->what());
  }

  std::shared_ptr<Shared> s_;
  std::vector<std::thread> threads_;
  std::thread scheduler_;
  bool finished_ = false;
};

}  // namespace tenure

#endif  // TENURE_TENURE_HPP

#endif  // TENURE_HPP_CPLUSPLUS < 201703L
