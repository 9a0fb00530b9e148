//! The usearch side: an HNSW cosine index over embedding windows.
//!
//! A chunk may be embedded as several windows (long text, small model context). Window `w`
//! of chunk `key` is stored under `key << 8 | w`; a chunk scores as its best window.

use crate::error::{Error, Result};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use usearch::{Index, IndexOptions, MetricKind, ScalarKind};

/// Most windows one chunk may have (the low byte of a window key).
pub const MAX_WINDOWS: usize = 256;

/// Up to this many chunks allowed by a filter, a search scores them all exactly instead of
/// walking the graph (see [`VectorIndex::search`]).
pub const EXACT_FILTER_LIMIT: usize = 1024;

fn verr(e: impl std::fmt::Display) -> Error {
    Error::Vector(e.to_string())
}

/// How vectors are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantization {
    /// Half precision: near-lossless, 2 bytes per dimension.
    F16,
    /// 8-bit: 1 byte per dimension, small recall cost.
    I8,
    /// Full precision.
    F32,
}

impl Quantization {
    /// Parse `f16` | `i8` | `f32`.
    ///
    /// # Errors
    /// `InvalidArgument` for any other name.
    pub fn parse(name: &str) -> Result<Quantization> {
        match name {
            "f16" => Ok(Quantization::F16),
            "i8" => Ok(Quantization::I8),
            "f32" => Ok(Quantization::F32),
            other => Err(Error::InvalidArgument(format!(
                "unknown vector quantization {other:?}: use f16, i8 or f32"
            ))),
        }
    }

    fn scalar(self) -> ScalarKind {
        match self {
            Quantization::F16 => ScalarKind::F16,
            Quantization::I8 => ScalarKind::I8,
            Quantization::F32 => ScalarKind::F32,
        }
    }
}

/// HNSW index of window vectors.
pub struct VectorIndex {
    index: Index,
    dim: usize,
}

/// IEEE half-precision numbers (as stored bits) to single precision, exactly, in a loop the
/// compiler vectorizes: the exponent and mantissa move into place and one multiplication by
/// 2^112 re-biases the exponent (subnormals included); infinities and NaNs keep all-ones.
fn widen_f16(bits: &[i16], out: &mut [f32]) {
    const REBIAS: f32 = 5.192_297e33; // 2^112
    for (o, &h) in out.iter_mut().zip(bits) {
        let h = u32::from(u16::from_ne_bytes(h.to_ne_bytes()));
        let magnitude = (h & 0x7fff) << 13;
        let value = if magnitude >= 0x7c00 << 13 {
            f32::from_bits(magnitude | 0x7f80_0000)
        } else {
            f32::from_bits(magnitude) * REBIAS
        };
        *o = f32::from_bits(value.to_bits() | (h & 0x8000) << 16);
    }
}

/// Reads window vectors as single precision into one buffer. Half-precision vectors are read
/// as stored and widened here: usearch widens one number at a time, which cost more than the
/// similarities computed from them.
struct WindowReader<'a> {
    index: &'a Index,
    buffer: Vec<f32>,
    /// The stored bits, when the index holds half precision.
    bits: Option<Vec<i16>>,
}

impl<'a> WindowReader<'a> {
    fn new(vectors: &'a VectorIndex) -> Self {
        let half = vectors.index.scalar_kind() == ScalarKind::F16;
        WindowReader {
            index: &vectors.index,
            buffer: vec![0f32; vectors.dim],
            bits: half.then(|| vec![0i16; vectors.dim]),
        }
    }

    /// Window `key`'s vector; `Some(None)` when there is none, None on a usearch error.
    fn read(&mut self, key: u64) -> Option<Option<&[f32]>> {
        let found = match &mut self.bits {
            Some(bits) => {
                let found = self
                    .index
                    .get(key, usearch::f16::from_mut_i16s(bits))
                    .ok()?;
                if found > 0 {
                    widen_f16(bits, &mut self.buffer);
                }
                found
            }
            None => self.index.get(key, &mut self.buffer).ok()?,
        };
        Some((found > 0).then_some(self.buffer.as_slice()))
    }
}

