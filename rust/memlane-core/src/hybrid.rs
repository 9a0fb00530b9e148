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

/// Default "nothing relevant" threshold on the weighted score.
pub const DEFAULT_THRESHOLD: f32 = 0.2;

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
}

/// Fuse keyword and vector candidates.
///
/// `bm25` and `vector` are best-first lists; `extra_sims` holds exact similarities of keyword
/// candidates that the ANN list missed. When `have_vectors` is false (no vectors yet, or no
/// query vector) BM25 answers alone. If every weighted score is below `threshold`, the result
/// is empty: no recall beats wrong recall.
#[must_use]
pub fn fuse(
    bm25: &[(u64, f32)],
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
    if fused.iter().all(|f| weighted(f) < threshold) {
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
    // Stable sort keeps BM25 order for ties.
    fused.sort_by(|a, b| b.score.total_cmp(&a.score));
    fused
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weighted_fusion_combines_and_breaks_down() {
        let bm25 = [(1, 10.0), (2, 5.0)];
        let vector = [(2, 0.9), (3, 0.8)];
        let extra = HashMap::from([(1, 0.1)]);
        let out = fuse(&bm25, &vector, &extra, true, Fusion::default(), 0.2);
        let keys: Vec<u64> = out.iter().map(|f| f.key).collect();
        assert_eq!(keys, vec![2, 3, 1]);
        assert!((out[0].score - (0.6 * 0.9 + 0.4 * 0.5)).abs() < 1e-6);
        assert_eq!(out[1].bm25, None);
        assert_eq!(out[2].vector, Some(0.1));
    }

    #[test]
    fn everything_below_threshold_returns_nothing() {
        let out = fuse(
            &[],
            &[(1, 0.1), (2, 0.05)],
            &HashMap::new(),
            true,
            Fusion::default(),
            0.2,
        );
        assert!(out.is_empty());
        let out = fuse(
            &[],
            &[(1, 0.4)],
            &HashMap::new(),
            true,
            Fusion::default(),
            0.2,
        );
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn bm25_alone_when_no_vectors() {
        let out = fuse(
            &[(1, 3.0), (2, 1.5)],
            &[],
            &HashMap::new(),
            false,
            Fusion::default(),
            0.2,
        );
        assert_eq!(
            out.iter().map(|f| f.score).collect::<Vec<_>>(),
            vec![1.0, 0.5]
        );
    }

    #[test]
    fn rrf_ranks_by_reciprocal_rank() {
        let out = fuse(
            &[(1, 9.0), (2, 8.0)],
            &[(2, 0.9), (1, 0.2)],
            &HashMap::new(),
            true,
            Fusion::Rrf { k: 60.0 },
            0.2,
        );
        assert_eq!(out[0].score, out[1].score);
        let out = fuse(
            &[(1, 9.0), (2, 8.0)],
            &[(2, 0.9)],
            &HashMap::new(),
            true,
            Fusion::Rrf { k: 60.0 },
            0.2,
        );
        assert_eq!(out[0].key, 2);
    }
}
