//! What the Python ranking (`memlane.ranking`) asks of the core beyond the hybrid search
//! itself ([`crate::hybrid`]): the text features its time-aware reordering reads from hits
//! ([`features`]). Kept under the concern it serves, not among the engine's own modules, so
//! the engine's layout shows what the index does and this shows what a caller's step needs.

pub mod features;
