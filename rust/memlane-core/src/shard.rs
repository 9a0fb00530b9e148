//! Sharded search: what one shard of a sharded index contributes to a query, and how the
//! shards' contributions combine into the answer one home holding every chunk would give.
//!
//! BM25 is not local to a shard: a term's idf and the average text length come from the whole
//! corpus. Each shard reports its share of a query's statistics ([`TermStats::of`]), the
//! caller adds them up ([`TermStats::add`]), and every shard scores with the sum
//! ([`crate::store::Store::candidates`]), so a chunk scores in its shard exactly as in one
//! home. The shards' candidate lists then merge ([`Candidates::merge`]) into the lists that
//! home's search would have made, and [`Candidates::fuse`] fuses them with the one
//! [`crate::hybrid::fuse`] a home uses.

use crate::error::{Error, Result};
use crate::hybrid::{fuse, Fused, Fusion};
use crate::lexical::{query_tokens, Lexical};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use tantivy::query::Bm25StatisticsProvider;
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocSet, Searcher, Term, TERMINATED};

/// The corpus statistics BM25 needs for one query, from one index or summed over shards.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TermStats {
    /// Live documents (chunks).
    pub docs: u64,
    /// Text tokens (key: the field id), each text counted as long as its field norm says.
    pub tokens: BTreeMap<u32, u64>,
    /// Documents holding each of the query's tokens in the text field (key: the token, as
    /// [`crate::lexical::query_tokens`] makes it: a caller can keep them per token).
    pub doc_freqs: BTreeMap<String, u64>,
}

impl TermStats {
    /// This index's statistics for the terms of `query`, counted over its live chunks only
    /// and with every text as long as BM25 takes it to be (its field norm): numbers that
    /// depend on which chunks an index holds, never on how they lie in segments, what was
    /// deleted or merged before. tantivy's own (deleted chunks counted until a merge, token
    /// totals estimated after one) would score the same chunk differently in a home and in
    /// a shard, or in one home before and after a merge.
    ///
    /// # Errors
    /// tantivy errors.
    pub fn of(lexical: &Lexical, searcher: &Searcher, query: &str) -> Result<TermStats> {
        let text = lexical.text_field();
        let mut stats = TermStats {
            docs: searcher.num_docs(),
            tokens: BTreeMap::from([(text.field_id(), lexical.norm_tokens(searcher)?)]),
            ..TermStats::default()
        };
        for token in query_tokens(query) {
            let term = Term::from_field_text(text, &token);
            stats
                .doc_freqs
                .insert(token, live_doc_freq(searcher, &term)?);
        }
        Ok(stats)
    }

    /// Add another shard's statistics for the same query.
    pub fn add(&mut self, other: &TermStats) {
        self.docs += other.docs;
        for (field, n) in &other.tokens {
            *self.tokens.entry(*field).or_default() += n;
        }
        for (term, n) in &other.doc_freqs {
            *self.doc_freqs.entry(term.clone()).or_default() += n;
        }
    }
}

/// Live chunks holding `term` (a segment's term dictionary also counts deleted ones).
fn live_doc_freq(searcher: &Searcher, term: &Term) -> Result<u64> {
    let mut n = 0u64;
    for segment in searcher.segment_readers() {
        let inverted = segment.inverted_index(term.field())?;
        let Some(alive) = segment.alive_bitset() else {
            n += u64::from(inverted.doc_freq(term)?);
            continue;
        };
        if let Some(mut postings) = inverted.read_postings(term, IndexRecordOption::Basic)? {
            while postings.doc() != TERMINATED {
                n += u64::from(alive.is_alive(postings.doc()));
                postings.advance();
            }
        }
    }
    Ok(n)
}

impl Bm25StatisticsProvider for TermStats {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        Ok(self.tokens.get(&field.field_id()).copied().unwrap_or(0))
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(self.docs)
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        // Only the text field is scored: its id is the one key of `tokens`.
        if !self.tokens.contains_key(&term.field().field_id()) {
            return Ok(0);
        }
        let value = term.value();
        let token = value.as_str().unwrap_or_default();
        Ok(self.doc_freqs.get(token).copied().unwrap_or(0))
    }
}

