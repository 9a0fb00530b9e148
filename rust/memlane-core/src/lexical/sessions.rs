//! The session catalog: one row per transcript session, built from the term dictionaries,
//! postings and fast fields alone (the doc store is never read), so that listing thousands of
//! sessions costs milliseconds rather than a stored-chunk read per chunk.

use super::document::TRANSCRIPT;
use super::{Filters, Lexical};
use crate::error::Result;
use std::collections::hash_map::{Entry, HashMap};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocId, DocSet, SegmentReader, Term, TERMINATED};

/// What the index knows of one session without reading a stored chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionSummary {
    /// The session id.
    pub session_id: String,
    /// Its live transcript chunks.
    pub chunks: u64,
    /// The earliest first timestamp of its chunks (ms), if any has one.
    pub first_ts: Option<i64>,
    /// The latest first timestamp of its chunks (ms), if any has one.
    pub last_ts: Option<i64>,
    /// The project key of its chunks; empty when none has one or the home predates projects.
    pub project: String,
    /// The git branch of its chunks; empty when none has one.
    pub branch: String,
    /// The key of its earliest chunk (the one with the smallest timestamp, else the smallest
    /// key): one stored chunk to read for the session's path and format.
    pub key: u64,
}

/// Where a chunk stands in its session's order: earliest timestamp first, chunks without one
/// last, ties by key (so the pick does not depend on segment or document order).
type Rank = (bool, i64, u64);

fn rank(ts: Option<i64>, key: u64) -> Rank {
    (ts.is_none(), ts.unwrap_or_default(), key)
}

/// A session's row as its chunks are seen, segment by segment.
struct Tally {
    chunks: u64,
    first_ts: Option<i64>,
    last_ts: Option<i64>,
    earliest: Rank,
    /// The value of the earliest chunk that has one, with that chunk's rank.
    project: Option<(Rank, String)>,
    branch: Option<(Rank, String)>,
}

impl Tally {
    fn new() -> Tally {
        Tally {
            chunks: 0,
            first_ts: None,
            last_ts: None,
            earliest: (true, i64::MAX, u64::MAX),
            project: None,
            branch: None,
        }
    }

    fn add(&mut self, ts: Option<i64>, key: u64, project: Option<&str>, branch: Option<&str>) {
        let at = rank(ts, key);
        self.merge(Tally {
            chunks: 1,
            first_ts: ts,
            last_ts: ts,
            earliest: at,
            project: project.map(|p| (at, p.to_owned())),
            branch: branch.map(|b| (at, b.to_owned())),
        });
    }

    /// Take in the chunks `other` has seen (the same session's, in another segment).
    fn merge(&mut self, other: Tally) {
        self.chunks += other.chunks;
        // Option orders None first: the smallest is taken among the values present only.
        self.first_ts = match (self.first_ts, other.first_ts) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.last_ts = self.last_ts.max(other.last_ts);
        self.earliest = self.earliest.min(other.earliest);
        for (kept, offered) in [
            (&mut self.project, other.project),
            (&mut self.branch, other.branch),
        ] {
            if let Some((at, _)) = &offered {
                if kept.as_ref().is_none_or(|(r, _)| at < r) {
                    *kept = offered;
                }
            }
        }
    }

    fn summary(self, session_id: String) -> SessionSummary {
        SessionSummary {
            session_id,
            chunks: self.chunks,
            first_ts: self.first_ts,
            last_ts: self.last_ts,
            project: self.project.map(|(_, p)| p).unwrap_or_default(),
            branch: self.branch.map(|(_, b)| b).unwrap_or_default(),
            key: self.earliest.2,
        }
    }
}

/// The terms of a whole-value field (project, branch), and per document the index of its
/// term, if it has one: the postings walked once, instead of a stored field read per chunk.
struct TermOfDoc {
    terms: Vec<String>,
    of_doc: Vec<Option<u32>>,
}

