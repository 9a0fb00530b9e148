//! BERT's word-piece ids of the plain ASCII parts of a text, equal to the tokenizers library's.
//!
//! The library's `BertNormalizer` and `BertPreTokenizer` keep each byte's alignment to the
//! original text through every step, which is most of what tokenising a transcript costs. Both
//! act on one character at a time (clean it, space out a CJK one, strip accents, lowercase) and
//! split at whitespace, so a text's ids are those of its whitespace-separated parts, one part
//! after the other. A part of printable ASCII (no control characters, nothing beyond 0x7e) needs
//! only lowercasing, a split at each punctuation mark and the greedy longest-match word pieces,
//! which [`WordPiece::encode`] does here. The other parts are handed back, each run of them as
//! one span of the text, for the library to encode; so is a whole text naming one of the
//! tokenizer's added tokens (`[MASK]` is matched in the raw text before anything else).
//!
//! ```
//! use memlane_core::embed::wordpiece::WordPiece;
//! let vocab = ["[UNK]", "hello", ",", "world", "##s"].iter().enumerate().map(|(i, t)| (t.to_string(), i as u32));
//! let wp = WordPiece::new(vocab, "[UNK]", "##", 100, true, &[]).unwrap();
//! let encoded = wp.encode("Hello, worlds! café");
//! assert_eq!(encoded.ids, [1, 2, 3, 4, 0]);
//! assert_eq!(encoded.rest, [(5, 15..20)]); // "café", whose ids the library inserts at 5
//! ```

use crate::{Error, Result};
use aho_corasick::AhoCorasick;
use rayon::prelude::*;
use rustc_hash::FxHashMap;
use std::borrow::Cow;
use std::ops::Range;

/// A WordPiece vocabulary and the BERT normaliser's one setting that matters for plain ASCII.
pub struct WordPiece {
    /// Pieces that start a word.
    first: FxHashMap<Box<str>, u32>,
    /// Pieces that continue a word, without the continuing prefix (`##`).
    continuing: FxHashMap<Box<str>, u32>,
    /// Longest piece of each map in bytes: no longer slice of a word can match.
    longest_first: usize,
    longest_continuing: usize,
    unk: u32,
    /// A longer word is one unknown token, as the library's `max_input_chars_per_word` says.
    max_chars: usize,
    lowercase: bool,
    /// The added tokens, ignoring ASCII case (a superset of the library's exact matches).
    added: Option<AhoCorasick>,
    /// Drop a mark right after another (see [`WordPiece::runs_as_first_mark`]).
    runs_as_first_mark: bool,
}

/// A text's ids, and the spans left to the library.
#[derive(Debug, PartialEq, Eq)]
pub struct Encoded {
    /// The ids of the text's plain ASCII parts, in order.
    pub ids: Vec<u32>,
    /// `(position in ids, byte range of the text)`: the library's ids of that span go there.
    pub rest: Vec<(usize, Range<usize>)>,
    /// The text as read, when [`WordPiece::runs_as_first_mark`] dropped marks from it: `rest`'s
    /// ranges are then of this text.
    pub read: Option<String>,
}