/// What a shard holds, for deciding which shards a scoped query must ask: read from the
/// term dictionaries and the timestamp column, without a stored document.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// Live documents (chunks), as [`TermStats`] counts them.
    pub docs: u64,
    /// Text tokens, as [`TermStats`] counts them.
    pub tokens: u64,
    /// Kinds of chunks (`transcript`, `knowledge`).
    pub sources: Vec<String>,
    /// Session ids.
    pub sessions: Vec<String>,
    /// Earliest first timestamp of a chunk (ms).
    pub ts_min: Option<i64>,
    /// Latest first timestamp of a chunk (ms).
    pub ts_max: Option<i64>,
}

impl Summary {
    /// The summary of the index `searcher` reads (terms of deleted chunks may linger until a
    /// merge: a summary may name more than the shard holds, never less).
    ///
    /// # Errors
    /// tantivy errors.
    pub fn of(lexical: &Lexical, searcher: &Searcher) -> Result<Summary> {
        let schema = searcher.schema();
        let terms_of = |name: &str| -> Result<Vec<String>> {
            let mut all = std::collections::BTreeSet::new();
            let Ok(field) = schema.get_field(name) else {
                return Ok(Vec::new());
            };
            for segment in searcher.segment_readers() {
                let inverted = segment.inverted_index(field)?;
                let mut stream = inverted.terms().stream()?;
                while stream.advance() {
                    all.insert(String::from_utf8_lossy(stream.key()).into_owned());
                }
            }
            Ok(all.into_iter().collect())
        };
        let mut summary = Summary {
            docs: searcher.num_docs(),
            tokens: lexical.norm_tokens(searcher)?,
            sources: terms_of("source")?,
            sessions: terms_of("session_id")?,
            ..Summary::default()
        };
        for segment in searcher.segment_readers() {
            let column = segment.fast_fields().i64("ts")?;
            for doc in segment.doc_ids_alive() {
                if let Some(ts) = column.first(doc) {
                    summary.ts_min = Some(summary.ts_min.map_or(ts, |m| m.min(ts)));
                    summary.ts_max = Some(summary.ts_max.map_or(ts, |m| m.max(ts)));
                }
            }
        }
        Ok(summary)
    }
}

/// What a search ranks before fusion: the keyword and vector candidate lists.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Candidates {
    /// Keyword candidates (key, BM25 score), best first, equal scores by key.
    pub bm25: Vec<(u64, f32)>,
    /// The most the query can score in BM25 (see [`Lexical::bm25_ceiling`]).
    pub bm25_ceiling: f32,
    /// Vector candidates (key, exact cosine similarity), best first, equal ones by key.
    pub ann: Vec<(u64, f32)>,
    /// Exact similarity of every candidate of either list that has vectors.
    pub sims: Vec<(u64, f32)>,
    /// The query was ranked with vectors (the index has some and a query vector was given).
    pub have_vectors: bool,
}

/// Best first, equal scores by key: the order a home ranks both candidate lists in.
fn rank(list: &mut [(u64, f32)]) {
    list.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
}

impl Candidates {
    /// The candidates one search over all of `parts`' chunks would have found, `limit` per
    /// list. Each part must hold its own `limit` best (what a shard's search returns); a chunk
    /// found in several parts (the same text indexed in two shards) counts once.
    #[must_use]
    pub fn merge(parts: &[Candidates], limit: usize) -> Candidates {
        let union = |list: fn(&Candidates) -> &Vec<(u64, f32)>| -> Vec<(u64, f32)> {
            let mut all: Vec<(u64, f32)> =
                parts.iter().flat_map(|p| list(p).iter().copied()).collect();
            rank(&mut all);
            let mut seen = HashSet::new();
            all.retain(|h| seen.insert(h.0));
            all.truncate(limit);
            all
        };
        let mut sims: HashMap<u64, f32> = HashMap::new();
        for part in parts {
            sims.extend(part.sims.iter().copied());
        }
        let mut sims: Vec<(u64, f32)> = sims.into_iter().collect();
        sims.sort_by_key(|s| s.0);
        Candidates {
            bm25: union(|c| &c.bm25),
            // The same in every part scored with the same statistics.
            bm25_ceiling: parts.iter().map(|p| p.bm25_ceiling).fold(0.0, f32::max),
            ann: union(|c| &c.ann),
            sims,
            have_vectors: parts.iter().any(|p| p.have_vectors),
        }
    }

