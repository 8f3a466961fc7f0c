//! A small MCP client for MemPalace's server: JSON-RPC 2.0 over a stdio child or MCP Streamable
//! HTTP, behind one supervisor ([`McpClient`]) that gives both transports the same hardening:
//! per-request timeouts, stall-kill, bounded respawn with capped exponential backoff, a fail-fast
//! latch when the budget is used up (`../shared/contracts/mempalace-bridge.md`).
//!
//! **Why hand-written and not `rmcp`.** The client needs four requests (`initialize`,
//! `tools/list`, `tools/call`, `ping` replies) and two notifications. The hard part is not the
//! protocol but the supervision around it: which failures are crashes, which are "not sent,
//! retry", when a child must be SIGTERMed (and SIGCONTed, in case it is stopped) and reaped before
//! the next one may open the single-writer palace (killing a wrapper's whole process group), capping a
//! line from a runaway server without holding it, bounding the replies a flooding server is owed,
//! keeping the bearer token out of every message. With rmcp that logic would sit on top of two
//! different transport stacks whose error types and cancellation behave differently; here one
//! [`transport::Conn`] interface has two ~300-line implementations that fail the same way and are
//! tested by the same fault-injecting server. It also saves ~70 s on every warm release build
//! (measured in `../shared/reference/toolchain.md`) and a large dependency tree.
//!
//! Layout: [`config`] (environment → [`McpConfig`]), [`error`] ([`McpError`]), [`jsonrpc`]
//! (message shapes, line and SSE framing), [`stdio`] and [`http`] (the transports), [`client`]
//! (the supervisor and the public API).
//!
//! Nothing here writes to stdout: diagnostics go to stderr through [`crate::diag!`].

pub mod client;
pub mod config;
pub mod error;
mod http;
pub mod jsonrpc;
mod stdio;
mod transport;

pub use client::{CallResult, McpClient, McpStats, ToolInfo};
pub use config::McpConfig;
pub use error::McpError;

/// The MCP protocol version this client asks for in `initialize`.
pub const PROTOCOL_VERSION: &str = "2025-06-18";
/// Versions a server may answer with that this client understands.
pub const KNOWN_PROTOCOL_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