impl WordPiece {
    /// A vocabulary of `(piece, id)`, as a tokenizer.json's WordPiece model holds it.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `unk_token` is not in the vocabulary or an added token is
    /// empty.
    pub fn new(
        vocab: impl IntoIterator<Item = (String, u32)>,
        unk_token: &str,
        continuing_prefix: &str,
        max_chars: usize,
        lowercase: bool,
        added_tokens: &[String],
    ) -> Result<Self> {
        let mut first = FxHashMap::default();
        let mut continuing = FxHashMap::default();
        for (piece, id) in vocab {
            if let Some(rest) = piece.strip_prefix(continuing_prefix) {
                continuing.insert(Box::from(rest), id);
            }
            first.insert(piece.into_boxed_str(), id);
        }
        let unk = *first.get(unk_token).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "the unknown token {unk_token:?} is not in the vocabulary"
            ))
        })?;
        if added_tokens.iter().any(String::is_empty) {
            return Err(Error::InvalidArgument("an added token is empty".into()));
        }
        let added = (!added_tokens.is_empty())
            .then(|| {
                AhoCorasick::builder()
                    .ascii_case_insensitive(true)
                    .build(added_tokens)
                    .map_err(|e| Error::InvalidArgument(format!("added tokens: {e}")))
            })
            .transpose()?;
        let longest =
            |map: &FxHashMap<Box<str>, u32>| map.keys().map(|k| k.len()).max().unwrap_or(0);
        Ok(WordPiece {
            longest_first: longest(&first),
            longest_continuing: longest(&continuing),
            first,
            continuing,
            unk,
            max_chars,
            lowercase,
            added,
            runs_as_first_mark: false,
        })
    }

    /// Encode each text as [`read_runs_as_first_mark`] reads it: the ids and spans are the read
    /// text's, which [`Encoded::read`] then holds.
    #[must_use]
    pub fn runs_as_first_mark(mut self, on: bool) -> Self {
        self.runs_as_first_mark = on;
        self
    }

    /// The ids of `text`'s plain ASCII parts, and where the library's ids of the rest go.
    pub fn encode(&self, text: &str) -> Encoded {
        if self.runs_as_first_mark {
            if let Cow::Owned(read) = read_runs_as_first_mark(text) {
                let mut out = self.encode_text(&read);
                out.read = Some(read);
                return out;
            }
        }
        self.encode_text(text)
    }

    fn encode_text(&self, text: &str) -> Encoded {
        let mut out = Encoded {
            ids: Vec::with_capacity(text.len() / 4),
            rest: Vec::new(),
            read: None,
        };
        if self
            .added
            .as_ref()
            .is_some_and(|added| added.is_match(text))
        {
            out.rest.push((0, 0..text.len()));
            return out;
        }
        let bytes = text.as_bytes();
        // Consecutive parts the library encodes go to it as one span, whitespace included
        // (which it splits on as this does): fewer, longer calls.
        let mut run: Option<Range<usize>> = None;
        let mut lowered = String::new();
        let mut at = 0;
        while at < bytes.len() {
            if is_space(bytes[at]) {
                at += 1;
                continue;
            }
            let start = at;
            let mut plain = true;
            while at < bytes.len() && !is_space(bytes[at]) {
                plain &= (0x21..=0x7e).contains(&bytes[at]);
                at += 1;
            }
            if plain {
                if let Some(span) = run.take() {
                    out.rest.push((out.ids.len(), span));
                }
                // ASCII whitespace never falls inside a multi-byte character: `start..at` is
                // on character boundaries.
                let part = &text[start..at];
                if self.lowercase {
                    lowered.clear();
                    lowered.push_str(part);
                    lowered.make_ascii_lowercase();
                    self.encode_part(&lowered, &mut out.ids);
                } else {
                    self.encode_part(part, &mut out.ids);
                }
            } else {
                run = Some(run.map_or(start, |span| span.start)..at);
            }
        }
        if let Some(span) = run {
            out.rest.push((out.ids.len(), span));
        }
        out
    }

    /// [`WordPiece::encode`] of each text, on every core.
    pub fn encode_all(&self, texts: &[&str]) -> Vec<Encoded> {
        // A few texts a task: a chunk takes microseconds, less than handing it to a thread.
        texts
            .par_iter()
            .with_min_len(16)
            .map(|text| self.encode(text))
            .collect()
    }

    /// A part of printable ASCII: words split at each punctuation mark, which is a word alone.
    fn encode_part(&self, part: &str, ids: &mut Vec<u32>) {
        let bytes = part.as_bytes();
        let mut at = 0;
        while at < bytes.len() {
            let start = at;
            at += 1;
            if !bytes[start].is_ascii_punctuation() {
                while at < bytes.len() && !bytes[at].is_ascii_punctuation() {
                    at += 1;
                }
            }
            self.encode_word(&part[start..at], ids);
        }
    }

    /// Greedy longest-match pieces; a word with a piece missing from the vocabulary is one
    /// unknown token, as is a word over `max_chars`.
    fn encode_word(&self, word: &str, ids: &mut Vec<u32>) {
        if word.len() > self.max_chars {
            ids.push(self.unk);
            return;
        }
        let mark = ids.len();
        let mut start = 0;
        while start < word.len() {
            let (map, longest) = if start == 0 {
                (&self.first, self.longest_first)
            } else {
                (&self.continuing, self.longest_continuing)
            };
            let mut end = word.len().min(start + longest);
            loop {
                if end <= start {
                    ids.truncate(mark);
                    ids.push(self.unk);
                    return;
                }
                if let Some(&id) = map.get(&word[start..end]) {
                    ids.push(id);
                    start = end;
                    break;
                }
                end -= 1;
            }
        }
    }
}

