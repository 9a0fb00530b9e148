//! The tokenizer as of commit b537e8d, before the single-pass word scan, kept (for tests only)
//! as the reference the fast path is compared against: an index built by either must answer
//! the same queries, so both must emit exactly the same tokens.
#![allow(dead_code)]

use rust_stemmers::{Algorithm, Stemmer};
use rustc_hash::FxHashSet;
use std::sync::Arc;
use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

/// Longest token kept; longer runs are base64 or minified noise.
const MAX_TOKEN_BYTES: usize = 80;
/// Stem cache entries before the cache is reset (bounds memory on huge vocabularies).
const STEM_CACHE_LIMIT: usize = 200_000;
/// Longest plain word (and stem) the stem cache holds. Longer ones are rare and stemmed each
/// time; no stop word is that long.
const INLINE_WORD: usize = 16;

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
    stems: Stems,
}

impl Default for CodeTokenizer {
    fn default() -> Self {
        CodeTokenizer {
            tokens: Vec::new(),
            len: 0,
            parts: Vec::new(),
            stems: Stems {
                stop_words: Arc::new(STOP_WORDS.iter().copied().collect()),
                stemmer: Arc::new(Stemmer::create(Algorithm::English)),
                cache: StemTable::with_bits(6),
            },
        }
    }
}

/// A word of at most `INLINE_WORD` ASCII bytes, zero-padded (words hold no NUL byte).
#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct InlineWord([u8; INLINE_WORD]);

impl InlineWord {
    /// No word: a free slot, or the stem of a stop word.
    const EMPTY: InlineWord = InlineWord([0; INLINE_WORD]);

    fn new(word: &str) -> Option<InlineWord> {
        let mut bytes = [0; INLINE_WORD];
        bytes
            .get_mut(..word.len())?
            .copy_from_slice(word.as_bytes());
        Some(InlineWord(bytes))
    }

    fn as_str(&self) -> &str {
        let len = self.0.iter().position(|&b| b == 0).unwrap_or(INLINE_WORD);
        std::str::from_utf8(&self.0[..len]).unwrap_or_default()
    }

    fn hash(&self) -> u64 {
        let (head, tail) = self.0.split_at(8);
        let half = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or_default());
        (half(head).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ half(tail))
            .wrapping_mul(0xbf58_476d_1ce4_e5b9)
    }
}

/// One slot of the stem cache: a word and its stem, in one 32-byte line so a lookup reads
/// a single cache line and follows no pointer.
#[derive(Clone, Copy, Default)]
#[repr(align(32))]
struct Slot {
    word: InlineWord,
    stem: InlineWord,
}

/// Open-addressing (linear probing) map from plain lower-case word to stem, `EMPTY` for a
/// stop word; at most half full, and reset past `STEM_CACHE_LIMIT` words.
#[derive(Clone)]
struct StemTable {
    slots: Vec<Slot>,
    len: usize,
    /// 64 minus log2 of the slot count: the hash's top bits pick the first slot.
    shift: u32,
}

impl StemTable {
    fn with_bits(bits: u32) -> StemTable {
        StemTable {
            slots: vec![Slot::default(); 1 << bits],
            len: 0,
            shift: 64 - bits,
        }
    }

    /// The stem cached for `word`, or the free slot where it belongs.
    fn find(&self, word: &InlineWord) -> Result<InlineWord, usize> {
        let mask = self.slots.len() - 1;
        let mut i = usize::try_from(word.hash() >> self.shift).unwrap_or_default() & mask;
        loop {
            let slot = &self.slots[i];
            if slot.word == *word {
                return Ok(slot.stem);
            }
            if slot.word == InlineWord::EMPTY {
                return Err(i);
            }
            i = (i + 1) & mask;
        }
    }

