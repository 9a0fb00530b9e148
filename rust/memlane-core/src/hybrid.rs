//! Merging BM25 and vector candidates into one ranking.

use std::collections::HashMap;

/// How the two rankings are combined.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fusion {
    /// `vector·sim + bm25·(score / best score)`; default 0.6 / 0.4.
    Weighted {
        /// Weight of the cosine similarity.
        vector: f32,
        /// Weight of the max-normalised BM25 score.
        bm25: f32,
    },
    /// Reciprocal-rank fusion `Σ 1 / (k + rank)`, normalised so a double first place is 1.
    Rrf {
        /// The RRF damping constant (60 in the literature).
        k: f32,
    },
}

impl Default for Fusion {
    fn default() -> Self {
        Fusion::Weighted {
            vector: 0.6,
            bm25: 0.4,
        }
    }
}

/// Default relevance floor: when no candidate's [`relevance`] reaches it, the answer is empty.
///
/// Chosen on LoCoMo dev (conversations 0–4) as the highest floor that costs at most 0.3 points
/// of session or turn evidence recall@10 (measured: −0.2 / −0.1), while everyday off-topic
/// questions asked of the same archive clear it as rarely as possible (see benches/README.md,
/// *Relevance floor*).
pub const DEFAULT_THRESHOLD: f32 = 0.225;

/// Weight of the cosine in [`relevance`] (the rest goes to BM25 coverage): the default fusion's
/// share, which also separated answerable from off-topic questions best on LoCoMo dev (0.4–1.0
/// measured).
pub const RELEVANCE_VECTOR_WEIGHT: f32 = 0.6;

/// Without vectors, coverage times this is the relevance, so that the same floor costs
/// keyword-only search the same evidence recall on LoCoMo dev as hybrid search: BM25-only, a
/// floor on coverage of 0.05 costs 0.23 / 0.10 points (session / turn), 0.06 costs 0.28 / 0.15.
pub const KEYWORD_ONLY_SCALE: f32 = DEFAULT_THRESHOLD / 0.05;

/// How relevant a candidate is, on an absolute scale that means the same from query to query
/// (unlike the fused score, whose BM25 part is relative to the query's best hit).
///
/// With vectors: `0.6 · cosine + 0.4 · coverage` ([`RELEVANCE_VECTOR_WEIGHT`]), the cosine
/// clamped to [0, 1] and 0 for a chunk without a vector; keyword-only: coverage scaled by
/// [`KEYWORD_ONLY_SCALE`], at most 1. `coverage` is the BM25 score over the query's ceiling
/// ([`Fused::coverage`]), 0 when the chunk is not a keyword match.
#[must_use]
pub fn relevance(coverage: Option<f32>, cosine: Option<f32>, have_vectors: bool) -> f32 {
    let coverage = coverage.unwrap_or(0.0);
    if have_vectors {
        RELEVANCE_VECTOR_WEIGHT * cosine.unwrap_or(0.0).clamp(0.0, 1.0)
            + (1.0 - RELEVANCE_VECTOR_WEIGHT) * coverage
    } else {
        (coverage * KEYWORD_ONLY_SCALE).min(1.0)
    }
}

/// One fused candidate with its score breakdown.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fused {
    /// Chunk key.
    pub key: u64,
    /// Final score used for ranking.
    pub score: f32,
    /// BM25 normalised to the best BM25 score of the query (None: not a keyword match).
    pub bm25: Option<f32>,
    /// Cosine similarity (None: no vector for the chunk or no query vector).
    pub vector: Option<f32>,
    /// BM25 score over the most the query could score ([`crate::lexical::Lexical::bm25_ceiling`]):
    /// the share of the query's informative terms the chunk holds, on an absolute scale
    /// (None: not a keyword match).
    pub coverage: Option<f32>,
    /// [`relevance`]: the absolute scale the floor is read on.
    pub relevance: f32,
}

