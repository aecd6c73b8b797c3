//! The exports of `status.rs`: the names of status numbers and the
//! per-thread last-error message.

use std::ffi::c_char;

use crate::status::{copy_last_error, status_name, tenure_status};

export! {
    /// A static, stable snake_case name for a status number (`"stale_lease"`,
    /// `"ok"` for 0, `"unknown"` for a number this library does not know).
    fn tenure_status_name(status: u32) -> *const c_char = value Some(status_name(status).as_ptr());

    /// Copy the message of the last failed call on this thread into `buf` as a
    /// NUL-terminated string (`""` if the last status-returning call on this
    /// thread succeeded or none was made). Every status-returning function
    /// except this one replaces the message; this one never changes it.
    ///
    /// `*out_size` receives the buffer size needed, including the NUL. If `cap`
    /// is smaller than that, nothing is copied and `TENURE_INVALID_ARGUMENT` is
    /// returned with `*out_size` set (`buf` may be NULL when `cap` is 0, to ask
    /// for the size). Messages never contain secrets or tokens.
    fn tenure_last_error_message(buf: *mut c_char, cap: usize, out_size: *mut usize)
        -> tenure_status = value Some(copy_last_error(buf, cap, out_size));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn the_exported_names_are_the_status_table() {
        for n in (0..40).chain([u32::MAX]) {
            let got = unsafe { CStr::from_ptr(tenure_status_name(n)) };
            assert_eq!(got, status_name(n), "{n}");
        }
    }
}