/// The dot product of `a` and `b` and the squared norm of `a`, summed in eight lanes (a fixed
/// order, so the same on every machine) that the compiler turns into SIMD: a sequential sum
/// cannot be reordered and runs one element at a time.
fn dot_and_norm(a: &[f32], b: &[f32]) -> (f32, f32) {
    const LANES: usize = 8;
    let mut dot = [0f32; LANES];
    let mut norm = [0f32; LANES];
    let (a_body, a_tail) = a.split_at(a.len() - a.len() % LANES);
    let (b_body, b_tail) = b.split_at(a_body.len().min(b.len()));
    for (x, y) in a_body.chunks_exact(LANES).zip(b_body.chunks_exact(LANES)) {
        for i in 0..LANES {
            dot[i] += x[i] * y[i];
            norm[i] += x[i] * x[i];
        }
    }
    let mut dot: f32 = dot.iter().sum();
    let mut norm: f32 = norm.iter().sum();
    for (x, y) in a_tail.iter().zip(b_tail) {
        dot += x * y;
        norm += x * x;
    }
    (dot, norm)
}

impl VectorIndex {
    fn options(dim: usize, quantization: Quantization) -> IndexOptions {
        IndexOptions {
            dimensions: dim,
            metric: MetricKind::Cos,
            quantization: quantization.scalar(),
            connectivity: 16,
            // 64 keeps recall@10 high on sentence embeddings while inserting ~2x faster than 128.
            expansion_add: 64,
            expansion_search: 64,
            multi: false,
        }
    }

    /// An empty index.
    ///
    /// # Errors
    /// usearch errors.
    pub fn new(dim: usize, quantization: Quantization) -> Result<VectorIndex> {
        let index = Index::new(&Self::options(dim, quantization)).map_err(verr)?;
        Ok(VectorIndex { index, dim })
    }

    /// Load an index file; `view` memory-maps it read-only (fast open for readers).
    ///
    /// # Errors
    /// `Corrupt` when the file cannot be read back or its dimension differs.
    pub fn load(
        path: &Path,
        dim: usize,
        quantization: Quantization,
        view: bool,
    ) -> Result<VectorIndex> {
        let index = Index::new(&Self::options(dim, quantization)).map_err(verr)?;
        let p = path.to_string_lossy();
        let loaded = if view { index.view(&p) } else { index.load(&p) };
        loaded.map_err(|e| Error::corrupt(path, e))?;
        if index.dimensions() != dim {
            return Err(Error::corrupt(
                path,
                format_args!(
                    "vectors have {} dimensions, expected {dim}",
                    index.dimensions()
                ),
            ));
        }
        Ok(VectorIndex { index, dim })
    }

    /// Dimension of the vectors.
    #[must_use]
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of window vectors.
    #[must_use]
    pub fn len(&self) -> usize {
        self.index.size()
    }

    /// True when no vector is stored.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes used in memory by graph and vectors.
    #[must_use]
    pub fn memory_usage(&self) -> usize {
        self.index.memory_usage()
    }

    /// Whether chunk `key` has vectors.
    #[must_use]
    pub fn contains(&self, key: u64) -> bool {
        self.index.contains(key << 8)
    }

    /// Add the windows of one chunk (`windows.len()` must be a multiple of the dimension);
    /// any previous windows of the chunk are replaced.
    ///
    /// # Errors
    /// `InvalidArgument` on a shape error; usearch errors.
    pub fn add(&self, key: u64, windows: &[f32]) -> Result<()> {
        self.add_batch(&[(key, windows)])
    }

    /// Add many chunks at once, in key order, one at a time: the graph an HNSW insertion
    /// builds depends on the order, and a parallel insertion's order on thread timing, so
    /// two builds of the same sources would find different neighbours for borderline
    /// queries. (Insertion is a small part of a first index, next to embedding.)
    ///
    /// # Errors
    /// `InvalidArgument` on a shape error (nothing is added then); usearch errors.
    pub fn add_batch(&self, chunks: &[(u64, &[f32])]) -> Result<()> {
        let mut windows = 0;
        for (key, flat) in chunks {
            let n = flat.len() / self.dim.max(1);
            if n == 0 || n * self.dim != flat.len() || n > MAX_WINDOWS {
                return Err(Error::InvalidArgument(format!(
                    "chunk {key}: {} floats is not 1..={MAX_WINDOWS} windows of {} dimensions",
                    flat.len(),
                    self.dim
                )));
            }
            windows += n;
        }
        for (key, _) in chunks {
            self.remove(*key)?;
        }
        let threads = rayon::current_num_threads().max(1);
        let needed = self.index.size() + windows;
        if needed > self.index.capacity() {
            let capacity = needed.max(self.index.capacity() * 2).max(1024);
            self.index
                .reserve_capacity_and_threads(capacity, threads)
                .map_err(verr)?;
        }
        let mut ordered: Vec<&(u64, &[f32])> = chunks.iter().collect();
        ordered.sort_by_key(|(key, _)| *key);
        for (key, flat) in ordered {
            for (w, vector) in flat.chunks_exact(self.dim).enumerate() {
                self.index.add(key << 8 | w as u64, vector).map_err(verr)?;
            }
        }
        Ok(())
    }

