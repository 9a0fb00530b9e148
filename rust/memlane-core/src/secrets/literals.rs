//! Where any of a set of literal strings occurs in a text, found in one pass.
//!
//! The secret masker (Python's `memlane.secrets`) knows the literal each of its patterns
//! starts with (`AKIA`, `ghp_`, `token`, `://`…): one pass of an Aho–Corasick automaton over
//! a text finds every place a pattern can match, and the patterns are tried only there,
//! instead of each regex scanning the whole text (25 scans of every recalled text).

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};

use crate::{Error, Result};

/// A set of literals to find, compiled once.
#[derive(Debug, Clone)]
pub struct Literals {
    automaton: AhoCorasick,
}

impl Literals {
    /// Compile `literals`; with `ignore_case`, ASCII letters match either case.
    ///
    /// # Errors
    /// `InvalidArgument` for an empty literal (it would occur everywhere) or a set too large
    /// to compile.
    pub fn new<S: AsRef<str>>(literals: &[S], ignore_case: bool) -> Result<Literals> {
        if literals.iter().any(|l| l.as_ref().is_empty()) {
            return Err(Error::InvalidArgument(
                "an empty literal occurs everywhere: give non-empty strings".into(),
            ));
        }
        let automaton = AhoCorasick::builder()
            // Overlapping search needs standard semantics; a DFA is the fastest to run and,
            // for a few dozen short literals, small.
            .match_kind(MatchKind::Standard)
            .kind(Some(AhoCorasickKind::DFA))
            .ascii_case_insensitive(ignore_case)
            .build(literals.iter().map(AsRef::as_ref))
            .map_err(|e| Error::InvalidArgument(format!("cannot compile the literals: {e}")))?;
        Ok(Literals { automaton })
    }

    /// Every occurrence as (byte offset where it starts, index of the literal), overlapping
    /// ones included, ordered by offset, then literal.
    #[must_use]
    pub fn find(&self, text: &str) -> Vec<(usize, usize)> {
        let mut found: Vec<(usize, usize)> = self
            .automaton
            .find_overlapping_iter(text)
            .map(|m| (m.start(), m.pattern().as_usize()))
            .collect();
        // The automaton reports each occurrence where it ends.
        found.sort_unstable();
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_every_occurrence_overlapping_ones_included() {
        let lits = Literals::new(&["sk-", "sk-ant-", "key", "ey"], false).unwrap();
        assert_eq!(
            lits.find("my key: sk-ant-x, keykey"),
            vec![
                (3, 2),
                (4, 3),
                (8, 0),
                (8, 1),
                (18, 2),
                (19, 3),
                (21, 2),
                (22, 3)
            ]
        );
        assert!(lits.find("nothing to see").is_empty());
    }

    #[test]
    fn ignores_ascii_case_only_when_asked() {
        let exact = Literals::new(&["token"], false).unwrap();
        let any = Literals::new(&["token"], true).unwrap();
        assert!(exact.find("TOKEN=1").is_empty());
        assert_eq!(any.find("TOKEN=1 Token"), vec![(0, 0), (8, 0)]);
    }

    #[test]
    fn offsets_are_bytes() {
        let lits = Literals::new(&["://"], false).unwrap();
        assert_eq!(lits.find("é https://x"), vec![(8, 0)]);
    }

    #[test]
    fn an_empty_literal_is_refused() {
        assert!(matches!(
            Literals::new(&["ok", ""], false),
            Err(Error::InvalidArgument(_))
        ));
    }
}
