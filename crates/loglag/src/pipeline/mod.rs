//! The pipeline a user holds: the builder that starts it (`builder.rs`), the handles
//! that log into it and stop it (`handle.rs`), the writer thread (`worker.rs`) and
//! the flush on panic and on signals (`hooks.rs`). Above `core/`, which they drive.

pub(crate) mod builder;
pub(crate) mod handle;
pub(crate) mod hooks;
pub(crate) mod worker;
