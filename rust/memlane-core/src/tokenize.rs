//! A tokenizer that keeps code identifiers, paths, error codes and key-like strings whole
//! while also indexing their parts as ordinary words.
//!
//! `src/app/main.py` yields `src/app/main.py`, `src`, `app`, `main`, `py`;
//! `ERR_CONN_RESET` yields `err_conn_reset`, `err`, `conn`, `reset`; `getUserName` yields
//! `getusername`, `get`, `user`, `name`. Tokens are lower-cased; English stop words are
//! dropped and plain alphabetic words are stemmed (Porter2), with a per-tokenizer cache
//! because stemming the same few thousand words over and over dominated indexing time.
//! Tokenizing runs once per indexed chunk, so the hot path allocates nothing and looks each
//! plain word up once.

use rust_stemmers::{Algorithm, Stemmer};
use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::Arc;
use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

/// Longest token kept; longer runs are base64 or minified noise.
const MAX_TOKEN_BYTES: usize = 80;
/// Stem cache entries before the cache is reset (bounds memory on huge vocabularies).
const STEM_CACHE_LIMIT: usize = 200_000;

/// English function words: they carry no retrieval signal and make posting lists long.
#[rustfmt::skip]
const STOP_WORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are",
    "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by",
    "can", "could", "did", "do", "does", "doing", "down", "during", "each", "few", "for", "from",
    "further", "had", "has", "have", "having", "he", "her", "here", "hers", "herself", "him",
    "himself", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "me",
    "more", "most", "my", "myself", "no", "nor", "not", "now", "of", "off", "on", "once", "only",
    "or", "other", "our", "ours", "ourselves", "out", "over", "own", "same", "she", "should", "so",
    "some", "such", "than", "that", "the", "their", "theirs", "them", "themselves", "then", "there",
    "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "very", "was",
    "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with",
    "would", "you", "your", "yours", "yourself", "yourselves",
];

/// See the module docs.
#[derive(Clone)]
pub struct CodeTokenizer {
    /// Token buffers reused across texts (their `String`s keep their capacity).
    tokens: Vec<Token>,
    len: usize,
    /// Byte ranges of the parts of the current word (reused across words).
    parts: Vec<(usize, usize)>,
    stop_words: Arc<FxHashSet<&'static str>>,
    stemmer: Arc<Stemmer>,
    /// Plain lower-case word → its stem, or `None` for a stop word.
    stems: FxHashMap<String, Option<String>>,
}

impl Default for CodeTokenizer {
    fn default() -> Self {
        CodeTokenizer {
            tokens: Vec::new(),
            len: 0,
            parts: Vec::new(),
            stop_words: Arc::new(STOP_WORDS.iter().copied().collect()),
            stemmer: Arc::new(Stemmer::create(Algorithm::English)),
            stems: FxHashMap::default(),
        }
    }
}

/// Stream over the tokens produced for one text.
pub struct CodeTokenStream<'a> {
    tokens: &'a mut [Token],
    index: Option<usize>,
}

impl TokenStream for CodeTokenStream<'_> {
    fn advance(&mut self) -> bool {
        let next = self.index.map_or(0, |i| i + 1);
        self.index = Some(next);
        next < self.tokens.len()
    }

    fn token(&self) -> &Token {
        &self.tokens[self.index.unwrap_or(0)]
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.tokens[self.index.unwrap_or(0)]
    }
}

/// Characters that end a word outright (never part of an identifier or path).
fn is_word_break(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            '"' | '\''
                | '`'
                | '('
                | ')'
                | '['
                | ']'
                | '{'
                | '}'
                | '<'
                | '>'
                | ','
                | ';'
                | '='
                | '|'
                | '!'
                | '?'
                | '*'
                | '&'
                | '^'
                | '~'
                | '+'
        )
}

/// Characters that may join parts inside one compound word.
fn is_joiner(c: char) -> bool {
    matches!(
        c,
        '_' | '-' | '.' | '/' | '\\' | ':' | '@' | '#' | '$' | '%'
    )
}