impl TermOfDoc {
    fn of(segment: &SegmentReader, field: Option<Field>) -> Result<TermOfDoc> {
        let mut out = TermOfDoc {
            terms: Vec::new(),
            of_doc: vec![None; segment.max_doc() as usize],
        };
        let Some(field) = field else {
            return Ok(out);
        };
        let inverted = segment.inverted_index(field)?;
        let mut terms = inverted.terms().stream()?;
        while terms.advance() {
            let index = u32::try_from(out.terms.len()).unwrap_or(u32::MAX);
            out.terms
                .push(String::from_utf8_lossy(terms.key()).into_owned());
            let mut postings =
                inverted.read_postings_from_terminfo(terms.value(), IndexRecordOption::Basic)?;
            let mut doc = postings.doc();
            while doc != TERMINATED {
                out.of_doc[doc as usize] = Some(index);
                doc = postings.advance();
            }
        }
        Ok(out)
    }

    fn get(&self, doc: DocId) -> Option<&str> {
        self.of_doc[doc as usize].map(|i| self.terms[i as usize].as_str())
    }
}

impl Lexical {
    /// One row per session of the live transcript chunks (the empty session id left out),
    /// merged across segments: latest `last_ts` first (sessions without timestamps last),
    /// then by session id.
    ///
    /// # Errors
    /// tantivy errors.
    pub fn sessions(&self) -> Result<Vec<SessionSummary>> {
        let transcript = Term::from_field_text(self.fields.source, TRANSCRIPT);
        let searcher = self.searcher();
        let mut tallies: HashMap<String, Tally> = HashMap::new();
        for segment in searcher.segment_readers() {
            // Live transcripts: the chunks a session counts.
            let mut counted = vec![false; segment.max_doc() as usize];
            let sources = segment.inverted_index(self.fields.source)?;
            let Some(mut postings) =
                sources.read_postings(&transcript, IndexRecordOption::Basic)?
            else {
                continue;
            };
            let mut doc = postings.doc();
            while doc != TERMINATED {
                counted[doc as usize] = segment.alive_bitset().is_none_or(|a| a.is_alive(doc));
                doc = postings.advance();
            }
            let fast = segment.fast_fields();
            let keys = fast.u64("key")?;
            let timestamps = fast.i64("ts")?;
            let projects = TermOfDoc::of(segment, self.fields.project)?;
            let branches = TermOfDoc::of(segment, self.fields.branch)?;
            let inverted = segment.inverted_index(self.fields.session_id)?;
            let mut terms = inverted.terms().stream()?;
            while terms.advance() {
                if terms.key().is_empty() {
                    continue;
                }
                let mut postings = inverted
                    .read_postings_from_terminfo(terms.value(), IndexRecordOption::Basic)?;
                let mut tally = Tally::new();
                let mut doc = postings.doc();
                while doc != TERMINATED {
                    if counted[doc as usize] {
                        tally.add(
                            timestamps.first(doc),
                            keys.first(doc).unwrap_or_default(),
                            projects.get(doc),
                            branches.get(doc),
                        );
                    }
                    doc = postings.advance();
                }
                if tally.chunks > 0 {
                    let id = String::from_utf8_lossy(terms.key()).into_owned();
                    match tallies.entry(id) {
                        Entry::Occupied(mut seen) => seen.get_mut().merge(tally),
                        Entry::Vacant(new) => {
                            new.insert(tally);
                        }
                    }
                }
            }
        }
        let mut rows: Vec<SessionSummary> = tallies
            .into_iter()
            .map(|(id, tally)| tally.summary(id))
            .collect();
        rows.sort_by(|a, b| {
            (b.last_ts.is_some(), b.last_ts)
                .cmp(&(a.last_ts.is_some(), a.last_ts))
                .then_with(|| a.session_id.cmp(&b.session_id))
        });
        Ok(rows)
    }

    /// Keys of every live chunk of `session_id` (any source), ascending.
    ///
    /// # Errors
    /// tantivy errors.
    pub fn session_keys(&self, session_id: &str) -> Result<Vec<u64>> {
        let filters = Filters {
            session_id: Some(session_id.to_owned()),
            ..Filters::default()
        };
        let mut keys: Vec<u64> = self
            .filtered_keys(&self.searcher(), &filters)?
            .into_iter()
            .collect();
        keys.sort_unstable();
        Ok(keys)
    }
}
