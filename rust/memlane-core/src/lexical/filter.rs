//! Narrowing a search: filters by session, source, time, project and branch, and the chunk keys
//! a filter allows (what the vector search is restricted to); counts per project.

use super::document::TRANSCRIPT;
use super::Lexical;
use crate::error::Result;
use std::collections::{BTreeMap, HashSet};
use std::ops::Bound;
use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::Column;
use tantivy::query::{BooleanQuery, EmptyQuery, Occur, Query, RangeQuery, TermQuery};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocId, DocSet, Score, Searcher, SegmentOrdinal, SegmentReader, Term, TERMINATED};

/// Filters applied before ranking.
#[derive(Debug, Clone, Default)]
pub struct Filters {
    /// Keep only these sources.
    pub sources: Vec<String>,
    /// Keep only this session.
    pub session_id: Option<String>,
    /// Keep chunks whose first timestamp is ≥ this (ms).
    pub since: Option<i64>,
    /// Keep chunks whose first timestamp is < this (ms).
    pub until: Option<i64>,
    /// Keep only chunks of these projects (any of them; project keys).
    pub projects: Vec<String>,
    /// Project keys whose notes (every chunk but transcripts) a project filter keeps too: the
    /// user's own libraries, read in every project (see [`crate::project::is_user_library`]).
    /// Set alone, it keeps those notes only.
    pub libraries: Vec<String>,
    /// Keep only chunks written on this git branch.
    pub branch: Option<String>,
}

impl Filters {
    /// True when no filter is set.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
            && self.session_id.is_none()
            && self.since.is_none()
            && self.until.is_none()
            && self.projects.is_empty()
            && self.libraries.is_empty()
            && self.branch.is_none()
    }
}

/// Documents whose `field` holds one of `values` whole; none when the home's schema lacks
/// the field (it predates it: every chunk reads as without a value).
fn any_term(field: Option<Field>, values: &[String]) -> Box<dyn Query> {
    let Some(field) = field else {
        return Box::new(EmptyQuery);
    };
    let any: Vec<(Occur, Box<dyn Query>)> = values
        .iter()
        .map(|v| {
            let q: Box<dyn Query> = Box::new(TermQuery::new(
                Term::from_field_text(field, v),
                IndexRecordOption::Basic,
            ));
            (Occur::Should, q)
        })
        .collect();
    Box::new(BooleanQuery::new(any))
}

/// The chunk key (`key` fast field) of every matching live document, unscored: what a
/// filter allows, gathered without a set of document addresses in between.
struct FilteredKeys;

struct SegmentKeys {
    column: Column<u64>,
    keys: Vec<u64>,
}

impl Collector for FilteredKeys {
    type Fruit = Vec<u64>;
    type Child = SegmentKeys;

    fn for_segment(
        &self,
        _: SegmentOrdinal,
        segment: &SegmentReader,
    ) -> tantivy::Result<SegmentKeys> {
        Ok(SegmentKeys {
            column: segment.fast_fields().u64("key")?,
            keys: Vec::new(),
        })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(&self, fruits: Vec<Vec<u64>>) -> tantivy::Result<Vec<u64>> {
        Ok(fruits.concat())
    }
}

impl SegmentCollector for SegmentKeys {
    type Fruit = Vec<u64>;

    fn collect(&mut self, doc: DocId, _: Score) {
        self.keys.extend(self.column.first(doc));
    }

    fn harvest(self) -> Vec<u64> {
        self.keys
    }
}

impl Lexical {
    /// Every project key with its number of live chunks, by key (empty when the home
    /// predates projects).
    ///
    /// # Errors
    /// tantivy errors.
    pub fn projects(&self) -> Result<BTreeMap<String, u64>> {
        let mut out = BTreeMap::new();
        let Some(field) = self.fields.project else {
            return Ok(out);
        };
        let searcher = self.searcher();
        for segment in searcher.segment_readers() {
            let inverted = segment.inverted_index(field)?;
            let mut terms = inverted.terms().stream()?;
            while terms.advance() {
                let project = String::from_utf8_lossy(terms.key()).into_owned();
                let mut postings = inverted
                    .read_postings_from_terminfo(terms.value(), IndexRecordOption::Basic)?;
                let mut live = 0u64;
                let mut doc = postings.doc();
                while doc != TERMINATED {
                    live += u64::from(segment.alive_bitset().is_none_or(|a| a.is_alive(doc)));
                    doc = postings.advance();
                }
                if live > 0 {
                    *out.entry(project).or_insert(0) += live;
                }
            }
        }
        Ok(out)
    }

