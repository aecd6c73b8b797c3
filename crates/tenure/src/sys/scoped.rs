//! Lending a closure that borrows from its caller's frame to other threads
//! for as long as the caller stays in [`lend`].
//!
//! A commit group's leader runs the operations of other callers, each a
//! closure borrowing its caller's arguments; the queue that carries them
//! holds `'static` values. [`lend`] hands out a [`Lent`] handle, which is
//! `'static`, and takes the closure back (dropping it) before it returns or
//! unwinds: a [`Lent`] that outlives that finds nothing to call.

use std::sync::{Arc, Mutex, MutexGuard};

type Erased<A, R> = Box<dyn FnMut(&mut A) -> R + Send + 'static>;

/// A handle on a lent closure; see [`lend`]. Cloning it shares the loan.
pub(crate) struct Lent<A: 'static, R: 'static> {
    f: Arc<Mutex<Option<Erased<A, R>>>>,
}

impl<A: 'static, R: 'static> Clone for Lent<A, R> {
    fn clone(&self) -> Self {
        Lent { f: self.f.clone() }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl<A: 'static, R: 'static> Lent<A, R> {
    /// A handle on a closure that borrows nothing: it stays callable for as
    /// long as a handle on it lives.
    #[cfg(test)]
    pub(crate) fn owned(f: impl FnMut(&mut A) -> R + Send + 'static) -> Lent<A, R> {
        Lent {
            f: Arc::new(Mutex::new(Some(Box::new(f)))),
        }
    }

    /// Call the closure, if its loan has not ended (`None` if it has). A
    /// call holds the loan: [`lend`] waits for it before it returns.
    pub(crate) fn call(&self, a: &mut A) -> Option<R> {
        lock(&self.f).as_mut().map(|f| f(a))
    }
}

/// Takes the closure back when [`lend`] ends, however it ends.
struct Loan<'a, A: 'static, R: 'static>(&'a Mutex<Option<Erased<A, R>>>);

impl<A: 'static, R: 'static> Drop for Loan<'_, A, R> {
    fn drop(&mut self) {
        let f = lock(self.0).take();
        drop(f);
    }
}

/// Run `body` with a `'static` handle on `f`, which may borrow from the
/// caller's frame: until `lend` returns (or unwinds), any thread holding
/// the handle can call `f`; after that, calls find nothing. `lend` waits
/// for a call under way before it returns.
pub(crate) fn lend<'f, A: 'static, R: 'static, B>(
    f: Box<dyn FnMut(&mut A) -> R + Send + 'f>,
    body: impl FnOnce(Lent<A, R>) -> B,
) -> B {
    // SAFETY: only the lifetime changes (the same fat pointer). The erased
    // box lives in the mutex of `cell`, is reached only through that mutex
    // (`Lent::call` holds the lock for the whole call), and `loan`, a local
    // of this frame that no caller can leak, takes it out and drops it under
    // the lock before this function returns or unwinds, so after a call in
    // progress. Nothing borrowed by `f` ('f) is used after this frame ends,
    // and every `'f` borrow outlives this frame.
    let erased: Erased<A, R> =
        unsafe { std::mem::transmute::<Box<dyn FnMut(&mut A) -> R + Send + 'f>, Erased<A, R>>(f) };
    let cell = Arc::new(Mutex::new(Some(erased)));
    let loan = Loan(&cell);
    let out = body(Lent { f: cell.clone() });
    drop(loan);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lent_closure_is_callable_until_the_loan_ends() {
        let mut seen = Vec::new();
        let kept = lend(
            Box::new(|x: &mut u32| {
                seen.push(*x);
                *x + 1
            }),
            |lent| {
                let other = lent.clone();
                let r = std::thread::spawn(move || other.call(&mut 41))
                    .join()
                    .unwrap();
                assert_eq!(r, Some(42));
                assert_eq!(lent.call(&mut 1), Some(2));
                lent
            },
        );
        assert_eq!(kept.call(&mut 7), None, "the loan ended");
        assert_eq!(seen, [41, 1]);
        let owned = Lent::owned(|x: &mut u32| *x * 2);
        assert_eq!(owned.call(&mut 4), Some(8));
    }

    #[test]
    fn a_loan_ends_when_its_body_panics() {
        let mut kept = None;
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            lend(Box::new(|x: &mut u32| *x), |lent| {
                kept = Some(lent);
                panic!("the body panics");
            })
        }));
        assert!(r.is_err());
        assert_eq!(kept.unwrap().call(&mut 3), None);
    }
}
