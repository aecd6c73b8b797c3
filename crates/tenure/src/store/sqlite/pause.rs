//! Pause points for tests: a place in the code that a test can stop one
//! caller at, to act while it waits there, then let it go.

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Mutex;

/// An armed pause point: the key, where to say the caller paused, what
/// lets it go.
type Armed<K> = (K, Sender<()>, Receiver<()>);

/// One pause point, armed for the caller whose key matches, once.
pub(crate) struct PausePoint<K>(Mutex<Option<Armed<K>>>);

impl<K> PausePoint<K> {
    pub(crate) const fn new() -> Self {
        PausePoint(Mutex::new(None))
    }

    /// Arm for `key`: (told when the caller paused, lets it go).
    pub(crate) fn arm(&self, key: K) -> (Receiver<()>, Sender<()>) {
        let (reached_tx, reached_rx) = channel();
        let (go_tx, go_rx) = channel();
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some((key, reached_tx, go_rx));
        (reached_rx, go_tx)
    }

    /// The caller reached the point: if it is armed for a key `mine`
    /// accepts, disarm it, say so and wait to be let go.
    pub(crate) fn reach(&self, mine: impl FnOnce(&K) -> bool) {
        let armed = {
            let mut p = self.0.lock().unwrap_or_else(|e| e.into_inner());
            match &*p {
                Some((key, _, _)) if mine(key) => p.take(),
                _ => None,
            }
        };
        if let Some((_, reached, go)) = armed {
            reached.send(()).unwrap();
            go.recv().unwrap();
        }
    }
}
