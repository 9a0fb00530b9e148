//! The usearch side: an HNSW cosine index over embedding windows.
//!
//! A chunk may be embedded as several windows (long text, small model context). Window `w`
//! of chunk `key` is stored under `key << 8 | w`; a chunk scores as its best window.
//!
//! An index may be split into parts, each its own graph and file, a chunk's windows in the
//! part its key picks: parts are built on a thread each and searched together. Within a part
//! windows go in one at a time in key order, so two builds give the same graphs however many
//! threads built them (a parallel insertion into one graph would depend on thread timing).
//! One part is the default: a local model on a CPU embeds far slower than one graph grows;
//! an embedder that keeps up with several (a GPU) asks for more.

use crate::error::{Error, Result};
use rayon::prelude::*;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
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

/// Most parts one index may be split into.
pub const MAX_PARTS: usize = 64;

/// HNSW index of window vectors, in one or more parts.
pub struct VectorIndex {
    parts: Vec<Index>,
    dim: usize,
}

/// The file of part `part` of the index saved at `path`: `path` itself for the first, so a
/// one-part index is one usearch file, as every home had before parts.
#[must_use]
pub fn part_path(path: &Path, part: usize) -> std::path::PathBuf {
    if part == 0 {
        return path.to_path_buf();
    }
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    let name = match path.extension() {
        Some(ext) => format!("{stem}.{part}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{part}"),
    };
    path.with_file_name(name)
}

fn check_parts(parts: usize) -> Result<usize> {
    if (1..=MAX_PARTS).contains(&parts) {
        Ok(parts)
    } else {
        Err(Error::InvalidArgument(format!(
            "{parts} vector index parts: use 1 to {MAX_PARTS}"
        )))
    }
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
    vectors: &'a VectorIndex,
    buffer: Vec<f32>,
    /// The stored bits, when the index holds half precision.
    bits: Option<Vec<i16>>,
}

impl<'a> WindowReader<'a> {
    fn new(vectors: &'a VectorIndex) -> Self {
        let half = vectors.parts[0].scalar_kind() == ScalarKind::F16;
        WindowReader {
            vectors,
            buffer: vec![0f32; vectors.dim],
            bits: half.then(|| vec![0i16; vectors.dim]),
        }
    }

