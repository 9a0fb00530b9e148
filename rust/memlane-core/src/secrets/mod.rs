//! What the secret masker (Python's `memlane.secrets`) asks of the core: finding in one pass
//! where any of its patterns' literal prefixes occurs ([`literals`]). Kept under the concern
//! it serves, not among the engine's own modules.

pub mod literals;
