//! A small MCP client for MemPalace's server: JSON-RPC 2.0 over a stdio child or MCP Streamable
//! HTTP, behind one supervisor ([`McpClient`]) that gives both transports the same hardening:
//! per-request timeouts, stall-kill, bounded respawn with capped exponential backoff, a fail-fast
//! latch when the budget is used up (docs/mempalace-bridge.md).
//!
//! **Why hand-written and not `rmcp`.** The client needs four requests (`initialize`,
//! `tools/list`, `tools/call`, `ping` replies) and two notifications. The hard part is not the
//! protocol but the supervision around it: which failures are crashes, which are "not sent,
//! retry", when a child must be SIGTERMed (and SIGCONTed, in case it is stopped) and reaped before
//! the next one may open the single-writer palace (killing a wrapper's whole process group), capping a
//! line from a runaway server without holding it, bounding the replies a flooding server is owed,
//! keeping the bearer token out of every message. With rmcp that logic would sit on top of two
//! different transport stacks whose error types and cancellation behave differently; here one
//! [`transport::Conn`] interface has two implementations that share one request race, fail the
//! same way and are tested by the same fault-injecting server. It also saves ~70 s on every warm release build
//! and a large dependency tree.
//!
//! Layout, each module using only the ones below it (like mini-redis's frame → connection →
//! client):
//!
//! ```text
//! client      the supervisor and the public API (McpClient); client/attempt.rs: a live connection,
//!             respawn and backoff; client/latch.rs: the give-up, its tries, errors no try fixes
//!   handshake   initialize + tools/list on a fresh connection
//!   transport   Conn: one interface over the two transports
//!     stdio       a child's messages: requests routed by id; stdio/tasks.rs the reader and writer
//!       child       the child process: spawn, reap, group kill, "did it read it"
//!     http        MCP Streamable HTTP: POST, sessions, SSE, no redirects, scrubbed texts
//!       race        the one request race (reply / died / timeout / cancel) and Failure
//!       framing     capped lines with a streaming id scan, SSE events
//!       jsonrpc     message shapes, initialize params, parse
//!       error       McpError;  config  environment → McpConfig
//! ```
//!
//! Nothing here writes to stdout: diagnostics go to stderr through [`crate::diag!`].

mod child;
pub(crate) mod client;
pub(crate) mod config;
pub(crate) mod error;
/// Public for `fuzz/` (the line reader and the SSE parser are fuzzed); the client is the API.
#[doc(hidden)]
pub mod framing;
mod handshake;
mod http;
pub mod jsonrpc;
mod race;
mod stdio;
mod transport;

pub use client::{CallResult, McpClient, McpStats, ToolInfo};
pub use config::McpConfig;
pub use error::McpError;
/// Public for `fuzz/`: how one `tools/list` entry is read.
#[doc(hidden)]
pub use handshake::parse_tool;
pub use jsonrpc::{KNOWN_PROTOCOL_VERSIONS, PROTOCOL_VERSION};
