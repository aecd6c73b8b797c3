//! C ABI (in progress).