/// Fuse keyword and vector candidates.
///
/// `bm25` and `vector` are best-first lists; `bm25_ceiling` is the most the query can score in
/// BM25 (0: unknown, no coverage); `extra_sims` holds exact similarities of keyword
/// candidates that the ANN list missed. When `have_vectors` is false (no vectors yet, or no
/// query vector) BM25 answers alone. If no candidate's [`relevance`] reaches `threshold`, the
/// result is empty: no recall beats wrong recall. Otherwise every candidate stays, ranked by
/// its fused score (each carries its relevance): a floor on each hit instead cost 2–4 points of
/// evidence recall on LoCoMo dev at the same off-topic rate. Equal scores rank by chunk key.
#[must_use]
pub fn fuse(
    bm25: &[(u64, f32)],
    bm25_ceiling: f32,
    vector: &[(u64, f32)],
    extra_sims: &HashMap<u64, f32>,
    have_vectors: bool,
    fusion: Fusion,
    threshold: f32,
) -> Vec<Fused> {
    let best_bm25 = bm25.iter().map(|h| h.1).fold(0f32, f32::max);
    let mut by_key: HashMap<u64, Fused> = HashMap::new();
    let mut order: Vec<u64> = Vec::new();
    for &(key, score) in bm25 {
        let norm = if best_bm25 > 0.0 {
            score / best_bm25
        } else {
            0.0
        };
        order.push(key);
        by_key.insert(
            key,
            Fused {
                key,
                score: 0.0,
                bm25: Some(norm),
                vector: extra_sims.get(&key).copied(),
                coverage: (bm25_ceiling > 0.0).then(|| (score / bm25_ceiling).min(1.0)),
                relevance: 0.0,
            },
        );
    }
    for &(key, sim) in vector {
        by_key
            .entry(key)
            .and_modify(|f| f.vector = Some(sim))
            .or_insert_with(|| {
                order.push(key);
                Fused {
                    key,
                    score: 0.0,
                    bm25: None,
                    vector: Some(sim),
                    coverage: None,
                    relevance: 0.0,
                }
            });
    }
    let (wv, wb) = match fusion {
        Fusion::Weighted { vector, bm25 } => (vector, bm25),
        Fusion::Rrf { .. } => (0.6, 0.4),
    };
    let weighted = |f: &Fused| -> f32 {
        let b = f.bm25.unwrap_or(0.0);
        if have_vectors {
            wv * f.vector.unwrap_or(0.0).clamp(0.0, 1.0) + wb * b
        } else {
            b
        }
    };
    let mut fused: Vec<Fused> = order.iter().map(|k| by_key[k]).collect();
    for f in &mut fused {
        f.relevance = relevance(f.coverage, f.vector, have_vectors);
    }
    if fused.iter().all(|f| f.relevance < threshold) {
        return Vec::new();
    }
    match fusion {
        Fusion::Weighted { .. } => {
            for f in &mut fused {
                f.score = weighted(f);
            }
        }
        Fusion::Rrf { k } => {
            let rank_of = |list: &[(u64, f32)]| -> HashMap<u64, usize> {
                list.iter().enumerate().map(|(i, h)| (h.0, i + 1)).collect()
            };
            let (rb, rv) = (rank_of(bm25), rank_of(vector));
            let lists = if have_vectors { 2.0 } else { 1.0 };
            for f in &mut fused {
                let term = |r: Option<&usize>| r.map_or(0.0, |&r| 1.0 / (k + r as f32));
                f.score = (term(rb.get(&f.key)) + term(rv.get(&f.key))) * (k + 1.0) / lists;
            }
        }
    }
    // Equal scores in chunk-key order: the lists' own order of ties depends on how documents
    // fell into segments and the HNSW graph was built, so two builds of one archive would differ.
    fused.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.key.cmp(&b.key)));
    fused
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Default weighted fusion without extra similarities.
    fn fused(
        bm25: &[(u64, f32)],
        ceiling: f32,
        vector: &[(u64, f32)],
        have_vectors: bool,
        threshold: f32,
    ) -> Vec<Fused> {
        fuse(
            bm25,
            ceiling,
            vector,
            &HashMap::new(),
            have_vectors,
            Fusion::default(),
            threshold,
        )
    }

    #[test]
    fn weighted_fusion_combines_and_breaks_down() {
        let bm25 = [(1, 10.0), (2, 5.0)];
        let vector = [(2, 0.9), (3, 0.8)];
        let extra = HashMap::from([(1, 0.1)]);
        let out = fuse(&bm25, 20.0, &vector, &extra, true, Fusion::default(), 0.2);
        let keys: Vec<u64> = out.iter().map(|f| f.key).collect();
        assert_eq!(keys, vec![2, 3, 1]);
        assert!((out[0].score - (0.6 * 0.9 + 0.4 * 0.5)).abs() < 1e-6);
        assert_eq!(out[1].bm25, None);
        assert_eq!(out[2].vector, Some(0.1));
    }

    #[test]
    fn everything_below_threshold_returns_nothing() {
        let out = fused(&[], 10.0, &[(1, 0.1), (2, 0.05)], true, 0.2);
        assert!(out.is_empty());
        let out = fused(&[], 10.0, &[(1, 0.4)], true, 0.2);
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn bm25_alone_when_no_vectors() {
        let out = fused(&[(1, 3.0), (2, 1.5)], 10.0, &[], false, 0.2);
        assert_eq!(
            out.iter().map(|f| f.score).collect::<Vec<_>>(),
            vec![1.0, 0.5]
        );
    }

    #[test]
    fn rrf_ranks_by_reciprocal_rank() {
        let out = fuse(
            &[(1, 9.0), (2, 8.0)],
            10.0,
            &[(2, 0.9), (1, 0.2)],
            &HashMap::new(),
            true,
            Fusion::Rrf { k: 60.0 },
            0.2,
        );
        assert_eq!(out[0].score, out[1].score);
        let out = fuse(
            &[(1, 9.0), (2, 8.0)],
            10.0,
            &[(2, 0.9)],
            &HashMap::new(),
            true,
            Fusion::Rrf { k: 60.0 },
            0.2,
        );
        assert_eq!(out[0].key, 2);
    }

    #[test]
    fn equal_scores_rank_by_chunk_key_whatever_the_lists_order() {
        // Three chunks with the same BM25 score and no vectors, listed in two orders.
        for bm25 in [
            [(9, 2.0), (4, 2.0), (7, 2.0)],
            [(7, 2.0), (9, 2.0), (4, 2.0)],
        ] {
            let out = fused(&bm25, 5.0, &[], false, 0.2);
            assert_eq!(out.iter().map(|f| f.key).collect::<Vec<_>>(), vec![4, 7, 9]);
        }
        let vector = [(8, 0.5), (3, 0.5)];
        let out = fused(&[], 0.0, &vector, true, 0.2);
        assert_eq!(out.iter().map(|f| f.key).collect::<Vec<_>>(), vec![3, 8]);
    }

    #[test]
    fn relevance_is_absolute_where_the_fused_bm25_is_relative() {
        // A query's best keyword hit always has bm25 1.0, however little of the query it holds;
        // its coverage (score over the query's ceiling) says how much that is.
        let weak = fused(&[(1, 0.5)], 20.0, &[(1, 0.1)], true, DEFAULT_THRESHOLD);
        assert!(weak.is_empty(), "an off-topic best hit clears nothing");
        let out = fused(&[(1, 0.5)], 20.0, &[(1, 0.1)], true, 0.0);
        assert_eq!(out[0].bm25, Some(1.0));
        assert!((out[0].coverage.unwrap() - 0.025).abs() < 1e-6);
        assert!((out[0].relevance - (0.6 * 0.1 + 0.4 * 0.025)).abs() < 1e-6);
        // The same chunk keeps its relevance next to a stronger hit; only its fused bm25 moves.
        let out = fused(&[(2, 10.0), (1, 0.5)], 20.0, &[(1, 0.1)], true, 0.0);
        let one = out.iter().find(|f| f.key == 1).unwrap();
        assert!((one.relevance - (0.6 * 0.1 + 0.4 * 0.025)).abs() < 1e-6);
        assert!((one.bm25.unwrap() - 0.05).abs() < 1e-6);
    }

    #[test]
    fn one_relevant_candidate_keeps_the_whole_ranking() {
        let out = fused(
            &[(1, 8.0), (2, 0.5)],
            20.0,
            &[(1, 0.5), (3, 0.05)],
            true,
            DEFAULT_THRESHOLD,
        );
        assert_eq!(out.iter().map(|f| f.key).collect::<Vec<_>>(), vec![1, 3, 2]);
        assert!(out[0].relevance >= DEFAULT_THRESHOLD);
        assert!(out[1..].iter().all(|f| f.relevance < DEFAULT_THRESHOLD));
    }

    #[test]
    fn relevance_weighs_its_evidence() {
        assert!((relevance(Some(0.5), Some(0.5), true) - 0.5).abs() < 1e-6);
        assert!(
            (relevance(None, Some(-0.3), true)).abs() < 1e-6,
            "negative cosines count as 0"
        );
        assert!(
            (relevance(Some(0.5), None, true) - 0.2).abs() < 1e-6,
            "a chunk not embedded yet"
        );
        assert!((relevance(Some(0.05), None, false) - DEFAULT_THRESHOLD).abs() < 1e-6);
        assert!((relevance(Some(0.9), None, false) - 1.0).abs() < 1e-6);
    }
}
