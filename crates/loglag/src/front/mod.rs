//! The ways records come in besides the raw writer: the tracing `Layer`, loglag's own
//! macros, the `log` logger, and `Config`, which builds a pipeline from TOML, a URL or
//! the environment. Each sits on `handle.rs` and `builder.rs`; nothing below imports
//! them.

#[cfg(feature = "config")]
pub(crate) mod config;
#[cfg(feature = "tracing")]
pub(crate) mod layer;
#[cfg(feature = "log")]
pub(crate) mod logger;
#[doc(hidden)]
pub mod macros;
