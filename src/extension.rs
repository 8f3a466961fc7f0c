//! The one process-wide state: made on first use, kept for the life of the pi process.
//!
//! pi's `/reload` runs `index.js` again, but Node's require cache hands back the same native module,
//! so it finds this state and only re-registers: one store, one HTTP pool, one runtime.

use crate::bridge::Bridge;
use crate::config::Config;
use crate::voice::Voice;
use once_cell::sync::Lazy;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Counts how many times the state was built in this process (always 1: tests assert it).
pub static STATE_CREATIONS: AtomicUsize = AtomicUsize::new(0);

pub struct Extension {
    /// `None` when `DOTTY_VOICE_TOOLS=0`.
    pub voice: Option<Arc<Voice>>,
    /// `None` when `MEMPALACE_BRIDGE=0`.
    pub bridge: Option<Arc<Bridge>>,
    // A std Mutex: held only to insert or remove an entry, never across an await.
    cancels: Mutex<HashMap<u32, tokio::sync::oneshot::Sender<()>>>,
}

static EXTENSION: Lazy<Extension> = Lazy::new(|| {
    STATE_CREATIONS.fetch_add(1, Ordering::SeqCst);
    let cfg = Config::from_env();
    for w in &cfg.warnings {
        crate::diag!("{w}");
    }
    let voice = cfg.voice.enabled.then(|| Arc::new(Voice::new(cfg.voice)));
    let bridge = Bridge::from_config(cfg.palace, cfg.mcp);
    Extension { voice, bridge, cancels: Mutex::new(HashMap::new()) }
});

impl Extension {
    pub fn get() -> &'static Extension {
        &EXTENSION
    }

    /// Registers a cancellable call; the receiver fires when [`Extension::cancel`] is called.
    pub fn track(&self, call_id: u32) -> tokio::sync::oneshot::Receiver<()> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.cancels.lock().unwrap_or_else(|p| p.into_inner()).insert(call_id, tx);
        rx
    }

    pub fn untrack(&self, call_id: u32) {
        self.cancels.lock().unwrap_or_else(|p| p.into_inner()).remove(&call_id);
    }

    /// Cancels a tracked call (pi's AbortSignal fired). Unknown ids are ignored: the call finished.
    pub fn cancel(&self, call_id: u32) -> bool {
        let tx = self.cancels.lock().unwrap_or_else(|p| p.into_inner()).remove(&call_id);
        tx.map(|tx| tx.send(()).is_ok()).unwrap_or(false)
    }

    pub fn calls_in_flight(&self) -> usize {
        self.cancels.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}