impl CodeTokenizer {
    fn push(&mut self, text: &str, from: usize, to: usize, position: usize, is_part: bool) {
        if text.is_empty() || text.len() > MAX_TOKEN_BYTES {
            return;
        }
        if self.len == self.tokens.len() {
            self.tokens.push(Token::default());
        }
        let token = &mut self.tokens[self.len];
        token.text.clear();
        if text.is_ascii() {
            token.text.push_str(text);
            token.text.make_ascii_lowercase();
        } else {
            token.text.extend(text.chars().flat_map(char::to_lowercase));
        }
        // Stop words are plain lower-case words too, so one cache lookup settles both.
        if is_part && token.text.bytes().all(|b| b.is_ascii_lowercase()) {
            match self.stems.get(token.text.as_str()) {
                Some(Some(stem)) => token.text.clone_from(stem),
                Some(None) => return,
                None => {
                    if self.stems.len() > STEM_CACHE_LIMIT {
                        self.stems.clear();
                    }
                    if self.stop_words.contains(token.text.as_str()) {
                        self.stems.insert(token.text.clone(), None);
                        return;
                    }
                    let stem = self.stemmer.stem(&token.text).into_owned();
                    self.stems
                        .insert(std::mem::replace(&mut token.text, stem.clone()), Some(stem));
                }
            }
        }
        token.offset_from = from;
        token.offset_to = to;
        token.position = position;
        token.position_length = 1;
        self.len += 1;
    }

    fn tokenize(&mut self, text: &str) {
        self.len = 0;
        let mut position = 0;
        let mut parts = std::mem::take(&mut self.parts);
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
        self.parts = parts;
    }
}

/// Words: maximal runs without a hard break, with their byte offsets (from the pointers,
/// so multi-byte break characters cannot shift them).
fn words(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split(is_word_break)
        .filter(|w| !w.is_empty())
        .map(move |w| (w.as_ptr() as usize - text.as_ptr() as usize, w))
}

/// Byte ranges of the alphanumeric parts of a word, split on joiners and lower→upper
/// camel-case boundaries, into `out`.
fn split_parts(word: &str, out: &mut Vec<(usize, usize)>) {
    out.clear();
    // The common case, a plain lower-case word or number, is one part.
    if word
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    {
        out.push((0, word.len()));
        return;
    }
    let mut start: Option<usize> = None;
    let mut prev: Option<char> = None;
    for (i, c) in word.char_indices() {
        if c.is_alphanumeric() {
            let camel = prev.is_some_and(|p| p.is_lowercase() && c.is_uppercase());
            match start {
                Some(s) if camel => {
                    out.push((s, i));
                    start = Some(i);
                }
                Some(_) => {}
                None => start = Some(i),
            }
        } else if let Some(s) = start.take() {
            out.push((s, i));
        }
        prev = Some(c);
    }
    if let Some(s) = start {
        out.push((s, word.len()));
    }
}

impl Tokenizer for CodeTokenizer {
    type TokenStream<'a> = CodeTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> CodeTokenStream<'a> {
        self.tokenize(text);
        CodeTokenStream {
            tokens: &mut self.tokens[..self.len],
            index: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(input: &str) -> Vec<String> {
        let mut t = CodeTokenizer::default();
        let mut stream = t.token_stream(input);
        let mut out = Vec::new();
        while stream.advance() {
            out.push(stream.token().text.clone());
        }
        out
    }

    #[test]
    fn paths_identifiers_and_codes_stay_whole() {
        assert_eq!(
            texts("src/app/main.py"),
            ["src/app/main.py", "src", "app", "main", "py"]
        );
        assert_eq!(
            texts("ERR_CONN_RESET"),
            ["err_conn_reset", "err", "conn", "reset"]
        );
        assert_eq!(
            texts("getUserName()"),
            ["getusername", "get", "user", "name"]
        );
        assert_eq!(texts("AKIAIOSFODNN7EXAMPLE"), ["akiaiosfodnn7example"]);
        assert_eq!(
            texts("snake_case_name"),
            ["snake_case_name", "snake", "case", "name"]
        );
    }

    #[test]
    fn ordinary_words_and_punctuation() {
        assert_eq!(
            texts("Why did the deploy fail? (exit code 137)."),
            ["deploy", "fail", "exit", "code", "137"]
        );
        assert_eq!(texts("Running tests"), ["run", "test"]);
        assert_eq!(texts("--release"), ["releas"]);
    }

    #[test]
    fn offsets_point_into_the_text() {
        let input = "see\u{3000}src/a.rs and `x_y`";
        let mut t = CodeTokenizer::default();
        let mut stream = t.token_stream(input);
        while stream.advance() {
            let tok = stream.token();
            assert_eq!(
                input[tok.offset_from..tok.offset_to].to_lowercase(),
                tok.text
            );
        }
    }

    #[test]
    fn overlong_runs_are_dropped() {
        let blob = "A".repeat(200);
        assert!(texts(&blob).is_empty());
    }
}