    /// Every project key holding live notes (chunks that are not transcripts), with their
    /// number: the library folders, and the repositories holding notes (empty when the home
    /// predates projects).
    ///
    /// # Errors
    /// tantivy errors.
    pub fn note_projects(&self) -> Result<BTreeMap<String, u64>> {
        let mut out = BTreeMap::new();
        let Some(field) = self.fields.project else {
            return Ok(out);
        };
        let transcript = Term::from_field_text(self.fields.source, TRANSCRIPT);
        let searcher = self.searcher();
        for segment in searcher.segment_readers() {
            // The transcripts' documents, to leave out of each project's count.
            let mut is_transcript = vec![false; segment.max_doc() as usize];
            let sources = segment.inverted_index(self.fields.source)?;
            if let Some(mut postings) =
                sources.read_postings(&transcript, IndexRecordOption::Basic)?
            {
                let mut doc = postings.doc();
                while doc != TERMINATED {
                    is_transcript[doc as usize] = true;
                    doc = postings.advance();
                }
            }
            let inverted = segment.inverted_index(field)?;
            let mut terms = inverted.terms().stream()?;
            while terms.advance() {
                let mut postings = inverted
                    .read_postings_from_terminfo(terms.value(), IndexRecordOption::Basic)?;
                let mut notes = 0u64;
                let mut doc = postings.doc();
                while doc != TERMINATED {
                    let alive = segment.alive_bitset().is_none_or(|a| a.is_alive(doc));
                    notes += u64::from(alive && !is_transcript[doc as usize]);
                    doc = postings.advance();
                }
                if notes > 0 {
                    let project = String::from_utf8_lossy(terms.key()).into_owned();
                    *out.entry(project).or_insert(0) += notes;
                }
            }
        }
        Ok(out)
    }

    /// The project clause of `filters`: a chunk of one of `projects`, or a note of one of
    /// `libraries`.
    fn scope_clause(&self, filters: &Filters) -> Box<dyn Query> {
        let f = self.fields;
        let mut scope: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        if !filters.projects.is_empty() {
            scope.push((Occur::Should, any_term(f.project, &filters.projects)));
        }
        if !filters.libraries.is_empty() {
            let transcript: Box<dyn Query> = Box::new(TermQuery::new(
                Term::from_field_text(f.source, TRANSCRIPT),
                IndexRecordOption::Basic,
            ));
            let notes = BooleanQuery::new(vec![
                (Occur::Must, any_term(f.project, &filters.libraries)),
                (Occur::MustNot, transcript),
            ]);
            scope.push((Occur::Should, Box::new(notes)));
        }
        Box::new(BooleanQuery::new(scope))
    }

    pub(super) fn filter_clauses(&self, filters: &Filters) -> Vec<(Occur, Box<dyn Query>)> {
        let f = self.fields;
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        if !filters.sources.is_empty() {
            clauses.push((Occur::Must, any_term(Some(f.source), &filters.sources)));
        }
        if let Some(session) = &filters.session_id {
            clauses.push((
                Occur::Must,
                Box::new(TermQuery::new(
                    Term::from_field_text(f.session_id, session),
                    IndexRecordOption::Basic,
                )),
            ));
        }
        if !filters.projects.is_empty() || !filters.libraries.is_empty() {
            clauses.push((Occur::Must, self.scope_clause(filters)));
        }
        if let Some(branch) = &filters.branch {
            clauses.push((
                Occur::Must,
                any_term(f.branch, std::slice::from_ref(branch)),
            ));
        }
        if filters.since.is_some() || filters.until.is_some() {
            let lower = filters.since.map_or(Bound::Unbounded, |t| {
                Bound::Included(Term::from_field_i64(f.ts, t))
            });
            let upper = filters.until.map_or(Bound::Unbounded, |t| {
                Bound::Excluded(Term::from_field_i64(f.ts, t))
            });
            clauses.push((Occur::Must, Box::new(RangeQuery::new(lower, upper))));
        }
        clauses
    }

    /// Keys of every chunk that passes `filters` (used to restrict the vector search).
    ///
    /// # Errors
    /// tantivy errors.
    pub fn filtered_keys(&self, searcher: &Searcher, filters: &Filters) -> Result<HashSet<u64>> {
        let query = BooleanQuery::new(self.filter_clauses(filters));
        Ok(searcher
            .search(&query, &FilteredKeys)?
            .into_iter()
            .collect())
    }
}
