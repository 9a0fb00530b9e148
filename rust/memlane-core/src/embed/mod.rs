//! What the local embedder (Python's `memlane.embed.local`) asks of the core: BERT's word-piece
//! ids of the plain ASCII parts of a text ([`wordpiece`]), which the tokenizers library spends
//! most of an embedding feed's host time on. Kept under the concern it serves, not among the
//! engine's own modules.

pub mod wordpiece;
