//! A search over several homes (the shards of a sharded index open in one process) scored
//! with the whole corpus's BM25 statistics answers exactly as one home holding every chunk:
//! the same chunks, in the same order, with the same scores, filters included.

use std::path::Path;

use memlane_core::hybrid::Fusion;
use memlane_core::lexical::Filters;
use memlane_core::model::Format;
use memlane_core::shard::TermStats;
use memlane_core::store::{Hit, SearchRequest, Store, Writer};
use memlane_core::vector::Quantization;
use serde_json::json;

const WORDS: [&str; 16] = [
    "deploy", "cache", "index", "query", "parser", "vector", "billing", "token", "chunk",
    "latency", "merge", "schema", "postgres", "replica", "timeout", "rollback",
];

/// A generic JSONL session of `pairs` user/assistant turns, words varied by `seed`.
fn session(seed: usize, pairs: usize) -> String {
    let mut lines = Vec::new();
    for p in 0..pairs {
        for (r, role) in ["user", "assistant"].iter().enumerate() {
            let n = seed * 31 + p * 7 + r * 3;
            let words: Vec<&str> = (0..6 + n % 9)
                .map(|i| WORDS[(n + i * (seed % 5 + 1)) % WORDS.len()])
                .collect();
            let line = json!({
                "id": format!("m{seed}-{p}-{r}"),
                "session_id": format!("s{seed}"),
                "role": role,
                "content": format!("turn {seed}.{p} {}", words.join(" ")),
                "timestamp": format!("2026-02-{:02}T10:{:02}:00Z", 1 + seed % 27, p % 60),
            });
            lines.push(line.to_string());
        }
    }
    lines.join("\n") + "\n"
}

fn index(home: &Path, root: &Path) -> std::sync::Arc<Store> {
    let store = Store::open(home, Quantization::F16).unwrap();
    let mut w = Writer::new(store.clone(), Some(Format::Generic)).unwrap();
    let plan = w.scan(&[root.to_path_buf()]).unwrap();
    w.index_files(&plan.to_index).unwrap();
    w.commit().unwrap();
    store
}

fn request(query: &str, filters: Filters) -> SearchRequest {
    SearchRequest {
        query: query.into(),
        vector: None,
        embedder_id: None,
        k: 10,
        filters,
        fusion: Fusion::default(),
        threshold: 0.0,
        candidates: 50,
    }
}

fn shown(hits: &[Hit]) -> Vec<(u64, u32, Option<u32>, String)> {
    hits.iter()
        .map(|h| {
            let bm25 = h.bm25.map(f32::to_bits);
            (h.chunk.key, h.score.to_bits(), bm25, h.chunk.text.clone())
        })
        .collect()
}

#[test]
fn shards_searched_together_answer_as_one_home() {
    let tmp = tempfile::tempdir().unwrap();
    let all = tmp.path().join("all");
    std::fs::create_dir_all(&all).unwrap();
    let parts: Vec<_> = (0..3)
        .map(|s| tmp.path().join(format!("part{s}")))
        .collect();
    for part in &parts {
        std::fs::create_dir_all(part).unwrap();
    }
    for seed in 0..12 {
        let text = session(seed, 8);
        std::fs::write(all.join(format!("s{seed}.jsonl")), &text).unwrap();
        std::fs::write(parts[seed % 3].join(format!("s{seed}.jsonl")), &text).unwrap();
    }
    let one = index(&tmp.path().join("one"), &all);
    let shards: Vec<_> = parts
        .iter()
        .enumerate()
        .map(|(s, root)| index(&tmp.path().join(format!("shard{s}")), root))
        .collect();
    let shards: Vec<&Store> = shards.iter().map(AsRef::as_ref).collect();

    let mut compared = 0;
    for query in [
        "postgres replica timeout",
        "billing cache",
        "rollback schema merge",
        "token",
    ] {
        let mut stats = TermStats::default();
        for shard in &shards {
            stats.add(&shard.term_stats(query).unwrap());
        }
        assert_eq!(Store::corpus_term_stats(&shards, query).unwrap(), stats);
        let session = Filters {
            session_id: Some("s4".into()),
            ..Filters::default()
        };
        for filters in [Filters::default(), session] {
            let req = request(query, filters);
            let expected = shown(&one.search(&req).unwrap());
            let found = shown(&Store::search_across(&shards, &req, &stats).unwrap());
            assert_eq!(found, expected, "{query:?} {:?}", req.filters);
            compared += usize::from(!expected.is_empty());
        }
    }
    assert!(
        compared >= 6,
        "most queries have hits: the comparison is not vacuous"
    );
    // A shard's own statistics score differently: the sum is what makes them equal.
    let req = request("postgres replica timeout", Filters::default());
    let own = shards[0].term_stats(&req.query).unwrap();
    assert_ne!(
        shown(&Store::search_across(&shards[..1], &req, &own).unwrap()),
        shown(&one.search(&req).unwrap())
    );
}