    /// Window `key`'s vector; `Some(None)` when there is none, None on a usearch error.
    fn read(&mut self, key: u64) -> Option<Option<&[f32]>> {
        let index = self.vectors.part(key >> 8);
        let found = match &mut self.bits {
            Some(bits) => {
                let found = index.get(key, usearch::f16::from_mut_i16s(bits)).ok()?;
                if found > 0 {
                    widen_f16(bits, &mut self.buffer);
                }
                found
            }
            None => index.get(key, &mut self.buffer).ok()?,
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

    /// An empty index of `parts` parts (1 to [`MAX_PARTS`]).
    ///
    /// # Errors
    /// `InvalidArgument` for a part count out of range; usearch errors.
    pub fn new(dim: usize, quantization: Quantization, parts: usize) -> Result<VectorIndex> {
        let parts = (0..check_parts(parts)?)
            .map(|_| Index::new(&Self::options(dim, quantization)).map_err(verr))
            .collect::<Result<_>>()?;
        Ok(VectorIndex { parts, dim })
    }

    /// Load an index of `parts` parts saved at `path`; `view` memory-maps each part's file
    /// read-only (fast open for readers).
    ///
    /// # Errors
    /// `Corrupt` when a part's file is missing, cannot be read back or its dimension differs.
    pub fn load(
        path: &Path,
        dim: usize,
        quantization: Quantization,
        view: bool,
        parts: usize,
    ) -> Result<VectorIndex> {
        let parts = (0..check_parts(parts)?)
            .map(|part| {
                let path = part_path(path, part);
                let index = Index::new(&Self::options(dim, quantization)).map_err(verr)?;
                if part > 0 && !path.exists() {
                    return Err(Error::corrupt(
                        &path,
                        "this part of the vector index is missing",
                    ));
                }
                let p = path.to_string_lossy();
                let loaded = if view { index.view(&p) } else { index.load(&p) };
                loaded.map_err(|e| Error::corrupt(&path, e))?;
                if index.dimensions() != dim {
                    return Err(Error::corrupt(
                        &path,
                        format_args!(
                            "vectors have {} dimensions, expected {dim}",
                            index.dimensions()
                        ),
                    ));
                }
                Ok(index)
            })
            .collect::<Result<_>>()?;
        Ok(VectorIndex { parts, dim })
    }

    /// Dimension of the vectors.
    #[must_use]
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// How many parts (graphs) the index has.
    #[must_use]
    pub fn part_count(&self) -> usize {
        self.parts.len()
    }

    /// The part chunk `key` lives in: a fixed mix of the key, so the parts fill evenly
    /// whatever the keys look like and the choice never depends on what else is indexed.
    fn part_of(&self, key: u64) -> usize {
        let n = self.parts.len() as u64;
        if n == 1 {
            return 0;
        }
        #[allow(clippy::cast_possible_truncation)] // below n, which is at most MAX_PARTS
        let part = ((key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) % n) as usize;
        part
    }

    fn part(&self, key: u64) -> &Index {
        &self.parts[self.part_of(key)]
    }

    /// Number of window vectors.
    #[must_use]
    pub fn len(&self) -> usize {
        self.parts.iter().map(Index::size).sum()
    }

    /// True when no vector is stored.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes used in memory by graph and vectors.
    #[must_use]
    pub fn memory_usage(&self) -> usize {
        self.parts.iter().map(Index::memory_usage).sum()
    }

    /// Whether chunk `key` has vectors.
    #[must_use]
    pub fn contains(&self, key: u64) -> bool {
        self.part(key).contains(key << 8)
    }

    /// Add the windows of one chunk (`windows.len()` must be a multiple of the dimension);
    /// any previous windows of the chunk are replaced.
    ///
    /// # Errors
    /// `InvalidArgument` on a shape error; usearch errors.
    pub fn add(&self, key: u64, windows: &[f32]) -> Result<()> {
        self.add_batch(&[(key, windows)])
    }

    /// Add many chunks at once: each part takes its chunks in key order, one at a time, on a
    /// thread of its own. The graph an HNSW insertion builds depends on the order, and a
    /// parallel insertion's order on thread timing, so this way two builds of the same
    /// sources find the same neighbours for borderline queries.
    ///
    /// # Errors
    /// `InvalidArgument` on a shape error (nothing is added then); usearch errors.
    pub fn add_batch(&self, chunks: &[(u64, &[f32])]) -> Result<()> {
        for (key, flat) in chunks {
            let n = flat.len() / self.dim.max(1);
            if n == 0 || n * self.dim != flat.len() || n > MAX_WINDOWS {
                return Err(Error::InvalidArgument(format!(
                    "chunk {key}: {} floats is not 1..={MAX_WINDOWS} windows of {} dimensions",
                    flat.len(),
                    self.dim
                )));
            }
        }
        let mut by_part: Vec<Vec<(u64, &[f32])>> = vec![Vec::new(); self.parts.len()];
        for &(key, flat) in chunks {
            by_part[self.part_of(key)].push((key, flat));
        }
        self.parts
            .par_iter()
            .zip(by_part)
            .try_for_each(|(index, mut chunks)| self.add_to_part(index, &mut chunks))
    }

    fn add_to_part(&self, index: &Index, chunks: &mut [(u64, &[f32])]) -> Result<()> {
        if chunks.is_empty() {
            return Ok(());
        }
        for (key, _) in chunks.iter() {
            remove_from(index, *key)?;
        }
        let windows: usize = chunks.iter().map(|(_, flat)| flat.len() / self.dim).sum();
        let needed = index.size() + windows;
        if needed > index.capacity() {
            let capacity = needed.max(index.capacity() * 2).max(1024);
            // One insertion context: usearch draws each new node's level from the context the
            // insertion took, and takes its contexts in turn, so with one per core the graph
            // depended on how many cores the machine that built it had.
            index
                .reserve_capacity_and_threads(capacity, 1)
                .map_err(verr)?;
        }
        chunks.sort_by_key(|(key, _)| *key);
        for (key, flat) in chunks.iter() {
            for (w, vector) in flat.chunks_exact(self.dim).enumerate() {
                index.add(key << 8 | w as u64, vector).map_err(verr)?;
            }
        }
        Ok(())
    }

    /// Remove every window of chunk `key`.
    ///
    /// # Errors
    /// usearch errors.
    pub fn remove(&self, key: u64) -> Result<()> {
        remove_from(self.part(key), key)
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
        if self.is_empty() || limit == 0 {
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
        // Each part's best windows, over-fetched (several windows of one chunk may crowd the
        // top), in part order: the merge below then does not depend on thread timing.
        let per_part: Vec<usearch::ffi::Matches> = self
            .parts
            .par_iter()
            .map(|index| {
                let want = (limit * 2).min(index.size());
                if want == 0 {
                    return Ok(usearch::ffi::Matches {
                        keys: Vec::new(),
                        distances: Vec::new(),
                    });
                }
                match allowed {
                    Some(set) => {
                        index.filtered_search(query, want, |k: u64| set.contains(&(k >> 8)))
                    }
                    None => index.search(query, want),
                }
                .map_err(verr)
            })
            .collect::<Result<_>>()?;
        let mut best: HashMap<u64, f32> = HashMap::new();
        let mut order = Vec::new();
        for matches in &per_part {
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

    /// Save durably, each part ([`part_path`]) to a sibling temp file, its size checked
    /// (usearch does not report a failed write, so a full disk shows as a short file) and
    /// flushed, the parts on threads of their own (one after another, 8 parts of 702k windows
    /// took 0.48 s); then each renamed over its file, the first part last, so a reader never
    /// sees a half-written part and a failure leaves the previous files. A reader reloads when
    /// the first part's file changes, which is then after every other part is in place.
    ///
    /// # Errors
    /// I/O or usearch errors (the temp files are removed).
    pub fn save(&self, path: &Path) -> Result<()> {
        let written: Vec<Result<PathBuf>> = self
            .parts
            .par_iter()
            .enumerate()
            .map(|(part, index)| {
                let tmp = crate::durable::tmp_path(&part_path(path, part));
                if let Err(e) = index.save(&tmp.to_string_lossy()) {
                    let _ = std::fs::remove_file(&tmp);
                    return Err(verr(e));
                }
                crate::durable::sync_written(&tmp, index.serialized_length() as u64)?;
                Ok(tmp)
            })
            .collect();
        let mut tmps = Vec::with_capacity(written.len());
        let mut failed = None;
        for result in written {
            match result {
                Ok(tmp) => tmps.push(tmp),
                Err(e) => {
                    failed.get_or_insert(e);
                }
            }
        }
        if let Some(e) = failed {
            for tmp in &tmps {
                let _ = std::fs::remove_file(tmp);
            }
            return Err(e);
        }
        let mut renamed = Ok(());
        for (part, tmp) in tmps.iter().enumerate().rev() {
            if renamed.is_ok() {
                renamed = crate::durable::rename_into_place(tmp, &part_path(path, part));
            } else {
                let _ = std::fs::remove_file(tmp);
            }
        }
        renamed
    }

    /// Check the files of an index of `parts` parts saved at `path` against their own
    /// headers: each loads, its dimension is `dim`, its vector count is its header's and its
    /// size what that content takes.
    ///
    /// # Errors
    /// `Corrupt` saying which file does not match and how.
    pub fn check_file(
        path: &Path,
        dim: usize,
        quantization: Quantization,
        parts: usize,
    ) -> Result<VectorIndex> {
        let index = VectorIndex::load(path, dim, quantization, true, parts)?;
        for (part, graph) in index.parts.iter().enumerate() {
            let path = part_path(path, part);
            let corrupt = |reason: String| Error::corrupt(&path, reason);
            let header = Index::metadata(&path.to_string_lossy())
                .map_err(|e| corrupt(format!("unreadable header: {e}")))?;
            if header.count_present != graph.size() as u64 {
                return Err(corrupt(format!(
                    "header counts {} vectors, the file holds {}",
                    header.count_present,
                    graph.size()
                )));
            }
            let on_disk = std::fs::metadata(&path)?.len();
            let expected = graph.serialized_length() as u64;
            if on_disk != expected {
                return Err(corrupt(format!(
                    "{on_disk} bytes on disk, its content takes {expected}"
                )));
            }
        }
        Ok(index)
    }

    /// How many window vectors chunk `key` has.
    #[must_use]
    pub fn window_count(&self, key: u64) -> usize {
        let index = self.part(key);
        (0..MAX_WINDOWS as u64)
            .take_while(|w| index.contains(key << 8 | w))
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

/// Remove every window of chunk `key` from the graph `index`.
fn remove_from(index: &Index, key: u64) -> Result<()> {
    for w in 0..MAX_WINDOWS as u64 {
        let window_key = key << 8 | w;
        if !index.contains(window_key) {
            break;
        }
        index.remove(window_key).map_err(verr)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn half_precision_widens_exactly_as_usearch_does() {
        let idx = VectorIndex::new(8, Quantization::F16, 1).unwrap();
        let v = [0.1f32, -0.75, 1e-6, -3e-5, 65504.0, 0.0, -0.0, 0.333];
        idx.add(7, &v).unwrap();
        let mut theirs = [0f32; 8];
        assert_eq!(idx.parts[0].get(7 << 8, &mut theirs).unwrap(), 1);
        let mut bits = [0i16; 8];
        idx.parts[0]
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
        let idx = VectorIndex::new(3, Quantization::F32, 1).unwrap();
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
        let idx = VectorIndex::new(2, Quantization::F16, 1).unwrap();
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
        let idx = VectorIndex::new(4, Quantization::F32, 1).unwrap();
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
            let brute = exact_ranking(&idx, &keys, &query);
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

    /// `keys` by their exact similarity to `query`, best first, ties by key.
    fn exact_ranking(idx: &VectorIndex, keys: &[u64], query: &[f32]) -> Vec<(u64, f32)> {
        let mut ranked: Vec<(u64, f32)> = keys
            .iter()
            .zip(idx.similarities(keys, query))
            .map(|(k, s)| (*k, s.unwrap()))
            .collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked
    }

    fn clustered(key: u64) -> Vec<f32> {
        #[allow(clippy::cast_precision_loss)]
        let f = key as f32;
        unit(&[
            (0.7 * f).sin(),
            (1.3 * f).cos(),
            (0.11 * f).sin(),
            (key % 5) as f32 * 0.3,
            1.0,
            (0.05 * f).cos(),
        ])
    }

    fn build(parts: usize, threads: usize) -> VectorIndex {
        let idx = VectorIndex::new(6, Quantization::I8, parts).unwrap();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let vectors: Vec<(u64, Vec<f32>)> = (0..2000u64)
            .map(|key| {
                let mut windows = clustered(key);
                if key % 4 == 0 {
                    windows.extend(clustered(key + 9000));
                }
                (key * 7919 + 3, windows)
            })
            .collect();
        pool.install(|| {
            for batch in vectors.chunks(300) {
                let refs: Vec<(u64, &[f32])> =
                    batch.iter().map(|(k, v)| (*k, v.as_slice())).collect();
                idx.add_batch(&refs).unwrap();
            }
        });
        idx
    }

    /// Parts are built in parallel, each in key order: the files two builds save are the
    /// same bytes whether one thread or several built them.
    #[test]
    fn parts_build_the_same_graphs_on_any_number_of_threads() {
        let dir = tempfile::tempdir().unwrap();
        let one = dir.path().join("one.usearch");
        let many = dir.path().join("many.usearch");
        let a = build(4, 1);
        let b = build(4, 4);
        a.save(&one).unwrap();
        b.save(&many).unwrap();
        assert_eq!(a.len(), 2500);
        for part in 0..4 {
            let bytes = std::fs::read(part_path(&one, part)).unwrap();
            assert!(
                bytes == std::fs::read(part_path(&many, part)).unwrap(),
                "part {part}"
            );
            assert!(a.parts[part].size() > 400, "the keys spread over the parts");
        }
        for q in 0..50 {
            let query = clustered(q * 37 + 11);
            assert_eq!(
                a.search(&query, 10, None).unwrap(),
                b.search(&query, 10, None).unwrap()
            );
        }
    }

    /// Searching the parts together finds what an exact scan finds, as one graph does.
    #[test]
    fn parts_search_together_like_one_graph() {
        let one = build(1, 2);
        let eight = build(8, 2);
        let keys: Vec<u64> = (0..2000u64).map(|key| key * 7919 + 3).collect();
        let (mut found_one, mut found_eight) = (0, 0);
        for q in 0..40 {
            let query = clustered(q * 53 + 5);
            let exact = exact_ranking(&one, &keys, &query);
            let top: HashSet<u64> = exact[..10].iter().map(|e| e.0).collect();
            let hits = |idx: &VectorIndex| {
                let hits = idx.search(&query, 10, None).unwrap();
                assert_eq!(hits.len(), 10);
                hits.iter().filter(|h| top.contains(&h.0)).count()
            };
            found_one += hits(&one);
            found_eight += hits(&eight);
            assert_eq!(
                eight.similarities(&keys[..20], &query),
                one.similarities(&keys[..20], &query)
            );
        }
        assert!(found_one >= 380, "one graph found {found_one} of 400");
        assert!(found_eight >= 380, "eight parts found {found_eight} of 400");
    }

    #[test]
    fn parts_round_trip_remove_and_a_missing_part_is_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vectors.usearch");
        assert_eq!(part_path(&path, 2), dir.path().join("vectors.2.usearch"));
        let idx = build(3, 2);
        idx.remove(3).unwrap();
        assert!(!idx.contains(3) && idx.contains(7919 + 3));
        idx.save(&path).unwrap();
        let back = VectorIndex::check_file(&path, 6, Quantization::I8, 3).unwrap();
        assert_eq!((back.len(), back.part_count()), (idx.len(), 3));
        assert_eq!(back.windows(4 * 7919 + 3).len(), 12, "two windows");
        assert!(!back.contains(3));
        assert!(VectorIndex::new(6, Quantization::I8, 0).is_err());
        assert!(VectorIndex::new(6, Quantization::I8, MAX_PARTS + 1).is_err());
        std::fs::remove_file(part_path(&path, 2)).unwrap();
        let err = VectorIndex::load(&path, 6, Quantization::I8, true, 3)
            .err()
            .unwrap();
        assert!(err.to_string().contains("vectors.2.usearch"), "{err}");
    }

    #[test]
    fn save_load_round_trip_and_dimension_check() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.usearch");
        let idx = VectorIndex::new(4, Quantization::F16, 1).unwrap();
        idx.add(5, &unit(&[1.0, 2.0, 3.0, 4.0])).unwrap();
        idx.save(&path).unwrap();
        let back = VectorIndex::load(&path, 4, Quantization::F16, true, 1).unwrap();
        assert!(back.contains(5));
        assert!(VectorIndex::load(&path, 8, Quantization::F16, false, 1).is_err());
        assert!(idx.add(6, &[1.0, 2.0, 3.0]).is_err());
    }

    #[test]
    fn a_part_that_cannot_be_saved_leaves_every_saved_part_and_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.usearch");
        let idx = VectorIndex::new(4, Quantization::F16, 3).unwrap();
        for key in 0..30 {
            #[allow(clippy::cast_precision_loss)] // small keys
            idx.add(key, &unit(&[1.0, key as f32, 3.0, 4.0])).unwrap();
        }
        idx.save(&path).unwrap();
        let before: Vec<Vec<u8>> = (0..3)
            .map(|p| std::fs::read(part_path(&path, p)).unwrap())
            .collect();
        idx.add(99, &unit(&[4.0, 3.0, 2.0, 1.0])).unwrap();
        // Part 1's temp file cannot be written (a directory stands there); the others can.
        std::fs::create_dir(crate::durable::tmp_path(&part_path(&path, 1))).unwrap();
        assert!(idx.save(&path).is_err());
        for (p, bytes) in before.iter().enumerate() {
            assert_eq!(
                &std::fs::read(part_path(&path, p)).unwrap(),
                bytes,
                "part {p} changed"
            );
        }
        let temps: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .filter(|e| e.path().is_file() && e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(temps.is_empty(), "{temps:?}");
    }
}
