//! What the time-aware reordering reads from a hit's text, whatever the query.
//!
//! Python's `memlane.ranking.rerank` groups the statements of one subject among a present-state
//! question's hits and puts the newest first. Its evidence comes from each hit's text: the word
//! stems, the identifiers it names, whether it speaks of a change, and the numbers it gives with
//! what they count. Read with Python's `re`, those eight scans were ~0.7 ms for a 1.5 KB text,
//! most of a present-state search (30 hits); here, the words and a number's neighbours are
//! scanned by hand and the rest with the `regex` crate, 55–75 µs a KB.
//!
//! Python's `re` defines `\w` as "alphanumeric or `_`": the patterns spell that class out
//! (`[\p{L}\p{N}_]`) where the crate's own `\w` would also take combining marks and connector
//! punctuation. A text whose characters beyond ASCII are none of them letters or digits (box
//! drawing, dashes, ellipses, emoji: 40% of real hits) is read with ASCII word boundaries, which
//! there are Python's exactly and which the crate's fast engines run (a Unicode `\b` sends a
//! text with non-ASCII characters to its slowest); a text with letters beyond ASCII, with the
//! crate's Unicode `\b`, whose `\w` differs from Python's beside a combining mark or a
//! superscript digit. The word lists (stop words, number words) come from the Python side,
//! which owns them.

use std::collections::{BTreeMap, BTreeSet};

use regex::Regex;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::{Error, Result};

/// Dates and clock times (`2026-05-10`, `17:00`) say when, not what: out of the words and the
/// identifiers.
const CLOCK: &str = r"\b\d(?:\d{3}-\d\d-\d\d|\d?:\d\d)\b";
/// Identifiers: words or numbers joined by `-` `_` `/` or `.` (`us-east-1`, `jobs.v2`,
/// `BILLING_PG_URL`, `5.7`)… Python's pattern starts with `\b`, which changes nothing here: a
/// match found leftmost never starts inside a word, since it would start at that word's start,
/// nor right after the previous match, which ends before a character none of its classes hold.
/// Without it the crate's fast engines run on any text (a Unicode `\b` sends a text with
/// non-ASCII characters to its slowest, ~30 µs a KB for this pattern).
const IDENTIFIER: &str = r"[\p{L}\p{N}_]+[-_/.][\p{L}\p{N}_][\p{L}\p{N}_/.-]*";
/// …but words joined by hyphens alone are English compounds (`dairy-free`).
const NOT_COMPOUND: &str = r"[\d_/.]";
/// Change language.
const CHANGE: &str = r"\b(now|no longer|any ?more|instead|switch(?:ed|ing)?|mov(?:ed|ing)|migrat(?:ed|ing|ion)|replac(?:ed|ing)|took over|taken over|upgraded|downgraded|raised|lowered|increased|decreased|reduced|scaled|renamed|retired|decommissioned|deprecated|dropped|ported|changed|became|grew|rewritten|rewrite|cut ?over|phased out|shut down|turned off|is gone|are gone|from \S+ to)\b";
/// Gaining something ("the admin panel now has a dark mode toggle") adds to a subject, it does
/// not restate it.
const ADDITION: &str =
    r"\b(also|as well|in addition|additionally|now (?:has|have|supports|offers|includes|shows))\b";
/// A capitalised name and its version (`MySQL 5.7`, `React 18`) fill one slot, whatever the
/// name: `MySQL 5.7` then `Postgres 16` is a new value there, as `5.7` then `16` would be.
const NAME_VERSION: &str = r"\b([A-Z][A-Za-z]{2,})[ \t]+v?(\d+(?:\.\d+)*)\b";
/// The slot every named version fills.
pub const VERSION_SLOT: &str = "<named version>";
/// How far before a number (in characters) its versioned name may start.
const VERSIONED_REACH: usize = 40;

/// What [`FeatureReader::features`] reads from a text.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TextFeatures {
    /// The stems of its words (stop words aside), dates and clock times taken out.
    pub stems: Vec<String>,
    /// The identifiers it names, lowercased, dates and clock times aside.
    pub identifiers: Vec<String>,
    /// 1 for change language, -1 for additive language, 0 for both or neither.
    pub change: i8,
    /// The numbers it gives, by the stem of the word each counts ([`VERSION_SLOT`] for named
    /// versions), numbers in words given as digits.
    pub quantities: Vec<(String, Vec<String>)>,
}

/// The patterns with word boundaries, compiled with Unicode or with ASCII ones.
#[derive(Debug, Clone)]
struct Bounded {
    clock: Regex,
    change: Regex,
    addition: Regex,
    number: Regex,
    name_version: Regex,
}

