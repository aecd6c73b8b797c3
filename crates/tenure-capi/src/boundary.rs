//! The boundary every export goes through, the argument readers and the
//! macros that write the exports.
//!
//! - [`boundary`] wraps every status-returning export: it catches panics,
//!   maps core errors to `tenure_status` and records the last-error message.
//! - [`value`] wraps every accessor that returns a plain value.
//! - `arg_ref!`, `arg_out!` and `arg_str!` read one pointer argument and
//!   name it in the error message; [`Arg`] does the same for `export!`.
//! - `export!` writes a status-returning export from its signature and one
//!   expression; `accessors!` and `list_handle!` write the `_free`, `_len`,
//!   field and item accessors of the snapshot handles from one line each.

use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use tenure::{Error, Ttl};

use crate::status::{set_last_error, tenure_status};
use crate::{TENURE_ABI_MAJOR, TENURE_ABI_MINOR};

pub(crate) type R<T = ()> = Result<T, Error>;

pub(crate) fn invalid(msg: impl Into<String>) -> Error {
    Error::InvalidArgument(msg.into())
}

/// The one boundary around every status-returning export: runs `f`, catches
/// any panic (-> `TENURE_INTERNAL`), maps the core error to its status and
/// records the thread's last-error message (cleared on success).
pub(crate) fn boundary(f: impl FnOnce() -> R) -> tenure_status {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => {
            set_last_error(String::new());
            tenure_status::TENURE_OK
        }
        Ok(Err(e)) => {
            let st = tenure_status::from_code(e.code());
            set_last_error(e.to_string());
            st
        }
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            set_last_error(format!("internal error: a panic was caught: {what}"));
            tenure_status::TENURE_INTERNAL
        }
    }
}

/// The boundary for accessors that return a plain value: a panic yields
/// `default`. The last-error message is not touched.
pub(crate) fn value<T>(default: T, f: impl FnOnce() -> Option<T>) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Some(v)) => v,
        _ => default,
    }
}

/// A required (non-NULL) handle or struct argument.
macro_rules! arg_ref {
    ($p:expr) => {
        match unsafe { $p.as_ref() } {
            Some(r) => r,
            None => {
                return Err($crate::boundary::invalid(concat!(
                    "`",
                    stringify!($p),
                    "` must not be NULL"
                )))
            }
        }
    };
}

/// A required (non-NULL) out-parameter; gives the raw pointer back.
macro_rules! arg_out {
    ($p:expr) => {{
        if $p.is_null() {
            return Err($crate::boundary::invalid(concat!(
                "`",
                stringify!($p),
                "` must not be NULL"
            )));
        }
        $p
    }};
}

/// A required NUL-terminated UTF-8 string argument.
macro_rules! arg_str {
    ($p:expr) => {
        unsafe { $crate::boundary::str_arg($p, stringify!($p))? }
    };
}

pub(crate) unsafe fn str_arg<'a>(p: *const c_char, name: &str) -> R<&'a str> {
    if p.is_null() {
        return Err(invalid(format!("`{name}` must not be NULL")));
    }
    CStr::from_ptr(p)
        .to_str()
        .map_err(|_| invalid(format!("`{name}` is not valid UTF-8")))
}

pub(crate) unsafe fn opt_str_arg<'a>(p: *const c_char, name: &str) -> R<Option<&'a str>> {
    if p.is_null() {
        Ok(None)
    } else {
        str_arg(p, name).map(Some)
    }
}

/// An argument of an `export!` function, as the export body sees it: a C
/// string as `&str` (UTF-8 checked), a handle as a reference, an input
/// struct as the core's type; plain numbers pass unchanged. `name` is the
/// parameter's name for the error message.
pub(crate) trait Arg<'a> {
    type Out;
    unsafe fn read(self, name: &'static str) -> R<Self::Out>;
}

