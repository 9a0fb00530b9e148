//! BM25 scoring: the top hits of a query with their ties at the cut, scored the same way
//! however the chunks lie in segments; the query's ceiling and the best passage of a text.

use super::document::{analyzer, query_tokens};
use super::{Filters, Lexical};
use crate::error::Result;
use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeMap, BinaryHeap};
use std::ops::Range;
use tantivy::columnar::Column;
use tantivy::fieldnorm::FieldNormReader;
use tantivy::postings::Postings;
use tantivy::query::{
    Bm25StatisticsProvider, Bm25Weight, BooleanQuery, ConstScoreQuery, EnableScoring, Occur, Query,
    TermQuery,
};
use tantivy::schema::IndexRecordOption;
use tantivy::snippet::SnippetGenerator;
use tantivy::{DocAddress, DocSet, Score, Searcher, Term};

/// How far below the cut a score still counts as tied with it (relative): tantivy's scores
/// and the canonical ones differ in the last bits.
const TIE_SLACK: Score = 1e-5;

/// A score ordered totally, for the heap of the best scores.
#[derive(PartialEq)]
struct TotalScore(Score);

impl Eq for TotalScore {}

impl PartialOrd for TotalScore {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for TotalScore {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// The `key` fast-field column of each segment, opened on first use.
struct KeyColumns<'a> {
    searcher: &'a Searcher,
    columns: Vec<Option<Column<u64>>>,
}

impl<'a> KeyColumns<'a> {
    fn new(searcher: &'a Searcher) -> Self {
        KeyColumns {
            searcher,
            columns: vec![None; searcher.segment_readers().len()],
        }
    }

    fn key(&mut self, addr: DocAddress) -> Result<u64> {
        let slot = &mut self.columns[addr.segment_ord as usize];
        if slot.is_none() {
            let reader = self.searcher.segment_reader(addr.segment_ord);
            *slot = Some(reader.fast_fields().u64("key")?);
        }
        Ok(slot
            .as_ref()
            .and_then(|c| c.first(addr.doc_id))
            .unwrap_or_default())
    }
}

impl Lexical {
    /// Text tokens of the live chunks in `searcher`, each text counted as long as its field
    /// norm (what BM25 takes its length to be): the same for the same chunks however they lie
    /// in segments (see [`crate::shard::TermStats::of`]). Kept per segment: a segment never changes, only
    /// its deletions.
    ///
    /// # Errors
    /// tantivy errors.
    pub fn norm_tokens(&self, searcher: &Searcher) -> Result<u64> {
        let mut total = 0;
        for segment in searcher.segment_readers() {
            let id = (segment.segment_id(), segment.num_deleted_docs());
            let known = self
                .norm_tokens
                .lock()
                .ok()
                .and_then(|m| m.get(&id).copied());
            let tokens = match known {
                Some(tokens) => tokens,
                None => {
                    let norms = segment.get_fieldnorms_reader(self.fields.text)?;
                    let mut count = [0u64; 256];
                    for doc in segment.doc_ids_alive() {
                        count[usize::from(norms.fieldnorm_id(doc))] += 1;
                    }
                    let tokens = (0..=255u8)
                        .map(|id| {
                            count[usize::from(id)] * u64::from(FieldNormReader::id_to_fieldnorm(id))
                        })
                        .sum();
                    if let Ok(mut m) = self.norm_tokens.lock() {
                        m.insert(id, tokens);
                    }
                    tokens
                }
            };
            total += tokens;
        }
        Ok(total)
    }

    /// Analyze a query into its distinct index terms.
    #[must_use]
    pub fn query_terms(&self, query: &str) -> Vec<Term> {
        query_tokens(query)
            .iter()
            .map(|token| Term::from_field_text(self.fields.text, token))
            .collect()
    }