impl Bounded {
    fn new(number_words: &[&str], ascii: bool) -> Bounded {
        let compile = |pattern: &str| {
            let pattern = if ascii {
                pattern.replace(r"\b", r"(?-u:\b)")
            } else {
                pattern.to_owned()
            };
            Regex::new(&pattern).expect("a valid built-in pattern")
        };
        Bounded {
            clock: compile(CLOCK),
            change: compile(CHANGE),
            addition: compile(ADDITION),
            number: compile(&format!(r"\b(\d+(?:\.\d+)*|{})\b", number_words.join("|"))),
            name_version: compile(NAME_VERSION),
        }
    }
}

/// The reordering's text reader: its patterns compiled once, with the caller's word lists.
#[derive(Debug, Clone)]
pub struct FeatureReader {
    stop: FxHashSet<String>,
    number_words: FxHashMap<String, String>,
    identifier: Regex,
    not_compound: Regex,
    /// A letter or digit beyond ASCII: a word character to Python that ASCII boundaries miss.
    wide_word: Regex,
    unicode: Bounded,
    ascii: Bounded,
}

impl FeatureReader {
    /// A reader that leaves out `stop_words` and reads each of `number_words` (lowercase
    /// words, tried in the order given) as the number it names.
    ///
    /// # Errors
    /// `InvalidArgument` for a number word that is not lowercase letters.
    pub fn new<S: AsRef<str>>(stop_words: &[S], number_words: &[(S, S)]) -> Result<Self> {
        if let Some((word, _)) = number_words.iter().find(|(w, _)| {
            w.as_ref().is_empty() || !w.as_ref().bytes().all(|b| b.is_ascii_lowercase())
        }) {
            return Err(Error::InvalidArgument(format!(
                "number word {:?} is not lowercase letters",
                word.as_ref()
            )));
        }
        let words: Vec<&str> = number_words.iter().map(|(w, _)| w.as_ref()).collect();
        let compile = |pattern: &str| Regex::new(pattern).expect("a valid built-in pattern");
        Ok(FeatureReader {
            stop: stop_words.iter().map(|w| w.as_ref().to_owned()).collect(),
            number_words: number_words
                .iter()
                .map(|(w, n)| (w.as_ref().to_owned(), n.as_ref().to_owned()))
                .collect(),
            identifier: compile(IDENTIFIER),
            not_compound: compile(NOT_COMPOUND),
            wide_word: compile(r"[\p{L}\p{N}&&[^\x00-\x7F]]"),
            unicode: Bounded::new(&words, false),
            ascii: Bounded::new(&words, true),
        })
    }

    /// The distinct words of `text`, lowercased, stop words aside, in order of first
    /// appearance.
    #[must_use]
    pub fn words(&self, text: &str) -> Vec<String> {
        let lower = text.to_lowercase();
        let mut seen = FxHashSet::default();
        words_of(&lower)
            .filter(|w| !self.stop.contains(*w) && seen.insert(*w))
            .map(str::to_owned)
            .collect()
    }

    /// The distinct stems of [`FeatureReader::words`].
    #[must_use]
    pub fn stems(&self, text: &str) -> Vec<String> {
        self.stems_of_lower(&text.to_lowercase())
    }

    /// [`FeatureReader::stems`] of a text already lowercased.
    fn stems_of_lower(&self, lower: &str) -> Vec<String> {
        let mut seen = FxHashSet::default();
        words_of(lower)
            .filter(|w| !self.stop.contains(*w))
            .map(stem)
            .filter(|s| seen.insert(*s))
            .map(str::to_owned)
            .collect()
    }

    /// Everything the reordering reads from `text`.
    #[must_use]
    pub fn features(&self, text: &str) -> TextFeatures {
        // Lowercasing maps no symbol to a letter: one choice holds for every form of the text.
        let bounded = if self.wide_word.is_match(text) {
            &self.unicode
        } else {
            &self.ascii
        };
        let plain = bounded.clock.replace_all(text, " ");
        let mut identifiers = Vec::new();
        let mut seen = FxHashSet::default();
        for m in self.identifier.find_iter(&plain) {
            let lower = m.as_str().to_lowercase();
            let value = lower.trim_end_matches('.');
            if self.not_compound.is_match(value) && seen.insert(value.to_owned()) {
                identifiers.push(value.to_owned());
            }
        }
        let lower = text.to_lowercase();
        let change =
            i8::from(bounded.change.is_match(&lower)) - i8::from(bounded.addition.is_match(&lower));
        // The words and the numbers are read in the same lowercased text.
        let plain_lower = plain.to_lowercase();
        TextFeatures {
            stems: self.stems_of_lower(&plain_lower),
            identifiers,
            change,
            quantities: self.quantities(&plain, &plain_lower, bounded),
        }
    }

