//! The peer's own model (`[llm]` of the peer's config, `COVO_LLM_*` overriding it), shared by
//! `test_generate` and the sub-agents.
//!
//! Every model request of the peer runs on one dedicated current-thread Tokio runtime, driven by
//! its own thread: the blocking tool threads of `covo peer` and the sub-agent threads enter it
//! with `Handle::block_on`. One runtime means the HTTP client's pooled connections always belong
//! to a live runtime, whichever thread asked.

use std::future::Future;
use std::sync::Arc;
use std::thread::JoinHandle;

use covo::llm::ChatModel;

/// The model and the runtime its requests run on.
pub struct PeerModel {
    chat: Arc<dyn ChatModel>,
    name: String,
    handle: tokio::runtime::Handle,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    driver: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for PeerModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeerModel")
            .field("model", &self.chat.describe())
            .finish()
    }
}

impl PeerModel {
    /// Starts the runtime thread. `name` is the model's name, reported in results.
    pub fn start(chat: Arc<dyn ChatModel>, name: &str) -> std::io::Result<Arc<PeerModel>> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .thread_name("covo-peer-llm")
            .build()?;
        let handle = rt.handle().clone();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let driver = std::thread::Builder::new()
            .name("covo-peer-llm".into())
            .spawn(move || {
                // Drives IO and timers for every `Handle::block_on` until told to stop.
                rt.block_on(async {
                    let _ = rx.await;
                });
            })?;
        Ok(Arc::new(PeerModel {
            chat,
            name: name.to_string(),
            handle,
            stop: Some(tx),
            driver: Some(driver),
        }))
    }

    /// The model.
    pub fn chat(&self) -> &Arc<dyn ChatModel> {
        &self.chat
    }

    /// The model's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Runs `f` to completion on the model runtime, blocking this (non-async) thread.
    pub fn block_on<F: Future>(&self, f: F) -> F::Output {
        self.handle.block_on(f)
    }
}

impl Drop for PeerModel {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.driver.take() {
            let _ = t.join();
        }
    }
}