    /// Fuse the two lists as a home's search does and keep the best `k`.
    #[must_use]
    pub fn fuse(&self, fusion: Fusion, threshold: f32, k: usize) -> Vec<Fused> {
        let sims: HashMap<u64, f32> = self.sims.iter().copied().collect();
        let mut fused = fuse(
            &self.bm25,
            self.bm25_ceiling,
            &self.ann,
            &sims,
            self.have_vectors,
            fusion,
            threshold,
        );
        fused.truncate(k);
        fused
    }

    /// A compact, exact wire form (scores as their bits: a decimal form could round).
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        let lists = [&self.bm25, &self.ann, &self.sims];
        let len: usize = lists.iter().map(|l| l.len()).sum();
        let mut out = Vec::with_capacity(1 + 4 + 12 + 12 * len);
        out.push(u8::from(self.have_vectors));
        out.extend_from_slice(&self.bm25_ceiling.to_bits().to_le_bytes());
        for list in lists {
            out.extend_from_slice(&u32::try_from(list.len()).unwrap_or(u32::MAX).to_le_bytes());
            for (key, score) in list {
                out.extend_from_slice(&key.to_le_bytes());
                out.extend_from_slice(&score.to_bits().to_le_bytes());
            }
        }
        out
    }

    /// Read back what [`Candidates::to_bytes`] wrote.
    ///
    /// # Errors
    /// `Corrupt` when the bytes are not such a form.
    pub fn from_bytes(bytes: &[u8]) -> Result<Candidates> {
        let bad = || Error::Corrupt {
            path: "candidates".into(),
            reason: "not the wire form of a shard's candidates".into(),
        };
        let (&flag, mut rest) = bytes.split_first().ok_or_else(bad)?;
        let mut take = |n: usize| -> Result<&[u8]> {
            let (head, tail) = rest.split_at_checked(n).ok_or_else(bad)?;
            rest = tail;
            Ok(head)
        };
        let bm25_ceiling =
            f32::from_bits(u32::from_le_bytes(take(4)?.try_into().map_err(|_| bad())?));
        let mut lists: [Vec<(u64, f32)>; 3] = Default::default();
        for list in &mut lists {
            let n = u32::from_le_bytes(take(4)?.try_into().map_err(|_| bad())?) as usize;
            let body = take(n.checked_mul(12).ok_or_else(bad)?)?;
            *list = body
                .chunks_exact(12)
                .map(|c| {
                    let key = u64::from_le_bytes(c[..8].try_into().unwrap_or_default());
                    let bits = u32::from_le_bytes(c[8..].try_into().unwrap_or_default());
                    (key, f32::from_bits(bits))
                })
                .collect();
        }
        if !rest.is_empty() {
            return Err(bad());
        }
        let [bm25, ann, sims] = lists;
        Ok(Candidates {
            bm25,
            bm25_ceiling,
            ann,
            sims,
            have_vectors: flag == 1,
        })
    }
}