    /// BM25 top `limit` (key, score, document address) for `query` in `searcher`, restricted by
    /// `filters`, with the corpus statistics (documents, text lengths, document frequencies)
    /// taken from `statistics`: the home's own ([`crate::shard::TermStats`], which count live
    /// chunks only), or a sharded index's sum (see [`crate::shard`]). The addresses let the
    /// caller fetch the stored chunks without a key lookup.
    ///
    /// # Errors
    /// tantivy errors.
    pub fn search(
        &self,
        searcher: &Searcher,
        query: &str,
        filters: &Filters,
        limit: usize,
        statistics: &dyn Bm25StatisticsProvider,
    ) -> Result<Vec<(u64, f32, DocAddress)>> {
        let terms = self.query_terms(query);
        if terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let query = self.query_of(terms.clone(), filters);
        let top = Self::top_with_ties(searcher, &*query, limit, statistics)?;
        let scores = self.canonical_scores(searcher, &terms, &top, statistics)?;
        let mut keys = KeyColumns::new(searcher);
        let mut hits = top
            .into_iter()
            .zip(scores)
            .map(|(addr, score)| Ok((keys.key(addr)?, score, addr)))
            .collect::<Result<Vec<_>>>()?;
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        hits.truncate(limit);
        Ok(hits)
    }

    /// The documents scoring at least the `limit`-th best score of `query`, in one pass.
    ///
    /// Chunks tied at the cut would be chosen by where their documents sit in segments,
    /// which differs from one build of an archive to the next: the whole tie is taken (the
    /// caller cuts it by chunk key). A tie is judged loosely: tantivy's scores differ from the
    /// canonical ones in the last bits. The pruning threshold trails the `limit`-th score by
    /// that slack, so block-WAND still skips what cannot reach the cut, across all segments.
    fn top_with_ties(
        searcher: &Searcher,
        query: &dyn Query,
        limit: usize,
        statistics: &dyn Bm25StatisticsProvider,
    ) -> Result<Vec<DocAddress>> {
        let weight = query.weight(EnableScoring::enabled_from_statistics_provider(
            statistics, searcher,
        ))?;
        // The `limit` best scores so far (a min-heap), and every document that passed the
        // threshold when it was met; those below the final threshold are dropped at the end.
        let mut best: BinaryHeap<Reverse<TotalScore>> = BinaryHeap::with_capacity(limit + 1);
        let mut kept: Vec<(Score, DocAddress)> = Vec::new();
        let mut threshold = Score::MIN;
        for (ord, segment) in searcher.segment_readers().iter().enumerate() {
            let segment_ord = u32::try_from(ord).unwrap_or(u32::MAX);
            let alive = segment.alive_bitset();
            weight.for_each_pruning(threshold, segment, &mut |doc, score| {
                if alive.is_some_and(|a| a.is_deleted(doc)) {
                    return threshold;
                }
                kept.push((score, DocAddress::new(segment_ord, doc)));
                best.push(Reverse(TotalScore(score)));
                if best.len() > limit {
                    best.pop();
                }
                if best.len() == limit {
                    if let Some(Reverse(TotalScore(cut))) = best.peek() {
                        threshold = cut * (1.0 - TIE_SLACK);
                    }
                    if kept.len() >= 4 * limit {
                        kept.retain(|(s, _)| *s > threshold);
                    }
                }
                threshold
            })?;
        }
        Ok(kept
            .into_iter()
            .filter(|(s, _)| *s > threshold)
            .map(|(_, addr)| addr)
            .collect())
    }

