//! A tokenizer that keeps code identifiers, paths, error codes and key-like strings whole
//! while also indexing their parts as ordinary words.
//!
//! `src/app/main.py` yields `src/app/main.py`, `src`, `app`, `main`, `py`;
//! `ERR_CONN_RESET` yields `err_conn_reset`, `err`, `conn`, `reset`; `getUserName` yields
//! `getusername`, `get`, `user`, `name`. Tokens are lower-cased; English stop words are
//! dropped and plain alphabetic words are stemmed (Porter2), with a per-tokenizer cache
//! because stemming the same few thousand words over and over dominated indexing time.
//! Tokenizing runs once per indexed chunk, so the hot path allocates nothing and looks each
//! plain word up once, in a table that keeps short words and their stems in one 32-byte slot:
//! with heap strings as keys, cache misses chasing them were most of the tokenizer's time.

use rust_stemmers::{Algorithm, Stemmer};
use rustc_hash::FxHashSet;
use std::sync::{Arc, LazyLock};
use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

#[cfg(test)]
mod reference;

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
    /// No word: a free slot.
    const EMPTY: InlineWord = InlineWord([0; INLINE_WORD]);

    fn new(word: &str) -> Option<InlineWord> {
        let mut bytes = [0; INLINE_WORD];
        bytes
            .get_mut(..word.len())?
            .copy_from_slice(word.as_bytes());
        Some(InlineWord(bytes))
    }

    /// The lower-case form of an ASCII word, built in place (no intermediate copy).
    fn lowercase(word: &[u8]) -> Option<InlineWord> {
        let mut bytes = [0; INLINE_WORD];
        for (to, from) in bytes.get_mut(..word.len())?.iter_mut().zip(word) {
            *to = from.to_ascii_lowercase();
        }
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

/// Longest stem a slot holds (longer ones are stemmed each time; they are rare).
const INLINE_STEM: usize = 15;
/// `Slot::stem_len` of a stop word.
const STOP: u8 = u8::MAX;

/// One slot of the stem cache: a word and its stem, in one 32-byte line so a lookup reads a
/// single cache line and follows no pointer (a miss on a rare word then costs one memory
/// access, not two).
#[derive(Clone, Copy, Default)]
#[repr(align(32))]
struct Slot {
    word: InlineWord,
    /// ASCII letters.
    stem: [u8; INLINE_STEM],
    /// `STOP` for a stop word.
    stem_len: u8,
}

/// Open-addressing (linear probing) map from plain lower-case word to stem; at most half
/// full, and reset past `STEM_CACHE_LIMIT` words.
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

    /// The slot of `word`, or the free slot where it belongs.
    fn find(&self, word: &InlineWord) -> Result<Slot, usize> {
        let mask = self.slots.len() - 1;
        let mut i = usize::try_from(word.hash() >> self.shift).unwrap_or_default() & mask;
        loop {
            let slot = &self.slots[i];
            if slot.word == *word {
                return Ok(*slot);
            }
            if slot.word == InlineWord::EMPTY {
                return Err(i);
            }
            i = (i + 1) & mask;
        }
    }

    /// Fill the free slot `at` (from `find`) with `word` → `stem` (`None`: a stop word); a
    /// stem that does not fit a slot is not kept.
    fn insert(&mut self, at: usize, word: InlineWord, stem: Option<&str>) {
        let mut slot = Slot {
            word,
            stem: [0; INLINE_STEM],
            stem_len: STOP,
        };
        if let Some(stem) = stem {
            let Some(to) = slot.stem.get_mut(..stem.len()) else {
                return;
            };
            if !stem.is_ascii() {
                return;
            }
            to.copy_from_slice(stem.as_bytes());
            slot.stem_len = u8::try_from(stem.len()).unwrap_or(STOP);
        }
        self.slots[at] = slot;
        self.len += 1;
        if self.len * 2 > self.slots.len() {
            let bits = 64 - self.shift;
            if self.len > STEM_CACHE_LIMIT {
                *self = StemTable::with_bits(bits.min(12));
                return;
            }
            let old = std::mem::replace(&mut self.slots, vec![Slot::default(); 1 << (bits + 1)]);
            self.shift -= 1;
            for slot in old.into_iter().filter(|s| s.word != InlineWord::EMPTY) {
                if let Err(free) = self.find(&slot.word) {
                    self.slots[free] = slot;
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
    fn stem_inline(&mut self, word: InlineWord, out: &mut String) -> bool {
        match self.cache.find(&word) {
            Ok(slot) if slot.stem_len == STOP => false,
            Ok(slot) => {
                out.clear();
                // ASCII bytes pushed as chars: no UTF-8 check of the stem on every hit (the
                // mask lets the compiler see that each is one byte).
                let stem = &slot.stem[..usize::from(slot.stem_len)];
                out.reserve(stem.len());
                for &b in stem {
                    out.push(char::from(b & 0x7f));
                }
                true
            }
            Err(free) => {
                let text = word.as_str();
                if self.stop_words.contains(text) {
                    self.cache.insert(free, word, None);
                    return false;
                }
                let stem = self.stemmer.stem(text);
                out.clear();
                out.push_str(&stem);
                self.cache.insert(free, word, Some(&stem));
                true
            }
        }
    }

    /// `stem_inline` for any plain lower-case word: longer ones are rare, stemmed each time,
    /// and never stop words.
    fn stem_into(&mut self, word: &str, out: &mut String) -> bool {
        if let Some(key) = InlineWord::new(word) {
            return self.stem_inline(key, out);
        }
        out.clear();
        out.push_str(&self.stemmer.stem(word));
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

/// Byte classes: an ASCII byte is exactly one of the first six; every byte of a non-ASCII
/// character is `NON_ASCII` (whether that character breaks words needs decoding it).
const BREAK: u8 = 1;
const JOINER: u8 = 2;
const LOWER: u8 = 4;
const UPPER: u8 = 8;
const DIGIT: u8 = 16;
/// ASCII control characters that are not white space: inside a word, they split parts.
const OTHER: u8 = 32;
const NON_ASCII: u8 = 64;

/// The class of every byte, so a word is scanned and classified in one pass.
static CLASSES: LazyLock<[u8; 256]> = LazyLock::new(|| {
    let mut table = [NON_ASCII; 256];
    for (b, class) in (0u8..128).zip(table.iter_mut()) {
        let c = char::from(b);
        *class = if is_word_break(c) {
            BREAK
        } else if is_joiner(c) {
            JOINER
        } else if b.is_ascii_lowercase() {
            LOWER
        } else if b.is_ascii_uppercase() {
            UPPER
        } else if b.is_ascii_digit() {
            DIGIT
        } else {
            OTHER
        };
    }
    table
});

/// Words: maximal runs without a hard break, with their byte offsets and the union of their
/// bytes' classes.
struct Words<'a> {
    text: &'a str,
    at: usize,
    classes: &'a [u8; 256],
}

fn words(text: &str) -> Words<'_> {
    Words {
        text,
        at: 0,
        classes: &CLASSES,
    }
}

impl<'a> Iterator for Words<'a> {
    type Item = (usize, &'a str, u8);

    fn next(&mut self) -> Option<Self::Item> {
        let bytes = self.text.as_bytes();
        // Find the start of the next word.
        loop {
            let class = self.classes[usize::from(*bytes.get(self.at)?)];
            if class == NON_ASCII {
                let c = self.text[self.at..].chars().next().unwrap_or_default();
                if !is_word_break(c) {
                    break;
                }
                self.at += c.len_utf8();
            } else if class == BREAK {
                self.at += 1;
            } else {
                break;
            }
        }
        let start = self.at;
        let mut seen = 0;
        while let Some(&b) = bytes.get(self.at) {
            let class = self.classes[usize::from(b)];
            if class == NON_ASCII {
                let c = self.text[self.at..].chars().next().unwrap_or_default();
                if is_word_break(c) {
                    break;
                }
                self.at += c.len_utf8();
            } else if class == BREAK {
                break;
            } else {
                self.at += 1;
            }
            seen |= class;
        }
        Some((start, &self.text[start..self.at], seen))
    }
}

/// True when an upper-case letter follows a lower-case one (a camel-case boundary) in an
/// ASCII word.
fn has_camel_boundary(word: &[u8]) -> bool {
    word.windows(2)
        .any(|w| w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase())
}

impl CodeTokenizer {
    /// The next token buffer to fill; it counts only once `len` is incremented.
    fn slot(&mut self) -> &mut Token {
        if self.len == self.tokens.len() {
            self.tokens.push(Token::default());
        }
        &mut self.tokens[self.len]
    }

    fn commit(&mut self, from: usize, to: usize, position: usize) {
        let token = &mut self.tokens[self.len];
        token.offset_from = from;
        token.offset_to = to;
        token.position = position;
        token.position_length = 1;
        self.len += 1;
    }

    fn push(&mut self, text: &str, from: usize, to: usize, position: usize, is_part: bool) {
        if text.is_empty() || text.len() > MAX_TOKEN_BYTES {
            return;
        }
        self.slot();
        let token = &mut self.tokens[self.len];
        // Stop words are plain lower-case words too, so one cache lookup settles both.
        if is_part && text.bytes().all(|b| b.is_ascii_alphabetic()) {
            if !self.stem_ascii_word(text.as_bytes()) {
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
        self.commit(from, to, position);
    }

    /// Stem the ASCII letters `word` (any case, at most `MAX_TOKEN_BYTES`) into the next token
    /// buffer; false for a stop word.
    fn stem_ascii_word(&mut self, word: &[u8]) -> bool {
        let token = &mut self.tokens[self.len];
        if let Some(key) = InlineWord::lowercase(word) {
            return self.stems.stem_inline(key, &mut token.text);
        }
        let mut lower = [0u8; MAX_TOKEN_BYTES];
        let lower = &mut lower[..word.len()];
        lower.copy_from_slice(word);
        lower.make_ascii_lowercase();
        let lower = std::str::from_utf8(lower).unwrap_or_default();
        self.stems.stem_into(lower, &mut token.text)
    }

    /// A word that is a single ASCII part (letters and digits, no camel-case boundary): what
    /// most words are, so it skips the part splitting.
    fn push_ascii_part(&mut self, word: &str, from: usize, position: usize, has_digit: bool) {
        if word.len() > MAX_TOKEN_BYTES {
            return;
        }
        let token = self.slot();
        if has_digit {
            token.text.clear();
            token.text.push_str(word);
            token.text.make_ascii_lowercase();
        } else if !self.stem_ascii_word(word.as_bytes()) {
            return;
        }
        self.commit(from, from + word.len(), position);
    }

    fn tokenize(&mut self, text: &str) {
        self.len = 0;
        let mut position = 0;
        let classes: &[u8; 256] = &CLASSES;
        let mut parts = std::mem::take(&mut self.parts);
        for (word_start, word, seen) in words(text) {
            // Trim joiners at the ends: "end." or "--flag" keep their core. Joiners are ASCII,
            // so trimming bytes never cuts a character.
            let (mut from, mut to) = (0, word.len());
            let mut inner = seen;
            if seen & JOINER != 0 {
                let bytes = word.as_bytes();
                while from < to && classes[usize::from(bytes[from])] == JOINER {
                    from += 1;
                }
                while to > from && classes[usize::from(bytes[to - 1])] == JOINER {
                    to -= 1;
                }
                inner = bytes[from..to]
                    .iter()
                    .fold(0, |acc, &b| acc | classes[usize::from(b)]);
            }
            let trimmed = &word[from..to];
            if trimmed.is_empty() {
                continue;
            }
            let start = word_start + from;
            if inner & (JOINER | OTHER | NON_ASCII) == 0
                && (inner & (LOWER | UPPER) != LOWER | UPPER
                    || !has_camel_boundary(trimmed.as_bytes()))
            {
                self.push_ascii_part(trimmed, start, position, inner & DIGIT != 0);
                position += 1;
                continue;
            }
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
    fn word_scan_splits_like_the_break_predicate() {
        for input in [
            "",
            "  plain words\there ",
            "a,b;c=(d)[e]{f}<g>|h!i?j*k&l^m~n+o\"p'q`r",
            "see\u{3000}src/a.rs and\u{a0}x_y\u{2028}z",
            "caf\u{e9} na\u{ef}ve \u{1f600}emoji\u{1f600} end",
        ] {
            let expected: Vec<(usize, &str)> = input
                .split(is_word_break)
                .filter(|w| !w.is_empty())
                .map(|w| (w.as_ptr() as usize - input.as_ptr() as usize, w))
                .collect();
            let scanned: Vec<(usize, &str)> = words(input).map(|(at, w, _)| (at, w)).collect();
            assert_eq!(scanned, expected, "{input:?}");
        }
    }

    #[test]
    fn cached_and_fresh_stems_agree() {
        let mut t = CodeTokenizer::default();
        let mut runs = Vec::new();
        for _ in 0..2 {
            let mut stream = t.token_stream("Running RUNNING the internationalizations \u{212a}ey");
            let mut out = Vec::new();
            while stream.advance() {
                out.push(stream.token().text.clone());
            }
            runs.push(out);
        }
        assert_eq!(runs[0], ["run", "run", "internation", "key"]);
        assert_eq!(runs[0], runs[1]);
    }

    #[test]
    fn stem_table_keeps_every_word_as_it_grows() {
        let stemmer = Stemmer::create(Algorithm::English);
        let words: Vec<String> = (0..20_000u32)
            .map(|i| {
                let mut n = i;
                let mut w = String::from("zq");
                while n > 0 {
                    w.push(char::from(b'a' + u8::try_from(n % 26).unwrap()));
                    n /= 26;
                }
                w.push_str(["ing", "ed", "ies", "ational", ""][(i % 5) as usize]);
                w
            })
            .collect();
        let mut stems = CodeTokenizer::default().stems;
        let mut out = String::new();
        for _ in 0..2 {
            for w in &words {
                assert!(stems.stem_into(w, &mut out));
                assert_eq!(out, stemmer.stem(w), "{w}");
            }
        }
        assert!(!stems.stem_into("the", &mut out));
        assert!(!stems.stem_into("the", &mut out));
    }

    /// Every field of every token, as an index would see it.
    fn all_tokens<T: Tokenizer>(t: &mut T, input: &str) -> Vec<(String, usize, usize, usize)> {
        let mut stream = t.token_stream(input);
        let mut out = Vec::new();
        while stream.advance() {
            let tok = stream.token();
            out.push((
                tok.text.clone(),
                tok.offset_from,
                tok.offset_to,
                tok.position,
            ));
        }
        out
    }

    #[test]
    fn same_tokens_as_the_reference_on_tricky_text() {
        let mut fast = CodeTokenizer::default();
        let mut slow = reference::CodeTokenizer::default();
        for input in [
            "Why did the deploy fail? (exit code 137). Running tests; --release",
            "src/app/main.py ERR_CONN_RESET getUserName() AKIAIOSFODNN7EXAMPLE snake_case_name",
            "...leading and trailing joiners... __init__ -x --flag=1 a.b.c. #tag @user $HOME 50%",
            "Deploy DEPLOY dePloy HTTPServer iPhone E0502 e0502 0xFF 3rd 1.2.3 v2-beta",
            "see\u{3000}src/a.rs and\u{a0}x_y\u{2028}z caf\u{e9} na\u{ef}ve \u{1f600}emoji\u{1f600} end",
            "\u{212a}ey \u{212a}EY stra\u{df}e \u{130}stanbul \u{3a3}\u{3a3} \u{1}ctl\u{1}word\u{7f}x",
            "internationalizations internationalization counterrevolutionaries THE The the a I",
            "abcdefghijklmnop abcdefghijklmnopq ABCDEFGHIJKLMNOPQRSTUVWXYZ camelCaseWordsThatAreLong",
            &"A".repeat(200),
            &format!("{} {}", "b".repeat(80), "c".repeat(81)),
            "", "   ", "-", "._/", "a", "A.", "x\u{300}y",
        ] {
            assert_eq!(all_tokens(&mut fast, input), all_tokens(&mut slow, input), "{input:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn same_tokens_as_the_reference(
            words in proptest::collection::vec(
                "([a-zA-Z]{1,20}|[a-z0-9]{1,6}|[A-Z][a-z]{1,8}|[_./:@#$%-]|[ \\t\\n,;()\"'!?]|[\u{0}-\u{7f}]|[\u{80}-\u{2fff}]|\u{212a}|\u{3000}){1,4}",
                0..40,
            )
        ) {
            let input = words.concat();
            let mut fast = CodeTokenizer::default();
            let mut slow = reference::CodeTokenizer::default();
            proptest::prop_assert_eq!(all_tokens(&mut fast, &input), all_tokens(&mut slow, &input));
        }
    }

    /// Every string of up to four symbols from one of each kind of character the tokenizer
    /// tells apart (letters of both cases, digits, joiners, breaks, controls, non-ASCII letters
    /// and spaces, the Kelvin sign that lower-cases to ASCII, a combining mark).
    #[test]
    fn same_tokens_as_the_reference_on_every_short_string() {
        let alphabet = [
            "a", "Ab", "B", "7", "_", ".", "/", " ", "(", "\u{1}", "\u{e9}", "\u{c9}", "\u{212a}",
            "\u{3000}", "\u{300}", "\u{df}",
        ];
        let mut fast = CodeTokenizer::default();
        let mut slow = reference::CodeTokenizer::default();
        let mut input = String::new();
        let n = alphabet.len();
        for len in 1..=4u32 {
            for mut code in 0..n.pow(len) {
                input.clear();
                for _ in 0..len {
                    input.push_str(alphabet[code % n]);
                    code /= n;
                }
                assert_eq!(
                    all_tokens(&mut fast, &input),
                    all_tokens(&mut slow, &input),
                    "{input:?}"
                );
            }
        }
    }

    /// The real transcripts under `<repo>/../shared/data/transcripts` (or
    /// `MEMLANE_TOKENIZE_CORPUS=DIR`): every raw line of every file, and every chunk text the
    /// indexer would tokenize. Skipped when the corpus is absent.
    #[test]
    fn same_tokens_as_the_reference_on_real_transcripts() {
        let dir = std::env::var_os("MEMLANE_TOKENIZE_CORPUS").map_or_else(
            || {
                std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../../../shared/data/transcripts")
            },
            std::path::PathBuf::from,
        );
        if !dir.is_dir() {
            eprintln!("SKIP: no transcripts at {}", dir.display());
            return;
        }
        let mut fast = CodeTokenizer::default();
        let mut slow = reference::CodeTokenizer::default();
        let (mut texts, mut tokens) = (0usize, 0usize);
        let mut check = |text: &str, path: &std::path::Path| {
            let expected = all_tokens(&mut slow, text);
            assert_eq!(all_tokens(&mut fast, text), expected, "{}", path.display());
            texts += 1;
            tokens += expected.len();
        };
        for entry in walkdir::WalkDir::new(&dir)
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file())
        {
            let path = entry.path();
            let Ok(bytes) = std::fs::read(path) else {
                continue;
            };
            for line in String::from_utf8_lossy(&bytes).lines() {
                check(line, path);
            }
            if let Ok(parsed) = crate::parse::parse_file(path, None) {
                let chunks = crate::chunk::chunk_parsed(
                    &parsed,
                    &path.to_string_lossy(),
                    crate::chunk::DEFAULT_BUDGET_TOKENS,
                );
                for chunk in chunks {
                    check(&chunk.text, path);
                }
            }
        }
        assert!(tokens > 0, "no tokens in {}", dir.display());
        eprintln!("{texts} texts, {tokens} tokens: the same");
    }

    #[test]
    fn stem_table_reset_keeps_stemming_right() {
        // Past the cache limit the table starts over; stems must come out the same after.
        let stemmer = Stemmer::create(Algorithm::English);
        let mut stems = CodeTokenizer::default().stems;
        let mut out = String::new();
        let mut n = 0u32;
        let mut word = String::new();
        let mut reset = false;
        // The table checks the limit when it would grow, so it resets somewhat past it.
        while !reset || n % 1000 != 0 {
            word.clear();
            let mut k = n;
            word.push('q');
            while k > 0 {
                word.push(char::from(b'a' + u8::try_from(k % 26).unwrap()));
                k /= 26;
            }
            word.push_str(["ing", "ed", ""][(n % 3) as usize]);
            let before = stems.cache.len;
            assert!(stems.stem_into(&word, &mut out));
            assert_eq!(out, stemmer.stem(&word), "{word}");
            reset |= stems.cache.len < before;
            n += 1;
        }
        assert!(stems.stem_into("running", &mut out));
        assert_eq!(out, "run");
        assert!(!stems.stem_into("the", &mut out));
    }

    #[test]
    fn overlong_runs_are_dropped() {
        let blob = "A".repeat(200);
        assert!(texts(&blob).is_empty());
    }
}