    /// The numbers `text` (`lower`, lowercased) gives, by the stem of the word each counts, and
    /// its named versions.
    fn quantities(&self, text: &str, lower: &str, bounded: &Bounded) -> Vec<(String, Vec<String>)> {
        let mut found: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for c in bounded.name_version.captures_iter(text) {
            let name = c[1].to_lowercase();
            if !self.stop.contains(&name) {
                found
                    .entry(VERSION_SLOT.to_owned())
                    .or_default()
                    .insert(format!("{name} {}", &c[2]));
            }
        }
        for m in bounded.number.find_iter(lower) {
            let number = m.as_str();
            let mut units = counted(&lower[m.end()..]);
            // Digits (a number word starts with a letter) may version the name before them.
            if number.starts_with(|c: char| !c.is_ascii_lowercase()) {
                let before = &lower[..m.start()];
                let from = before
                    .char_indices()
                    .rev()
                    .nth(VERSIONED_REACH - 1)
                    .map_or(0, |(at, _)| at);
                units.extend(versioned(&before[from..]));
            }
            let value = self.number_words.get(number).map_or(number, String::as_str);
            for unit in units {
                if unit.len() > 2 && !self.stop.contains(unit) {
                    found
                        .entry(stem(unit).to_owned())
                        .or_default()
                        .insert(value.to_owned());
                }
            }
        }
        found
            .into_iter()
            .map(|(unit, numbers)| (unit, numbers.into_iter().collect()))
            .collect()
    }
}

/// The words a number counts, at the start of the text after it (`3 api replicas`): what
/// `^[ \t]+([a-z]+)(?:[ \t]+([a-z]+))?` captures, read by hand (a regex's captures cost ~1 µs a
/// number).
fn counted(after: &str) -> Vec<&str> {
    let mut units = Vec::new();
    let mut rest = after;
    while units.len() < 2 {
        let word = rest.trim_start_matches([' ', '\t']);
        if word.len() == rest.len() {
            break; // no blank before it
        }
        let end = word
            .find(|c: char| !c.is_ascii_lowercase())
            .unwrap_or(word.len());
        if end == 0 {
            break;
        }
        units.push(&word[..end]);
        rest = &word[end..];
    }
    units
}

/// The name a number right after `before` versions (`python 3.12`): what
/// `([a-z]{3,})[ \t]+$` finds in Python, whose `$` also matches before a final newline.
fn versioned(before: &str) -> Option<&str> {
    let body = before.strip_suffix('\n').unwrap_or(before);
    let name = body.trim_end_matches([' ', '\t']);
    if name.len() == body.len() {
        return None; // no blank after it
    }
    let letters = name
        .bytes()
        .rev()
        .take_while(u8::is_ascii_lowercase)
        .count();
    let name = &name[name.len() - letters..];
    (name.len() >= 3).then_some(name)
}

/// The words of a lowercased text, as `[a-z0-9][a-z0-9_.-]*[a-z0-9]|[a-z0-9]` finds them: in
/// each run of those characters, from its first letter or digit to its last. (A hand-written
/// scan: the regex crate's cost per match was most of a text's reading, at ~180 words a KB.)
fn words_of(lower: &str) -> impl Iterator<Item = &str> {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    lower
        .split(move |c: char| !(alnum(c) || matches!(c, '_' | '.' | '-')))
        .filter_map(move |run| Some(&run[run.find(alnum)?..=run.rfind(alnum)?]))
}

