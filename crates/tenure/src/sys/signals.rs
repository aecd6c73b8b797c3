//! Running a function when SIGTERM or SIGINT arrives (Unix): the handlers
//! write one byte to a pipe, and a thread of its own reads it and calls the
//! function (a signal handler itself may not take locks).

use crate::error::{Error, Result};
use std::sync::atomic::{AtomicI32, Ordering};

/// The write end of the signal pipe, once installed (-1 before).
static SIGNAL_PIPE: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_stop_signal(_: libc::c_int) {
    let fd = SIGNAL_PIPE.load(Ordering::Relaxed);
    if fd >= 0 {
        // SAFETY: write(2) is async-signal-safe; one byte from a static
        // buffer to our own pipe.
        unsafe {
            libc::write(fd, b"x".as_ptr().cast(), 1);
        }
    }
}

/// Call `f` on a thread of its own each time SIGTERM or SIGINT arrives,
/// from now on: installs handlers for both. Once per process: a second
/// call is [`Error::InvalidArgument`] (`what` names the call in its
/// message).
pub(crate) fn on_stop_signals(what: &str, mut f: impl FnMut() + Send + 'static) -> Result<()> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 writes two descriptors into our array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(Error::Internal(format!(
            "cannot create the signal pipe: {}",
            std::io::Error::last_os_error()
        )));
    }
    let close = |fds: [libc::c_int; 2]| {
        // SAFETY: closing the two descriptors pipe2 just gave us, which
        // nothing else uses.
        unsafe {
            libc::close(fds[0]);
            libc::close(fds[1]);
        }
    };
    if SIGNAL_PIPE
        .compare_exchange(-1, fds[1], Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        close(fds);
        return Err(Error::invalid(format!(
            "{what} was already called in this process"
        )));
    }
    let read_end = fds[0];
    let t = std::thread::Builder::new()
        .name("tenure-signals".into())
        .spawn(move || {
            let mut b = [0u8; 1];
            loop {
                // SAFETY: reading one byte from our own pipe into `b`.
                let n = unsafe { libc::read(read_end, b.as_mut_ptr().cast(), 1) };
                if n == 1 {
                    f();
                } else if n < 0
                    && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
                {
                    continue;
                } else {
                    return;
                }
            }
        });
    if let Err(e) = t {
        return Err(Error::Internal(format!(
            "cannot start the signal thread: {e}"
        )));
    }
    for sig in [libc::SIGTERM, libc::SIGINT] {
        // SAFETY: a zeroed sigaction is valid; installing a handler that
        // only loads an atomic and calls write(2), both async-signal-safe.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_stop_signal as *const () as libc::sighandler_t;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            if libc::sigaction(sig, &sa, std::ptr::null_mut()) != 0 {
                return Err(Error::Internal(format!(
                    "cannot install a signal handler: {}",
                    std::io::Error::last_os_error()
                )));
            }
        }
    }
    Ok(())
}