    /// Fill the free slot `at` (from `find`) with `word` → `stem`.
    fn insert(&mut self, at: usize, word: InlineWord, stem: InlineWord) {
        self.slots[at] = Slot { word, stem };
        self.len += 1;
        if self.len * 2 > self.slots.len() {
            let bits = 64 - self.shift;
            if self.len > STEM_CACHE_LIMIT {
                *self = StemTable::with_bits(bits.min(12));
                return;
            }
            let old = std::mem::replace(self, StemTable::with_bits(bits + 1));
            for slot in old
                .slots
                .into_iter()
                .filter(|s| s.word != InlineWord::EMPTY)
            {
                if let Err(free) = self.find(&slot.word) {
                    self.slots[free] = slot;
                    self.len += 1;
                }
            }
        }
    }
}

/// Stop words and stems of plain lower-case words, memoised.
#[derive(Clone)]
struct Stems {
    stop_words: Arc<FxHashSet<&'static str>>,
    stemmer: Arc<Stemmer>,
    cache: StemTable,
}

impl Stems {
    /// Write the stem of the plain lower-case `word` to `out`; false (and `out` untouched)
    /// for a stop word.
    fn stem_into(&mut self, word: &str, out: &mut String) -> bool {
        let Some(key) = InlineWord::new(word) else {
            out.clear();
            out.push_str(&self.stemmer.stem(word));
            return true;
        };
        let stem = match self.cache.find(&key) {
            Ok(stem) => stem,
            Err(free) => {
                let stem = if self.stop_words.contains(word) {
                    InlineWord::EMPTY
                } else {
                    let stem = self.stemmer.stem(word);
                    match InlineWord::new(&stem) {
                        Some(s) if s != InlineWord::EMPTY => s,
                        // An empty or overlong stem cannot be cached: give it uncached.
                        _ => {
                            out.clear();
                            out.push_str(&stem);
                            return true;
                        }
                    }
                };
                self.cache.insert(free, key, stem);
                stem
            }
        };
        if stem == InlineWord::EMPTY {
            return false;
        }
        out.clear();
        out.push_str(stem.as_str());
        true
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
        // Stop words are plain lower-case words too, so one cache lookup settles both.
        if is_part && text.bytes().all(|b| b.is_ascii_alphabetic()) {
            // The common case: lower-case on the stack, straight into the cache lookup.
            let mut lower = [0u8; MAX_TOKEN_BYTES];
            let lower = &mut lower[..text.len()];
            lower.copy_from_slice(text.as_bytes());
            lower.make_ascii_lowercase();
            let lower = std::str::from_utf8(lower).unwrap_or_default();
            if !self.stems.stem_into(lower, &mut token.text) {
                return;
            }
        } else {
            token.text.clear();
            if text.is_ascii() {
                token.text.push_str(text);
                token.text.make_ascii_lowercase();
            } else {
                token.text.extend(text.chars().flat_map(char::to_lowercase));
            }
            // Lower-casing can turn a non-ASCII letter into an ASCII one (the Kelvin sign).
            if is_part && token.text.bytes().all(|b| b.is_ascii_lowercase()) {
                let lower = std::mem::take(&mut token.text);
                let kept = self.stems.stem_into(&lower, &mut token.text);
                if !kept {
                    token.text = lower;
                    return;
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

/// `is_word_break` of every ASCII character, so the word scan decodes only non-ASCII ones.
static ASCII_BREAKS: std::sync::LazyLock<[bool; 128]> = std::sync::LazyLock::new(|| {
    let mut table = [false; 128];
    for (b, slot) in (0u8..128).zip(table.iter_mut()) {
        *slot = is_word_break(char::from(b));
    }
    table
});

/// Words: maximal runs without a hard break, with their byte offsets.
fn words(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let breaks: &[bool; 128] = &ASCII_BREAKS;
    let bytes = text.as_bytes();
    let mut at = 0;
    std::iter::from_fn(move || {
        let mut start = None;
        while at < bytes.len() {
            let b = bytes[at];
            let (is_break, width) = if b.is_ascii() {
                (breaks[usize::from(b)], 1)
            } else {
                let c = text[at..].chars().next().unwrap_or_default();
                (is_word_break(c), c.len_utf8())
            };
            if is_break {
                if let Some(s) = start {
                    let word = &text[s..at];
                    at += width;
                    return Some((s, word));
                }
            } else if start.is_none() {
                start = Some(at);
            }
            at += width;
        }
        start.map(|s| (s, &text[s..]))
    })
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
