//! Window-key layouts of the vector file: new homes pack the window number in the high byte,
//! homes whose vectors predate that keep the low-byte layout, and both search the same.

use std::path::Path;

use memlane_core::hybrid::Fusion;
use memlane_core::lexical::Filters;
use memlane_core::store::{SearchRequest, Store, Writer};
use memlane_core::vector::{Quantization, VectorIndex, WindowKeys};

const DIM: usize = 8;

/// Three generic sessions, one short exchange each: three chunks.
fn write_transcripts(dir: &Path, names: &[&str]) {
    for name in names {
        let lines = [
            format!(
                r#"{{"session_id":"{name}","role":"user","content":"what about {name}?","timestamp":"2026-01-01T00:00:00Z"}}"#
            ),
            format!(
                r#"{{"session_id":"{name}","role":"assistant","content":"{name} is settled.","timestamp":"2026-01-01T00:00:01Z"}}"#
            ),
        ];
        std::fs::write(dir.join(format!("{name}.jsonl")), lines.join("\n") + "\n").unwrap();
    }
}

/// A unit vector that is the same for the same key (and far from other keys' vectors).
fn vector_of(key: u64) -> Vec<f32> {
    let mut v = vec![0.0f32; DIM];
    v[(key % DIM as u64) as usize] = 1.0;
    v[((key >> 8) % DIM as u64) as usize] += 0.5;
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter().map(|x| x / n).collect()
}

/// Index `src` into `home` and give every chunk without vectors its `vector_of`.
fn index_and_embed(home: &Path, src: &Path) -> Vec<u64> {
    let store = Store::open(home, Quantization::F16).unwrap();
    let mut w = Writer::new(store, None).unwrap();
    let plan = w.scan(&[src.to_path_buf()]).unwrap();
    w.index_files(&plan.to_index).unwrap();
    w.commit().unwrap();
    let keys = w.pending_vectors().unwrap();
    let flat: Vec<f32> = keys.iter().flat_map(|k| vector_of(*k)).collect();
    w.add_vectors("test/fixed", DIM, &keys, &vec![1; keys.len()], &flat)
        .unwrap();
    w.commit().unwrap();
    keys
}

/// The chunk key of the best vector hit for chunk `key`'s own vector.
fn nearest(home: &Path, key: u64) -> u64 {
    let store = Store::open(home, Quantization::F16).unwrap();
    let hits = store
        .search(&SearchRequest {
            query: String::new(),
            vector: Some(vector_of(key)),
            embedder_id: Some("test/fixed".into()),
            k: 1,
            filters: Filters::default(),
            fusion: Fusion::Weighted {
                vector: 1.0,
                bm25: 0.0,
            },
            threshold: 0.0,
            candidates: 10,
        })
        .unwrap();
    assert!(hits[0].vector.unwrap() > 0.99);
    hits[0].chunk.key
}

fn meta(home: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(home.join("memlane.json")).unwrap()).unwrap()
}

#[test]
fn new_homes_use_high_byte_window_keys() {
    let (src, home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_transcripts(src.path(), &["alpha", "beta", "gamma"]);
    let keys = index_and_embed(home.path(), src.path());
    assert_eq!(keys.len(), 3);
    assert_eq!(meta(home.path())["window_keys"], "high-byte");
    for key in keys {
        assert_eq!(nearest(home.path(), key), key);
    }
}

#[test]
fn homes_with_low_byte_vectors_keep_their_layout() {
    let (src, home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_transcripts(src.path(), &["alpha", "beta"]);
    let old_keys = index_and_embed(home.path(), src.path());

    // Rewrite the home as an older build left it: low-byte keys, no layout in memlane.json.
    let old = VectorIndex::new(DIM, Quantization::F16, WindowKeys::LowByte).unwrap();
    for key in &old_keys {
        old.add(*key, &vector_of(*key)).unwrap();
    }
    old.save(&home.path().join("vectors.usearch")).unwrap();
    let mut m = meta(home.path());
    m.as_object_mut().unwrap().remove("window_keys");
    std::fs::write(home.path().join("memlane.json"), m.to_string()).unwrap();

    for key in &old_keys {
        assert_eq!(nearest(home.path(), *key), *key);
    }
    // New chunks join the old file in its own layout.
    write_transcripts(src.path(), &["gamma"]);
    let new_keys = index_and_embed(home.path(), src.path());
    assert_eq!(new_keys.len(), 1);
    assert!(meta(home.path())
        .get("window_keys")
        .is_none_or(|v| v == "low-byte"));
    for key in old_keys.iter().chain(&new_keys) {
        assert_eq!(nearest(home.path(), *key), *key);
    }
}
