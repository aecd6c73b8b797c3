//! The PostgreSQL work doorbell: `LISTEN tenure_work` on a dedicated
//! connection (never one of the pool's), owned by a listener thread that
//! moves an in-process counter ([`LocalBell`]) for each notification.
//!
//! Transitions that can make a job claimable send `NOTIFY tenure_work,
//! '<production>'` in their own transaction (see `PgTxn::commit`), so the
//! notification is delivered only if that transaction commits. The listener
//! starts on an authority's first wait and LISTENs before that wait's first
//! claim attempt, so nothing committed after the attempt can be missed. If
//! its connection is lost it reconnects (at most once a second) and moves
//! the counter after each reconnect, so waiters re-try whatever they may
//! have missed. The thread ends within [`CHECK`] once the backend is gone.

use super::{tls, Pool};
use crate::doorbell::{Doorbell, LocalBell};
use crate::error::Result;
use postgres::fallible_iterator::FallibleIterator;
use postgres::Client;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// The notification channel.
pub(crate) const CHANNEL: &str = "tenure_work";
/// How often the listener looks whether its authority is gone.
const CHECK: Duration = Duration::from_secs(1);

fn listen(pool: &Pool) -> Result<Client> {
    let mut c = tls::connect(&pool.config, &pool.tls)?;
    c.batch_execute(&format!("LISTEN {CHANNEL}"))
        .map_err(super::map_err)?;
    Ok(c)
}

/// Connect, LISTEN, and start the listener thread; the bell it rings.
pub(crate) fn start(pool: Arc<Pool>) -> Result<Arc<LocalBell>> {
    let client = listen(&pool)?;
    let bell = Arc::new(LocalBell::default());
    let weak = Arc::downgrade(&bell);
    std::thread::Builder::new()
        .name("tenure-listen".into())
        .spawn(move || run(client, pool, weak))
        .map_err(|e| crate::Error::Store(format!("cannot start the listener thread: {e}")))?;
    Ok(bell)
}

fn run(mut client: Client, pool: Arc<Pool>, bell: Weak<LocalBell>) {
    loop {
        let mut lost = false;
        {
            let mut n = client.notifications();
            let mut it = n.timeout_iter(CHECK);
            loop {
                match it.next() {
                    Ok(Some(_)) => match bell.upgrade() {
                        Some(b) => b.wake(),
                        None => return,
                    },
                    Err(_) => {
                        lost = true;
                        break;
                    }
                    Ok(None) => break,
                }
            }
        }
        if bell.strong_count() == 0 {
            return;
        }
        if lost || client.is_closed() {
            loop {
                std::thread::sleep(CHECK);
                if bell.strong_count() == 0 {
                    return;
                }
                if let Ok(c) = listen(&pool) {
                    client = c;
                    break;
                }
            }
            if let Some(b) = bell.upgrade() {
                b.wake();
            }
        }
    }
}