/// `text` with each ASCII punctuation mark or symbol (`_` aside: it joins an identifier's words)
/// that follows another dropped, so that a run of them reads as its first; borrowed when none is.
/// Marks are ASCII, so dropping their bytes keeps the text UTF-8.
#[must_use]
pub fn read_runs_as_first_mark(text: &str) -> Cow<'_, str> {
    let is_mark = |byte: &u8| byte.is_ascii_punctuation() && *byte != b'_';
    let bytes = text.as_bytes();
    let dropped = |at: usize| at > 0 && is_mark(&bytes[at]) && is_mark(&bytes[at - 1]);
    let Some(first) = (1..bytes.len()).find(|&at| dropped(at)) else {
        return Cow::Borrowed(text);
    };
    let mut read = Vec::with_capacity(bytes.len());
    read.extend_from_slice(&bytes[..first]);
    read.extend(
        (first..bytes.len())
            .filter(|&at| !dropped(at))
            .map(|at| bytes[at]),
    );
    Cow::Owned(String::from_utf8(read).expect("only ASCII bytes were dropped"))
}

/// The ASCII whitespace BERT splits at (0x0b and 0x0c are control characters it deletes).
fn is_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wordpiece(lowercase: bool, added: &[&str]) -> WordPiece {
        let pieces = [
            "[UNK]", "[MASK]", "un", "##aff", "##able", "run", "##ning", ".", "!", "a", "##a",
            "RUN",
        ];
        let vocab = pieces
            .iter()
            .enumerate()
            .map(|(id, piece)| (piece.to_string(), id as u32));
        let added: Vec<String> = added.iter().map(|t| t.to_string()).collect();
        WordPiece::new(vocab, "[UNK]", "##", 9, lowercase, &added).unwrap()
    }

    #[test]
    fn words_split_into_the_longest_pieces_and_punctuation_stands_alone() {
        let encoded = wordpiece(true, &[]).encode("Unaffable running!.");
        assert_eq!(encoded.ids, [2, 3, 4, 5, 6, 8, 7]);
        assert!(encoded.rest.is_empty());
    }

    #[test]
    fn a_word_with_an_unknown_piece_or_too_long_is_one_unknown_token() {
        // "unx": "un" matches, "##x" does not; "aaaaaaaaaa" is longer than 9 characters.
        let encoded = wordpiece(true, &[]).encode("unx aaaaa aaaaaaaaaa");
        assert_eq!(encoded.ids, [0, 9, 10, 10, 10, 10, 0]);
    }

    #[test]
    fn case_is_kept_when_the_normaliser_does_not_lowercase() {
        assert_eq!(wordpiece(false, &[]).encode("RUN run Run").ids, [11, 5, 0]);
    }

    #[test]
    fn parts_beyond_printable_ascii_go_to_the_library_one_run_at_a_time() {
        let text = "run caf\u{e9} d\u{e9}j\u{e0}\tun\x0bx run  \u{4e2d}";
        let encoded = wordpiece(true, &[]).encode(text);
        assert_eq!(encoded.ids, [5, 5]);
        let spans: Vec<(usize, &str)> = encoded
            .rest
            .iter()
            .map(|(at, span)| (*at, &text[span.clone()]))
            .collect();
        assert_eq!(
            spans,
            [(1, "caf\u{e9} d\u{e9}j\u{e0}\tun\x0bx"), (2, "\u{4e2d}")]
        );
    }

    #[test]
    fn a_text_naming_an_added_token_goes_to_the_library_whole() {
        let wp = wordpiece(true, &["[MASK]"]);
        assert_eq!(wp.encode("run [mask] run").rest, [(0, 0..14)]);
        assert_eq!(wp.encode("run [mas k]").ids, [5, 0, 0, 0, 0]);
    }

    #[test]
    fn a_run_of_marks_reads_as_its_first_when_asked() {
        let text = "run!.! a.!_! un caf\u{e9}!!";
        assert_eq!(
            wordpiece(true, &[]).encode(text).ids,
            [5, 8, 7, 8, 9, 7, 8, 0, 8, 2]
        );
        let read = wordpiece(true, &[]).runs_as_first_mark(true).encode(text);
        // "_" is no mark: it is neither dropped nor drops the "!" after it.
        assert_eq!(read.ids, [5, 8, 9, 7, 0, 8, 2]);
        assert_eq!(read.read.as_deref(), Some("run! a._! un caf\u{e9}!"));
        assert_eq!(read.rest, [(7, 13..19)]);
        assert!(matches!(
            read_runs_as_first_mark("a - b, c"),
            Cow::Borrowed(_)
        ));
        // Dropping a mark can make an added token: the read text is what is matched.
        let wp = wordpiece(true, &["[MASK]"]).runs_as_first_mark(true);
        assert_eq!(wp.encode("run [-MASK]").rest, [(0, 0..10)]);
    }

    #[test]
    fn an_unknown_token_missing_from_the_vocabulary_is_an_error() {
        let vocab = [("a".to_string(), 0)];
        assert!(WordPiece::new(vocab, "[UNK]", "##", 100, true, &[]).is_err());
    }
}