impl<'a> Arg<'a> for *const c_char {
    type Out = &'a str;
    unsafe fn read(self, name: &'static str) -> R<&'a str> {
        str_arg(self, name)
    }
}

/// An opaque handle type (read as a non-NULL reference).
pub(crate) trait Handle {}

impl<'a, T: Handle + 'a> Arg<'a> for *const T {
    type Out = &'a T;
    unsafe fn read(self, name: &'static str) -> R<&'a T> {
        self.as_ref()
            .ok_or_else(|| invalid(format!("`{name}` must not be NULL")))
    }
}

/// A handle the call changes (through the handle's own lock), read like a
/// `const` one.
impl<'a, T: Handle + 'a> Arg<'a> for *mut T {
    type Out = &'a T;
    unsafe fn read(self, name: &'static str) -> R<&'a T> {
        Arg::read(self.cast_const(), name)
    }
}

macro_rules! plain_args {
    ($($t:ty),*) => {$(
        impl Arg<'_> for $t {
            type Out = $t;
            unsafe fn read(self, _: &'static str) -> R<$t> {
                Ok(self)
            }
        }
    )*};
}
plain_args!(bool, i64, u64, usize);

/// Status-returning exports that read every argument in parameter order
/// (the first bad one is reported), then check the out-parameter, then
/// evaluate the body with the arguments as [`Arg`] reads them:
///
/// - `fn NAME(p: T, ...) -> out: *mut U = EXPR;` writes `EXPR` (a `U`) to
///   `*out` on success;
/// - `fn NAME(p: T, ...) = EXPR;` has no out-parameter; `EXPR` is an `R<()>`.
///
/// Doc comments above a function go to its export.
macro_rules! export {
    () => {};
    (
        $(#[$doc:meta])*
        fn $name:ident($($p:ident: $t:ty),* $(,)?) -> $out:ident: *mut $ot:ty = $body:expr;
        $($rest:tt)*
    ) => {
        $(#[$doc])*
        #[no_mangle]
        pub unsafe extern "C" fn $name($($p: $t,)* $out: *mut $ot) -> tenure_status {
            $crate::boundary::boundary(|| {
                $(let $p = $crate::boundary::Arg::read($p, stringify!($p))?;)*
                let out = arg_out!($out);
                out.write($body);
                Ok(())
            })
        }
        export!($($rest)*);
    };
    (
        $(#[$doc:meta])*
        fn $name:ident($($p:ident: $t:ty),* $(,)?) = $body:expr;
        $($rest:tt)*
    ) => {
        $(#[$doc])*
        #[no_mangle]
        pub unsafe extern "C" fn $name($($p: $t),*) -> tenure_status {
            $crate::boundary::boundary(|| {
                $(let $p = $crate::boundary::Arg::read($p, stringify!($p))?;)*
                $body
            })
        }
        export!($($rest)*);
    };
}

/// Largest `struct_size` accepted (a sanity bound against garbage).
const MAX_STRUCT_SIZE: usize = 4096;

/// Read a size-versioned input struct whose first field is `size_t struct_size`.
pub(crate) unsafe fn read_sized<T: Copy>(p: *const T, name: &str) -> R<T> {
    if p.is_null() {
        return Err(invalid(format!("`{name}` must not be NULL")));
    }
    let size = std::ptr::read_unaligned(p as *const usize);
    let known = std::mem::size_of::<T>();
    if size < known || size > MAX_STRUCT_SIZE {
        return Err(invalid(format!(
            "`{name}->struct_size` is {size}; this library reads {known} bytes \
             (initialise the struct with its tenure_*_init function)"
        )));
    }
    let bytes = std::slice::from_raw_parts(p as *const u8, size);
    if bytes[known..].iter().any(|b| *b != 0) {
        return Err(invalid(format!(
            "`{name}` sets fields this library (ABI {TENURE_ABI_MAJOR}.{TENURE_ABI_MINOR}) does not know"
        )));
    }
    Ok(std::ptr::read(p))
}

pub(crate) fn ttl(us: i64) -> R<Ttl> {
    Ttl::from_micros(us)
}

/// Text from the core as a C string (core text never contains NUL; should
/// one appear it is replaced rather than truncating the string).
pub(crate) fn cstring(s: &str) -> CString {
    CString::new(s).unwrap_or_else(|_| {
        CString::new(s.replace('\0', "\u{FFFD}")).expect("NUL bytes were replaced")
    })
}

pub(crate) fn opt_ptr(s: &Option<CString>) -> *const c_char {
    s.as_ref().map_or(std::ptr::null(), |c| c.as_ptr())
}

pub(crate) fn boxed<T>(v: T) -> *mut T {
    Box::into_raw(Box::new(v))
}

pub(crate) unsafe fn free_box<T>(p: *mut T) {
    if !p.is_null() {
        let _ = catch_unwind(AssertUnwindSafe(|| drop(Box::from_raw(p))));
    }
}

/// A caller buffer of `cap` bytes: `buf` may be NULL only when `cap` is 0.
pub(crate) fn buf_arg<T>(buf: *mut T, cap: usize) -> R {
    if buf.is_null() && cap != 0 {
        return Err(invalid("`buf` must not be NULL when `cap` is not 0"));
    }
    Ok(())
}

/// Copy `bytes` (plus a NUL if `nul`) into a caller buffer, reporting the
/// required size; too small -> invalid argument, buffer untouched.
pub(crate) unsafe fn copy_out(
    bytes: &[u8],
    nul: bool,
    buf: *mut u8,
    cap: usize,
    out_size: *mut usize,
    what: &str,
) -> R {
    let need = bytes.len() + usize::from(nul);
    if cap < need {
        *out_size = need;
        return Err(invalid(format!(
            "the buffer for the {what} holds {cap} bytes, {need} are needed \
             (the required size was written to the size out-parameter)"
        )));
    }
    std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf, bytes.len());
    if nul {
        *buf.add(bytes.len()) = 0;
    }
    *out_size = need;
    Ok(())
}

/// What an accessor returns for a NULL handle, an out-of-range index or a
/// caught panic.
pub(crate) trait Fallback {
    const NONE: Self;
}

impl<T> Fallback for *const T {
    const NONE: Self = std::ptr::null();
}

macro_rules! zero_fallback {
    ($($t:ty),*) => {$(
        impl Fallback for $t {
            const NONE: Self = 0;
        }
    )*};
}
zero_fallback!(u32, i32, i64, u64, usize);

/// An optional time as an accessor result: true and `*out_us` written when
/// there is one (and `out_us` is not NULL), else false.
pub(crate) unsafe fn write_time(out_us: *mut i64, t: Option<i64>) -> Option<bool> {
    let t = t?;
    if out_us.is_null() {
        return None;
    }
    out_us.write(t);
    Some(true)
}

/// The exports that read a snapshot handle `H`, one line each (doc comments
/// above a line go to its export):
///
/// - `free NAME(p);` frees the handle (NULL is a no-op);
/// - `fn NAME(p) -> T = |h| EXPR;` returns `EXPR` of the handle `*p`;
/// - `fn NAME(p, out_us) -> bool = |h| EXPR;` for an `Option<i64>` time:
///   true and `*out_us` written if there is one, else false;
/// - `fn NAME(list, index) -> T = |item| EXPR;` returns `EXPR` of item
///   `index` of the handle's `items`;
/// - `fn NAME(list, index, out_us) -> bool = |item| EXPR;` the optional
///   time of an item.
///
/// A NULL handle, an out-of-range index or a caught panic returns the
/// type's [`Fallback`] (NULL, 0, false).
macro_rules! accessors {
    ($h:ty {}) => {};
    ($h:ty { $(#[$doc:meta])* free $name:ident($p:ident); $($rest:tt)* }) => {
        $(#[$doc])*
        #[no_mangle]
        pub unsafe extern "C" fn $name($p: *mut $h) {
            $crate::boundary::free_box($p)
        }
        accessors!($h { $($rest)* });
    };
    ($h:ty {
        $(#[$doc:meta])* fn $name:ident(list, index, out_us) -> $ret:ty = $get:expr; $($rest:tt)*
    }) => {
        $(#[$doc])*
        #[no_mangle]
        pub unsafe extern "C" fn $name(list: *const $h, index: usize, out_us: *mut i64) -> $ret {
            $crate::boundary::value(false, || {
                $crate::boundary::write_time(out_us, list.as_ref()?.items.get(index).and_then($get))
            })
        }
        accessors!($h { $($rest)* });
    };
    ($h:ty {
        $(#[$doc:meta])* fn $name:ident(list, index) -> $ret:ty = $get:expr; $($rest:tt)*
    }) => {
        $(#[$doc])*
        #[no_mangle]
        pub unsafe extern "C" fn $name(list: *const $h, index: usize) -> $ret {
            use $crate::boundary::Fallback;
            $crate::boundary::value(<$ret>::NONE, || list.as_ref()?.items.get(index).map($get))
        }
        accessors!($h { $($rest)* });
    };
    ($h:ty {
        $(#[$doc:meta])* fn $name:ident($p:ident, out_us) -> $ret:ty = $get:expr; $($rest:tt)*
    }) => {
        $(#[$doc])*
        #[no_mangle]
        pub unsafe extern "C" fn $name($p: *const $h, out_us: *mut i64) -> $ret {
            $crate::boundary::value(false, || {
                $crate::boundary::write_time(out_us, $p.as_ref().and_then($get))
            })
        }
        accessors!($h { $($rest)* });
    };
    ($h:ty {
        $(#[$doc:meta])* fn $name:ident($p:ident) -> $ret:ty = $get:expr; $($rest:tt)*
    }) => {
        $(#[$doc])*
        #[no_mangle]
        pub unsafe extern "C" fn $name($p: *const $h) -> $ret {
            use $crate::boundary::Fallback;
            $crate::boundary::value(<$ret>::NONE, || $p.as_ref().map($get))
        }
        accessors!($h { $($rest)* });
    };
}

/// A list handle: `pub struct H { items: Vec<Item> }`, built from a slice
/// of the core's values by `Item::new`, followed by its `accessors!`.
macro_rules! list_handle {
    (
        $(#[$doc:meta])*
        pub struct $h:ident(Vec<$item:ident>) from $core:ty;
        $($accessors:tt)*
    ) => {
        $(#[$doc])*
        pub struct $h {
            items: Vec<$item>,
        }

        impl $h {
            pub(crate) fn new(values: &[$core]) -> $h {
                let items = values.iter().map($item::new).collect();
                $h { items }
            }
        }

        accessors!($h { $($accessors)* });
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::tenure_last_error_message;

    fn last_error() -> String {
        let mut size = 0usize;
        let mut buf = vec![0 as c_char; 4096];
        let st = unsafe { tenure_last_error_message(buf.as_mut_ptr(), buf.len(), &mut size) };
        assert_eq!(st, tenure_status::TENURE_OK);
        unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_str()
            .unwrap()
            .to_owned()
    }

    #[test]
    fn a_panic_becomes_internal_and_is_reported() {
        let st = boundary(|| panic!("boom in the core"));
        assert_eq!(st, tenure_status::TENURE_INTERNAL);
        let msg = last_error();
        assert!(msg.contains("panic") && msg.contains("boom"), "{msg}");
        // A following success clears the message.
        assert_eq!(boundary(|| Ok(())), tenure_status::TENURE_OK);
        assert_eq!(last_error(), "");
        // Accessors fall back to their default on a panic.
        assert_eq!(value(7u32, || panic!("accessor")), 7);
    }
}