    /// The BM25 score of each document for `terms`, each term's part added in the terms'
    /// order. tantivy adds them in the order its scorers happen to be in, which follows how
    /// documents lie in segments: the same chunk would score a few last bits apart in one
    /// home and in a shard holding it (or after a merge). The parts themselves are tantivy's.
    fn canonical_scores(
        &self,
        searcher: &Searcher,
        terms: &[Term],
        docs: &[DocAddress],
        statistics: &dyn Bm25StatisticsProvider,
    ) -> Result<Vec<f32>> {
        let field = self.fields.text;
        let total_docs = statistics.total_num_docs()?;
        #[allow(clippy::cast_precision_loss)] // tantivy computes the average the same way
        let average = statistics.total_num_tokens(field)? as f32 / total_docs as f32;
        let weights = terms
            .iter()
            .map(|t| {
                Ok(Bm25Weight::for_one_term(
                    statistics.doc_freq(t)?,
                    total_docs,
                    average,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        let mut scores = vec![0f32; docs.len()];
        // Each segment's documents in ascending order: every term's postings read forward once.
        let mut order: Vec<usize> = (0..docs.len()).collect();
        order.sort_by_key(|&i| (docs[i].segment_ord, docs[i].doc_id));
        for group in order.chunk_by(|a, b| docs[*a].segment_ord == docs[*b].segment_ord) {
            let segment = searcher.segment_reader(docs[group[0]].segment_ord);
            let inverted = segment.inverted_index(field)?;
            let norms = segment.get_fieldnorms_reader(field)?;
            let mut parts = vec![0f32; group.len() * terms.len()];
            for (t, term) in terms.iter().enumerate() {
                let Some(mut postings) =
                    inverted.read_postings(term, IndexRecordOption::WithFreqs)?
                else {
                    continue;
                };
                for (j, &i) in group.iter().enumerate() {
                    let doc = docs[i].doc_id;
                    if postings.doc() <= doc && postings.seek(doc) == doc {
                        parts[j * terms.len() + t] =
                            weights[t].score(norms.fieldnorm_id(doc), postings.term_freq());
                    }
                }
            }
            for (j, &i) in group.iter().enumerate() {
                scores[i] = parts[j * terms.len()..(j + 1) * terms.len()]
                    .iter()
                    .fold(0.0, |sum, part| sum + part);
            }
        }
        Ok(scores)
    }

    /// The BM25 query of `terms` under `filters`.
    fn query_of(&self, terms: Vec<Term>, filters: &Filters) -> Box<dyn Query> {
        let should: Vec<(Occur, Box<dyn Query>)> = terms
            .into_iter()
            .map(|t| {
                let q: Box<dyn Query> = Box::new(TermQuery::new(t, IndexRecordOption::WithFreqs));
                (Occur::Should, q)
            })
            .collect();
        // Filters select without scoring: a hit's score is its text's alone, so it can be read
        // against `bm25_ceiling`.
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = self
            .filter_clauses(filters)
            .into_iter()
            .map(|(occur, q)| -> (Occur, Box<dyn Query>) {
                (occur, Box::new(ConstScoreQuery::new(q, 0.0)))
            })
            .collect();
        if clauses.is_empty() {
            Box::new(BooleanQuery::new(should))
        } else {
            clauses.push((Occur::Must, Box::new(BooleanQuery::new(should))));
            Box::new(BooleanQuery::new(clauses))
        }
    }

    /// The most `query` can score in BM25 under `statistics` (a searcher's, or a sharded
    /// index's [`crate::shard::TermStats`]): the sum over its distinct terms of
    /// idf·(k1 + 1), the score of a chunk made of the term repeated without end. A hit's score
    /// over this is the share of the query's informative (idf-weighted) terms it holds, which,
    /// unlike a score normalised to the query's best hit, means the same from query to query.
    /// A term the index never saw counts with the idf of a term in no chunk: the query asks for
    /// something nothing holds.
    ///
    /// # Errors
    /// tantivy errors reading term statistics.
    pub fn bm25_ceiling(
        &self,
        statistics: &dyn Bm25StatisticsProvider,
        query: &str,
    ) -> Result<f32> {
        if statistics.total_num_docs()? == 0 {
            return Ok(0.0);
        }
        let mut ceiling = 0.0;
        for term in self.query_terms(query) {
            ceiling += Bm25Weight::for_terms(statistics, &[term])?.max_score();
        }
        Ok(ceiling)
    }

    /// For each of `texts`, the byte range of its passage of at most `max_chars` characters that
    /// holds the most of `query`'s terms, rarer terms weighing more; None when no term occurs.
    /// tantivy's snippet generator does the choosing, with the index's own analyzer, so a
    /// passage matches the query the way the search did (stems, parts of identifiers).
    ///
    /// # Errors
    /// tantivy errors reading term statistics.
    pub fn passages(
        &self,
        statistics: &dyn Bm25StatisticsProvider,
        query: &str,
        texts: &[&str],
        max_chars: usize,
    ) -> Result<Vec<Option<Range<usize>>>> {
        // tantivy's own weighting (1 / (1 + document frequency)), but a term no chunk holds
        // still counts: the text may not be indexed (a brain entry, an empty home).
        let mut weights = BTreeMap::new();
        for term in self.query_terms(query) {
            if let Some(text) = term.value().as_str() {
                let weight = 1.0 / (1.0 + statistics.doc_freq(&term)? as f32);
                weights.insert(text.to_owned(), weight);
            }
        }
        let generator = SnippetGenerator::new(weights, analyzer(), self.fields.text, max_chars);
        Ok(texts
            .iter()
            .map(|text| {
                let snippet = generator.snippet(text);
                // The fragment is a copy of a slice of the text: find where.
                (!snippet.is_empty())
                    .then(|| text.find(snippet.fragment()))
                    .flatten()
                    .map(|start| start..start + snippet.fragment().len())
            })
            .collect())
    }
}
