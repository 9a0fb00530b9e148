//! The tokenizer's output written plainly, for tests only: the word scan, joiner trimming,
//! compound tokens and stemming of commit b537e8d, without the single-pass scan, byte classes
//! or stem cache that make the real one fast. An index built by either must answer the same
//! queries, so both must emit exactly the same tokens. The stop words, length cap, character
//! classes and part splitting are the parent's: they define the output, they are not the
//! speed-ups under test.

use super::{is_joiner, is_word_break, split_parts, CodeTokenStream, MAX_TOKEN_BYTES, STOP_WORDS};
use rust_stemmers::{Algorithm, Stemmer};
use std::sync::Arc;
use tantivy::tokenizer::{Token, Tokenizer};

/// See the module docs.
#[derive(Clone)]
pub struct CodeTokenizer {
    tokens: Vec<Token>,
    stemmer: Arc<Stemmer>,
}

impl Default for CodeTokenizer {
    fn default() -> Self {
        CodeTokenizer {
            tokens: Vec::new(),
            stemmer: Arc::new(Stemmer::create(Algorithm::English)),
        }
    }
}

impl CodeTokenizer {
    /// The stem of a plain lower-case word, None for a stop word.
    fn stem(&self, word: &str) -> Option<String> {
        (!STOP_WORDS.contains(&word)).then(|| self.stemmer.stem(word).into_owned())
    }

    fn push(&mut self, text: &str, from: usize, to: usize, position: usize, is_part: bool) {
        if text.is_empty() || text.len() > MAX_TOKEN_BYTES {
            return;
        }
        let lower: String = text.chars().flat_map(char::to_lowercase).collect();
        // A part that is a plain word once lower-cased (the Kelvin sign lower-cases to ASCII).
        let text = if is_part && lower.bytes().all(|b| b.is_ascii_lowercase()) {
            match self.stem(&lower) {
                Some(stem) => stem,
                None => return,
            }
        } else {
            lower
        };
        self.tokens.push(Token {
            offset_from: from,
            offset_to: to,
            position,
            text,
            position_length: 1,
        });
    }

    fn tokenize(&mut self, text: &str) {
        self.tokens.clear();
        let mut position = 0;
        let mut parts = Vec::new();
        for (word_start, word) in words(text) {
            // Trim joiners at the ends: "end." or "--flag" keep their core.
            let trimmed = word.trim_matches(is_joiner);
            if trimmed.is_empty() {
                continue;
            }
            let start = word_start + (word.len() - word.trim_start_matches(is_joiner).len());
            split_parts(trimmed, &mut parts);
            if parts.len() > 1 {
                self.push(trimmed, start, start + trimmed.len(), position, false);
            }
            for &(from, to) in &parts {
                self.push(&trimmed[from..to], start + from, start + to, position, true);
                position += 1;
            }
        }
    }
}

/// Words: maximal runs without a hard break, with their byte offsets.
fn words(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split(is_word_break)
        .filter(|word| !word.is_empty())
        .map(move |word| (word.as_ptr() as usize - text.as_ptr() as usize, word))
}

impl Tokenizer for CodeTokenizer {
    type TokenStream<'a> = CodeTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> CodeTokenStream<'a> {
        self.tokenize(text);
        CodeTokenStream {
            tokens: &mut self.tokens,
            index: None,
        }
    }
}