/// The best `k` of a search over every part's chunks, each with the index of the part that
/// holds it (the first one, when several do): merged, fused, cut.
#[must_use]
pub fn fuse_parts(
    parts: &[Candidates],
    limit: usize,
    fusion: Fusion,
    threshold: f32,
    k: usize,
) -> Vec<(usize, Fused)> {
    let mut owner: HashMap<u64, usize> = HashMap::new();
    for (i, part) in parts.iter().enumerate() {
        for (key, _) in part.bm25.iter().chain(&part.ann) {
            owner.entry(*key).or_insert(i);
        }
    }
    Candidates::merge(parts, limit)
        .fuse(fusion, threshold, k)
        .into_iter()
        .map(|f| (owner.get(&f.key).copied().unwrap_or_default(), f))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_keeps_the_best_of_the_union_with_ties_by_key() {
        let a = Candidates {
            bm25: vec![(5, 3.0), (1, 2.0)],
            bm25_ceiling: 7.5,
            ann: vec![(5, 0.9)],
            sims: vec![(5, 0.9), (1, 0.2)],
            have_vectors: true,
        };
        let b = Candidates {
            bm25: vec![(4, 2.0), (9, 1.0)],
            bm25_ceiling: 7.5,
            ann: vec![(7, 0.95), (4, 0.1)],
            sims: vec![(4, 0.1), (7, 0.95)],
            have_vectors: false,
        };
        let m = Candidates::merge(&[a, b], 3);
        assert_eq!(m.bm25, vec![(5, 3.0), (1, 2.0), (4, 2.0)]);
        assert_eq!(m.ann, vec![(7, 0.95), (5, 0.9), (4, 0.1)]);
        assert_eq!(m.sims.len(), 4);
        assert_eq!(m.bm25_ceiling, 7.5);
        assert!(m.have_vectors);
    }

    #[test]
    fn wire_form_round_trips_exactly() {
        let c = Candidates {
            bm25: vec![(u64::MAX >> 8, 1.0e-7), (3, f32::MAX)],
            bm25_ceiling: 12.25,
            ann: vec![],
            sims: vec![(3, -0.333_333_34)],
            have_vectors: true,
        };
        assert_eq!(Candidates::from_bytes(&c.to_bytes()).unwrap(), c);
        assert!(Candidates::from_bytes(&c.to_bytes()[..9]).is_err());
        assert!(Candidates::from_bytes(b"").is_err());
    }

    #[test]
    fn a_chunk_in_two_parts_counts_once() {
        let a = Candidates {
            bm25: vec![(5, 3.0)],
            ..Candidates::default()
        };
        let m = Candidates::merge(&[a.clone(), a], 10);
        assert_eq!(m.bm25, vec![(5, 3.0)]);
    }

    #[test]
    fn stats_add_up_per_field_and_term() {
        let mut a = TermStats {
            docs: 3,
            tokens: BTreeMap::from([(2, 30)]),
            doc_freqs: BTreeMap::from([("aa".into(), 1)]),
        };
        let b = TermStats {
            docs: 4,
            tokens: BTreeMap::from([(2, 10), (1, 4)]),
            doc_freqs: BTreeMap::from([("aa".into(), 2), ("bb".into(), 1)]),
        };
        a.add(&b);
        assert_eq!(a.docs, 7);
        assert_eq!(a.tokens, BTreeMap::from([(1, 4), (2, 40)]));
        assert_eq!(a.doc_freqs["aa"], 3);
        assert_eq!(a.doc_freqs["bb"], 1);
    }

    #[test]
    fn stats_are_kept_per_token_of_the_text_field_only() {
        let text = Field::from_field_id(2);
        let stats = TermStats {
            docs: 10,
            tokens: BTreeMap::from([(2, 100)]),
            doc_freqs: query_tokens("Deploy failed: exit 137")
                .into_iter()
                .zip(1..)
                .collect(),
        };
        assert_eq!(
            stats.doc_freqs.keys().collect::<Vec<_>>(),
            ["137", "deploy", "exit", "fail"]
        );
        let df = |field, token| {
            stats
                .doc_freq(&Term::from_field_text(field, token))
                .unwrap()
        };
        assert_eq!(df(text, "fail"), 2);
        assert_eq!(df(text, "failed"), 0); // only the analyzer's token is a key
        assert_eq!(df(Field::from_field_id(1), "fail"), 0); // a filter field is never scored
    }
}