    /// Remove every window of chunk `key`.
    ///
    /// # Errors
    /// usearch errors.
    pub fn remove(&self, key: u64) -> Result<()> {
        for w in 0..MAX_WINDOWS as u64 {
            let window_key = key << 8 | w;
            if !self.index.contains(window_key) {
                break;
            }
            self.index.remove(window_key).map_err(verr)?;
        }
        Ok(())
    }

    /// Nearest chunks to `query` as (chunk key, cosine similarity), best window per chunk,
    /// best first; `allowed` restricts the candidates.
    ///
    /// # Errors
    /// usearch errors; `InvalidArgument` for a wrong query dimension.
    pub fn search(
        &self,
        query: &[f32],
        limit: usize,
        allowed: Option<&HashSet<u64>>,
    ) -> Result<Vec<(u64, f32)>> {
        if query.len() != self.dim {
            return Err(Error::InvalidArgument(format!(
                "query vector has {} dimensions, the index has {}",
                query.len(),
                self.dim
            )));
        }
        if self.index.size() == 0 || limit == 0 {
            return Ok(Vec::new());
        }
        if let Some(set) = allowed.filter(|set| set.len() <= EXACT_FILTER_LIMIT) {
            // Few chunks pass the filter: score each exactly. The graph walk would visit
            // nearly every node to find them (a session filter cost ~40 ms at 37k chunks).
            // Exact scoring costs ~3 µs a chunk: past this many, the graph walk is cheaper.
            let keys: Vec<u64> = set.iter().copied().collect();
            let mut out: Vec<(u64, f32)> = keys
                .iter()
                .zip(self.similarities(&keys, query))
                .filter_map(|(&key, sim)| sim.map(|s| (key, s)))
                .collect();
            out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            out.truncate(limit);
            return Ok(out);
        }
        // Over-fetch: several windows of one chunk may crowd the top.
        let want = (limit * 2).min(self.index.size());
        let matches = match allowed {
            Some(set) => self
                .index
                .filtered_search(query, want, |k: u64| set.contains(&(k >> 8)))
                .map_err(verr)?,
            None => self.index.search(query, want).map_err(verr)?,
        };
        let mut best: HashMap<u64, f32> = HashMap::new();
        let mut order = Vec::new();
        for (k, d) in matches.keys.iter().zip(&matches.distances) {
            let chunk = k >> 8;
            let sim = 1.0 - d;
            match best.get_mut(&chunk) {
                Some(s) if *s >= sim => {}
                Some(s) => *s = sim,
                None => {
                    best.insert(chunk, sim);
                    order.push(chunk);
                }
            }
        }
        let mut out: Vec<(u64, f32)> = order.into_iter().map(|c| (c, best[&c])).collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1));
        out.truncate(limit);
        Ok(out)
    }

    /// Exact best-window cosine similarity of each chunk in `keys` to a normalised `query`
    /// (None for a chunk without vectors), with one scratch buffer for all of them.
    #[must_use]
    pub fn similarities(&self, keys: &[u64], query: &[f32]) -> Vec<Option<f32>> {
        let mut reader = WindowReader::new(self);
        keys.iter()
            .map(|&key| {
                let mut best: Option<f32> = None;
                for w in 0..MAX_WINDOWS as u64 {
                    // `get` answers "absent" itself: one key-table probe per window instead
                    // of a `contains` before it.
                    let Some(window) = reader.read(key << 8 | w)? else {
                        break;
                    };
                    let (dot, norm) = dot_and_norm(window, query);
                    let sim = dot / norm.sqrt().max(f32::EPSILON);
                    best = Some(best.map_or(sim, |b| b.max(sim)));
                }
                best
            })
            .collect()
    }

    /// Save durably: write a sibling temp file, check its size (usearch does not report a
    /// failed write, so a full disk shows as a short file), then rename it over `path`, so
    /// a reader never sees a half-written index and a failure leaves the previous file.
    ///
    /// # Errors
    /// I/O or usearch errors (the temp file is removed).
    pub fn save(&self, path: &Path) -> Result<()> {
        let tmp = crate::durable::tmp_path(path);
        if let Err(e) = self.index.save(&tmp.to_string_lossy()) {
            let _ = std::fs::remove_file(&tmp);
            return Err(verr(e));
        }
        crate::durable::commit_file(&tmp, path, self.index.serialized_length() as u64)
    }

    /// Check the file at `path` against its own header: it loads, its dimension is `dim`,
    /// its vector count is the header's and its size what that content takes.
    ///
    /// # Errors
    /// `Corrupt` saying what does not match.
    pub fn check_file(path: &Path, dim: usize, quantization: Quantization) -> Result<VectorIndex> {
        let corrupt = |reason: String| Error::corrupt(path, reason);
        let header = Index::metadata(&path.to_string_lossy())
            .map_err(|e| corrupt(format!("unreadable header: {e}")))?;
        let index = VectorIndex::load(path, dim, quantization, true)?;
        if header.count_present != index.len() as u64 {
            return Err(corrupt(format!(
                "header counts {} vectors, the file holds {}",
                header.count_present,
                index.len()
            )));
        }
        let on_disk = std::fs::metadata(path)?.len();
        let expected = index.index.serialized_length() as u64;
        if on_disk != expected {
            return Err(corrupt(format!(
                "{on_disk} bytes on disk, its content takes {expected}"
            )));
        }
        Ok(index)
    }

    /// How many window vectors chunk `key` has.
    #[must_use]
    pub fn window_count(&self, key: u64) -> usize {
        (0..MAX_WINDOWS as u64)
            .take_while(|w| self.index.contains(key << 8 | w))
            .count()
    }

    /// Every window vector of chunk `key`, concatenated (empty when it has none).
    #[must_use]
    pub fn windows(&self, key: u64) -> Vec<f32> {
        let mut out = Vec::new();
        let mut reader = WindowReader::new(self);
        for w in 0..MAX_WINDOWS as u64 {
            match reader.read(key << 8 | w) {
                Some(Some(window)) => out.extend_from_slice(window),
                _ => break,
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn half_precision_widens_exactly_as_usearch_does() {
        let idx = VectorIndex::new(8, Quantization::F16).unwrap();
        let v = [0.1f32, -0.75, 1e-6, -3e-5, 65504.0, 0.0, -0.0, 0.333];
        idx.add(7, &v).unwrap();
        let mut theirs = [0f32; 8];
        assert_eq!(idx.index.get(7 << 8, &mut theirs).unwrap(), 1);
        let mut bits = [0i16; 8];
        idx.index
            .get(7 << 8, usearch::f16::from_mut_i16s(&mut bits))
            .unwrap();
        let mut ours = [0f32; 8];
        widen_f16(&bits, &mut ours);
        assert_eq!(ours.map(f32::to_bits), theirs.map(f32::to_bits));
        let mut special = [0f32; 3];
        widen_f16(&[0x7c00, -1024, 0x7e00], &mut special);
        assert!(
            special[0] == f32::INFINITY && special[1] == f32::NEG_INFINITY && special[2].is_nan()
        );
    }

    #[test]
    fn lane_sums_agree_with_plain_sums_for_any_length() {
        for len in [0usize, 1, 7, 8, 13, 384] {
            #[allow(clippy::cast_precision_loss)]
            let a: Vec<f32> = (0..len)
                .map(|i| ((i * 37 % 11) as f32 - 5.0) / 7.0)
                .collect();
            #[allow(clippy::cast_precision_loss)]
            let b: Vec<f32> = (0..len)
                .map(|i| ((i * 53 % 13) as f32 - 6.0) / 9.0)
                .collect();
            let (dot, norm) = dot_and_norm(&a, &b);
            let plain_dot: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            let plain_norm: f32 = a.iter().map(|x| x * x).sum();
            assert!(
                (dot - plain_dot).abs() <= 1e-4 * plain_dot.abs().max(1.0),
                "{len}"
            );
            assert!(
                (norm - plain_norm).abs() <= 1e-4 * plain_norm.max(1.0),
                "{len}"
            );
        }
    }

    use super::*;

    fn unit(v: &[f32]) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    #[test]
    fn best_window_wins_and_remove_drops_all_windows() {
        let idx = VectorIndex::new(3, Quantization::F32).unwrap();
        let mut two = unit(&[1.0, 0.0, 0.0]);
        two.extend(unit(&[0.0, 1.0, 0.0]));
        idx.add(7, &two).unwrap();
        idx.add(9, &unit(&[0.0, 0.0, 1.0])).unwrap();
        let hits = idx.search(&unit(&[0.0, 1.0, 0.1]), 2, None).unwrap();
        assert_eq!(hits[0].0, 7);
        assert!(hits[0].1 > 0.99);
        let exact = idx.similarities(&[7], &unit(&[0.0, 1.0, 0.0]));
        assert!((exact[0].unwrap() - 1.0).abs() < 1e-5);
        let q = unit(&[0.3, 0.5, 0.2]);
        let many = idx.similarities(&[9, 42, 7], &q);
        // Chunk 9 is the third axis; chunk 7's best window is the second.
        assert!((many[0].unwrap() - q[2]).abs() < 1e-5);
        assert_eq!(many[1], None);
        assert!((many[2].unwrap() - q[1]).abs() < 1e-5);
        assert!(
            many[2].unwrap() > many[0].unwrap(),
            "chunk 7 scores as its best window"
        );
        idx.remove(7).unwrap();
        assert!(!idx.contains(7));
        assert_eq!(
            idx.search(&unit(&[0.0, 1.0, 0.0]), 5, None)
                .unwrap()
                .iter()
                .map(|h| h.0)
                .collect::<Vec<_>>(),
            vec![9]
        );
    }

    #[test]
    fn filtered_search_respects_allowed_set() {
        let idx = VectorIndex::new(2, Quantization::F16).unwrap();
        idx.add(1, &unit(&[1.0, 0.0])).unwrap();
        idx.add(2, &unit(&[0.9, 0.1])).unwrap();
        let allowed: HashSet<u64> = [2].into_iter().collect();
        let hits = idx.search(&unit(&[1.0, 0.0]), 5, Some(&allowed)).unwrap();
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![2]);
    }

    /// A small allowed set is scored exactly, a large one through the graph: both give the
    /// allowed chunks nearest the query, best first, ties by key, and nothing else.
    #[test]
    fn filtered_search_small_and_large_sets_agree_with_brute_force() {
        let idx = VectorIndex::new(4, Quantization::F32).unwrap();
        let vector = |i: u64| {
            let f = i as f32;
            unit(&[f.sin(), f.cos(), (0.3 * f).sin(), 1.0])
        };
        for key in 0..3000 {
            let mut windows = vector(key);
            if key % 3 == 0 {
                windows.extend(vector(key + 7000)); // a second window: the best one counts
            }
            idx.add(key, &windows).unwrap();
        }
        let query = unit(&[0.2, 0.9, -0.4, 0.5]);
        for allowed in [
            (0..3000).step_by(7).collect::<HashSet<u64>>(),
            (0..3000).filter(|k| k % 5 != 0).collect(),
        ] {
            assert_eq!(allowed.len() <= EXACT_FILTER_LIMIT, allowed.len() < 1000);
            let hits = idx.search(&query, 10, Some(&allowed)).unwrap();
            let mut keys: Vec<u64> = allowed.iter().copied().collect();
            keys.sort_unstable();
            let mut brute: Vec<(u64, f32)> = keys
                .iter()
                .zip(idx.similarities(&keys, &query))
                .map(|(k, s)| (*k, s.unwrap()))
                .collect();
            brute.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            assert!(hits.iter().all(|h| allowed.contains(&h.0)));
            assert_eq!(hits.len(), 10);
            // The graph is approximate; the exact path is exact.
            let found = hits
                .iter()
                .filter(|h| brute[..10].iter().any(|b| b.0 == h.0))
                .count();
            if allowed.len() <= EXACT_FILTER_LIMIT {
                assert_eq!(
                    hits.iter().map(|h| h.0).collect::<Vec<_>>(),
                    brute[..10].iter().map(|b| b.0).collect::<Vec<_>>()
                );
            } else {
                assert!(found >= 8, "graph search found {found} of the 10 nearest");
            }
        }
    }

    #[test]
    fn save_load_round_trip_and_dimension_check() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.usearch");
        let idx = VectorIndex::new(4, Quantization::F16).unwrap();
        idx.add(5, &unit(&[1.0, 2.0, 3.0, 4.0])).unwrap();
        idx.save(&path).unwrap();
        let back = VectorIndex::load(&path, 4, Quantization::F16, true).unwrap();
        assert!(back.contains(5));
        assert!(VectorIndex::load(&path, 8, Quantization::F16, false).is_err());
        assert!(idx.add(6, &[1.0, 2.0, 3.0]).is_err());
    }
}
