//! The boundary every export goes through, the argument readers and the
//! one macro that writes every export.
//!
//! - [`boundary`] wraps every status-returning export: it catches panics,
//!   maps core errors to `tenure_status` and records the last-error message.
//! - [`value`] wraps every accessor that returns a plain value.
//! - [`Arg::read`] reads one argument (a string as `&str`, a handle as a
//!   reference, an input struct as the core's type) and names it in the
//!   error message; [`out_arg`] checks one out-parameter.
//! - `export!` writes every `tenure_*` function from its signature and its
//!   body, so each export's definition is found by its name.

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

/// A required (non-NULL) out-parameter, given back as the raw pointer.
pub(crate) fn out_arg<T>(p: *mut T, name: &str) -> R<*mut T> {
    if p.is_null() {
        return Err(invalid(format!("`{name}` must not be NULL")));
    }
    Ok(p)
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

/// Arguments read as they are: the body of the export checks them.
macro_rules! plain_args {
    ($($t:ty),*) => {$(
        impl $crate::boundary::Arg<'_> for $t {
            type Out = $t;
            unsafe fn read(self, _: &'static str) -> $crate::boundary::R<$t> {
                Ok(self)
            }
        }
    )*};
}
// Numbers, and the out-pointers and caller buffers of accessors (an
// accessor's body checks them itself).
plain_args!(
    bool,
    u32,
    *const u8,
    i64,
    u64,
    usize,
    *mut i64,
    *mut u32,
    *mut u64,
    *mut usize,
    *mut c_char
);

/// Every export of the library is written through this macro, one item
/// per function, each with its literal `tenure_*` name (doc comments above
/// an item go to its export). The forms:
///
/// - `fn NAME(p: T, ...) -> out: *mut U = EXPR;` returns `tenure_status`:
///   reads every argument in parameter order with [`Arg::read`] (the first
///   bad one is reported), checks the out-parameter, evaluates `EXPR` (a
///   `U`) and writes it to `*out` on success;
/// - `fn NAME(p: T, ...) -> (out: *mut U, out2: *mut V, ...) = EXPR;` the
///   same with several out-parameters (checked in order), `EXPR` a tuple
///   written to them only on success;
/// - `fn NAME(p: T, ...) = EXPR;` returns `tenure_status`, no
///   out-parameter; `EXPR` is an `R<()>`;
/// - `fn NAME(p: T, ...) -> tenure_status { BLOCK }` returns
///   `tenure_status` for a call that checks its arguments in an order of
///   its own (caller buffers, optional handles, arrays of a given length):
///   `BLOCK` (an `R<()>`) reads them with [`Arg::read`] and [`out_arg`];
/// - `fn NAME(p: T, ...) -> tenure_status = alias TARGET;` the same
///   function as the export `TARGET` (same parameters, checked at compile
///   time) under another name;
/// - `fn NAME(p: T, ...) -> RET = value EXPR;` an accessor returning a
///   plain value without touching the last-error message: reads every
///   argument with [`Arg::read`] and evaluates `EXPR` (an `Option<RET>`);
///   a bad argument, `None` or a caught panic returns RET's [`Fallback`]
///   (NULL, 0, false);
/// - `fn NAME(p: *mut H) = free;` frees a handle made by [`boxed`] (NULL
///   is a no-op).
///
/// Every form but `value` and `free` runs inside [`boundary`].
macro_rules! export {
    () => {};
    (
        $(#[$doc:meta])*
        fn $name:ident($p:ident: *mut $h:ty) = free;
        $($rest:tt)*
    ) => {
        $(#[$doc])*
        #[no_mangle]
        pub unsafe extern "C" fn $name($p: *mut $h) {
            $crate::boundary::free_box($p)
        }
        export!($($rest)*);
    };
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
                let out = $crate::boundary::out_arg($out, stringify!($out))?;
                out.write($body);
                Ok(())
            })
        }
        export!($($rest)*);
    };
    (
        $(#[$doc:meta])*
        fn $name:ident($($p:ident: $t:ty),* $(,)?)
            -> ($($out:ident: *mut $ot:ty),+ $(,)?) = $body:expr;
        $($rest:tt)*
    ) => {
        $(#[$doc])*
        #[no_mangle]
        pub unsafe extern "C" fn $name($($p: $t,)* $($out: *mut $ot),+) -> tenure_status {
            $crate::boundary::boundary(|| {
                $(let $p = $crate::boundary::Arg::read($p, stringify!($p))?;)*
                let outs = ($($crate::boundary::out_arg($out, stringify!($out))?,)+);
                $crate::boundary::Outs::write($body, outs);
                Ok(())
            })
        }
        export!($($rest)*);
    };
    (
        $(#[$doc:meta])*
        fn $name:ident($($p:ident: $t:ty),* $(,)?) -> tenure_status $body:block
        $($rest:tt)*
    ) => {
        $(#[$doc])*
        #[no_mangle]
        pub unsafe extern "C" fn $name($($p: $t),*) -> tenure_status {
            $crate::boundary::boundary(|| $body)
        }
        export!($($rest)*);
    };
    (
        $(#[$doc:meta])*
        fn $name:ident($($p:ident: $t:ty),* $(,)?) -> tenure_status = alias $target:ident;
        $($rest:tt)*
    ) => {
        $(#[$doc])*
        #[no_mangle]
        pub unsafe extern "C" fn $name($($p: $t),*) -> tenure_status {
            const _: unsafe extern "C" fn($($t),*) -> tenure_status = $target;
            $target($($p),*)
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
    (
        $(#[$doc:meta])*
        fn $name:ident($($p:ident: $t:ty),* $(,)?) -> $ret:ty = value $body:expr;
        $($rest:tt)*
    ) => {
        $(#[$doc])*
        #[no_mangle]
        pub unsafe extern "C" fn $name($($p: $t),*) -> $ret {
            $crate::boundary::value(<$ret as $crate::boundary::Fallback>::NONE, || {
                $(let $p = $crate::boundary::Arg::read($p, stringify!($p)).ok()?;)*
                $body
            })
        }
        export!($($rest)*);
    };
}

/// The out-parameters of a multi-out export: a tuple of values written to
/// the tuple of their checked pointers.
pub(crate) trait Outs<P> {
    unsafe fn write(self, to: P);
}

impl<A, B> Outs<(*mut A, *mut B)> for (A, B) {
    unsafe fn write(self, (a, b): (*mut A, *mut B)) {
        a.write(self.0);
        b.write(self.1);
    }
}

impl<A, B, C> Outs<(*mut A, *mut B, *mut C)> for (A, B, C) {
    unsafe fn write(self, (a, b, c): (*mut A, *mut B, *mut C)) {
        a.write(self.0);
        b.write(self.1);
        c.write(self.2);
    }
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

impl Fallback for bool {
    const NONE: Self = false;
}

/// A `value` export returning a status (`tenure_last_error_message()`,
/// which must not touch the message) reports a caught panic as internal.
impl Fallback for tenure_status {
    const NONE: Self = tenure_status::TENURE_INTERNAL;
}

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

/// A list handle: `pub struct H { items: Vec<Item> }`, built from a slice
/// of the core's values by `Item::new`.
macro_rules! list_handle {
    (
        $(#[$doc:meta])*
        pub struct $h:ident(Vec<$item:ident>) from $core:ty;
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
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::tenure_last_error_message;

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