/// A crude stem, enough to match "deploys" with "deployed" and "sessions" with "session": the
/// ending `ing`, `ed`, `es` or a single `s` taken off, then an `e` (words over three letters;
/// `word` is ASCII, as [`FeatureReader::words`] gives).
#[must_use]
pub fn stem(word: &str) -> &str {
    if word.len() <= 3 {
        return word;
    }
    let bytes = word.as_bytes();
    let cut = if word.ends_with("ing") {
        3
    } else if word.ends_with("ed") || word.ends_with("es") {
        2
    } else if word.ends_with('s') && bytes[bytes.len() - 2] != b's' {
        1
    } else {
        0
    };
    let base = &word[..word.len() - cut];
    base.strip_suffix('e').unwrap_or(base)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reader() -> FeatureReader {
        FeatureReader::new(
            &["the", "is", "now", "we", "to"],
            &[("one", "1"), ("two", "2"), ("three", "3"), ("single", "1")],
        )
        .unwrap()
    }

    #[test]
    fn stems_take_off_one_ending_then_an_e() {
        let cases = [
            ("deploys", "deploy"),
            ("deployed", "deploy"),
            ("sessions", "session"),
            ("caching", "cach"),
            ("release", "releas"),
            ("classes", "class"),
            ("bless", "bless"),
            ("uses", "us"),
            ("bus", "bus"),
            ("gas", "gas"),
        ];
        for (word, want) in cases {
            assert_eq!(stem(word), want, "{word}");
        }
    }

    #[test]
    fn words_are_lowercase_distinct_and_without_stop_words() {
        let r = reader();
        assert_eq!(
            r.words("The API now uses Postgres; the api-v2 too."),
            ["api", "uses", "postgres", "api-v2", "too"]
        );
        assert_eq!(r.stems("Deploys deployed the DEPLOY"), ["deploy"]);
    }

    #[test]
    fn features_read_identifiers_change_and_quantities() {
        let r = reader();
        let f = r.features(
            "2026-05-10 17:00 We moved billing to db-billing-01 in us-east-1 with 3 API replicas, \
             on MySQL 5.7; we run python 3.12.",
        );
        assert_eq!(f.change, 1);
        assert!(f.identifiers.contains(&"db-billing-01".to_owned()), "{f:?}");
        assert!(f.identifiers.contains(&"us-east-1".to_owned()), "{f:?}");
        assert!(
            !f.identifiers.iter().any(|i| i.contains("2026")),
            "dates are not identifiers: {f:?}"
        );
        let q: FxHashMap<_, _> = f.quantities.iter().cloned().collect();
        assert_eq!(q["api"], ["3"]);
        assert_eq!(q["replica"], ["3"]);
        assert_eq!(q[VERSION_SLOT], ["mysql 5.7"]);
        assert_eq!(q["python"], ["3.12"]);
        assert!(!f.stems.contains(&"17".to_owned()) && !f.stems.contains(&"2026".to_owned()));
        // "now" changes, "now has" adds: they cancel out. Number words read as digits.
        let g = r.features("The panel now has two dark themes and a single toggle.");
        assert_eq!(g.change, 0);
        assert_eq!(r.features("The panel also has dark themes.").change, -1);
        let q: FxHashMap<_, _> = g.quantities.iter().cloned().collect();
        assert_eq!(q["dark"], ["2"]);
        assert_eq!(q["toggl"], ["1"]);
    }

    #[test]
    fn a_versioned_name_is_read_up_to_forty_characters_back_and_before_a_final_newline() {
        let r = reader();
        let q = |text: &str| -> FxHashMap<String, Vec<String>> {
            r.features(text).quantities.into_iter().collect()
        };
        assert_eq!(q("we run python \n3.12 there")["python"], ["3.12"]);
        let far = format!("python {}3.12", " ".repeat(VERSIONED_REACH));
        assert!(!q(&far).contains_key("python"), "beyond reach");
        // Forty characters back, not bytes: a window cut inside a two-byte character would not
        // be text.
        assert_eq!(
            q(&format!("{} python 3.12", "é".repeat(45)))["python"],
            ["3.12"]
        );
    }

    proptest::proptest! {
        #[test]
        fn counted_and_versioned_read_what_their_patterns_capture(text in "[a-z \t\né3]{0,24}") {
            let counted_pattern = Regex::new(r"^[ \t]+([a-z]+)(?:[ \t]+([a-z]+))?").unwrap();
            let want: Vec<&str> = counted_pattern
                .captures(&text)
                .map(|c| c.iter().skip(1).flatten().map(|m| m.as_str()).collect())
                .unwrap_or_default();
            proptest::prop_assert_eq!(counted(&text), want);
            let versioned_pattern = Regex::new(r"([a-z]{3,})[ \t]+\n?\z").unwrap();
            let want = versioned_pattern.captures(&text).map(|c| c.get(1).unwrap().as_str());
            proptest::prop_assert_eq!(versioned(&text), want);
        }

        #[test]
        fn the_word_scan_finds_what_the_word_pattern_finds(text in "[a-z0-9_.\\- éA!]{0,40}") {
            let pattern = Regex::new(r"[a-z0-9][a-z0-9_.-]*[a-z0-9]|[a-z0-9]").unwrap();
            let want: Vec<&str> = pattern.find_iter(&text).map(|m| m.as_str()).collect();
            proptest::prop_assert_eq!(words_of(&text).collect::<Vec<_>>(), want);
        }
    }

    #[test]
    fn boundaries_beside_characters_beyond_ascii_are_pythons() {
        let r = reader();
        let units = |text: &str| -> Vec<String> {
            r.features(text)
                .quantities
                .into_iter()
                .map(|(unit, _)| unit)
                .collect()
        };
        // A letter beyond ASCII is a word character: no boundary between it and a digit…
        assert_eq!(units("é5 apples"), Vec::<String>::new());
        // …a symbol is not, in a text of symbols only (ASCII boundaries) or beside letters.
        assert_eq!(units("│5 apples ⋮"), ["appl"]);
        assert_eq!(units("│5 apples, é"), ["appl"]);
    }

    #[test]
    fn number_words_must_be_lowercase_letters() {
        assert!(FeatureReader::new(&["a"], &[("Two", "2")]).is_err());
        assert!(FeatureReader::new(&["a"], &[("", "0")]).is_err());
    }
}
