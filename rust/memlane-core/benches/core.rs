//! Criterion benchmarks of the core, on the same scenarios as `benches/bench_pipeline.py`:
//! parse + chunk of Claude Code JSONL and of markdown notes (`benches/bench_library.py`), and
//! hybrid search over a home with vectors.
//! Run: `cargo bench -p memlane-core`.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use memlane_core::chunk::{chunk_parsed, chunk_session, DEFAULT_BUDGET_TOKENS};
use memlane_core::hybrid::{Fusion, DEFAULT_THRESHOLD};
use memlane_core::lexical::Filters;
use memlane_core::model::Format;
use memlane_core::parse;
use memlane_core::store::{SearchRequest, Store, Writer};
use memlane_core::vector::Quantization;
use std::fmt::Write as _;
use std::path::Path;

const WORDS: &[&str] = &[
    "deploy",
    "build",
    "cache",
    "index",
    "query",
    "latency",
    "memory",
    "vector",
    "token",
    "parser",
    "chunk",
    "session",
    "commit",
    "billing",
    "postgres",
    "timeout",
    "retry",
    "ERR_CONN_RESET",
    "src/app/main.py",
    "exit",
    "code",
    "137",
    "kubernetes",
    "pod",
    "rollback",
    "release",
    "schema",
    "migration",
    "alert",
];

/// Tiny deterministic generator (xorshift) so the bench needs no data files.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn words(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| WORDS[(self.next() % WORDS.len() as u64) as usize])
            .collect::<Vec<_>>()
            .join(" ")
    }
}

fn claude_session(rng: &mut Rng, session: &str, pairs: usize) -> String {
    let mut out = String::new();
    let mut parent = "null".to_owned();
    for p in 0..pairs {
        for (role, kind) in [("user", "user"), ("assistant", "assistant")] {
            let uuid = format!("{session}-{p}-{role}");
            let text = rng.words(if role == "user" { 30 } else { 120 });
            let message = if role == "user" {
                format!(r#"{{"role":"user","content":"{text}"}}"#)
            } else {
                format!(
                    r#"{{"id":"msg_{p}","type":"message","role":"assistant","model":"m","content":[{{"type":"text","text":"{text}"}}]}}"#
                )
            };
            let _ = writeln!(
                out,
                r#"{{"type":"{kind}","uuid":"{uuid}","parentUuid":{parent},"sessionId":"{session}","timestamp":"2026-01-01T00:{:02}:00Z","message":{message}}}"#,
                p % 60
            );
            parent = format!("\"{uuid}\"");
        }
    }
    out
}

/// A long design note: frontmatter, `##` sections of paragraphs, some code blocks.
fn markdown_note(rng: &mut Rng, sections: usize) -> String {
    let mut out = String::from("---\ntitle: Design\ntags: [billing, storage]\n---\n# Design\n\n");
    for s in 0..sections {
        let _ = write!(out, "## {} {s}\n\n", rng.words(3));
        for _ in 0..3 {
            let _ = write!(out, "{} #tag{}\n\n", rng.words(60), s % 7);
        }
        if s % 3 == 0 {
            out.push_str("```bash\n## not a heading\nmake test\n```\n\n");
        }
    }
    out
}

fn bench_parse(c: &mut Criterion) {
    let mut rng = Rng(7);
    let data = claude_session(&mut rng, "s1", 2000);
    let mut group = c.benchmark_group("parse");
    group.throughput(Throughput::Bytes(data.len() as u64));
    group.bench_function("claude_code_parse_and_chunk", |b| {
        b.iter(|| {
            let parsed = parse::parse_bytes(
                data.as_bytes(),
                Path::new("s1.jsonl"),
                Some(Format::ClaudeCode),
            );
            parsed
                .sessions
                .iter()
                .map(|s| chunk_session(s, "s1.jsonl", DEFAULT_BUDGET_TOKENS).len())
                .sum::<usize>()
        });
    });
    let note = markdown_note(&mut rng, 2000);
    group.throughput(Throughput::Bytes(note.len() as u64));
    group.bench_function("markdown_parse_and_chunk", |b| {
        b.iter(|| {
            let parsed = parse::parse_bytes(note.as_bytes(), Path::new("design.md"), None);
            chunk_parsed(&parsed, "design.md", DEFAULT_BUDGET_TOKENS).len()
        });
    });
    group.finish();
}

fn bench_search(c: &mut Criterion) {
    const DIM: usize = 384;
    let dir = tempfile::tempdir().expect("tempdir");
    let sources = dir.path().join("src");
    std::fs::create_dir_all(&sources).expect("mkdir");
    let mut rng = Rng(11);
    for f in 0..50 {
        let id = format!("{f:08x}-0000-4000-8000-000000000000");
        std::fs::write(
            sources.join(format!("{id}.jsonl")),
            claude_session(&mut rng, &id, 400),
        )
        .expect("write");
    }
    let store = Store::open(&dir.path().join("home"), Quantization::F16).expect("open");
    let mut writer = Writer::new(store.clone(), None).expect("writer");
    let plan = writer.scan(&[sources]).expect("scan");
    writer.index_files(&plan.to_index).expect("index");
    writer.commit().expect("commit");
    let keys = writer.pending_vectors().expect("pending");
    let unit = |rng: &mut Rng| {
        let v: Vec<f32> = (0..DIM)
            .map(|_| (rng.next() % 2000) as f32 / 1000.0 - 1.0)
            .collect();
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / n).collect::<Vec<f32>>()
    };
    let flat: Vec<f32> = keys.iter().flat_map(|_| unit(&mut rng)).collect();
    writer
        .add_vectors(
            "bench/random/384",
            DIM,
            &keys,
            &vec![1; keys.len()],
            &flat,
            1,
        )
        .expect("vectors");
    writer.commit().expect("commit");
    drop(writer);
    let query = unit(&mut rng);
    let mut group = c.benchmark_group(format!("search_{}_chunks", keys.len()));
    group.bench_function("hybrid_k10", |b| {
        b.iter_batched(
            || SearchRequest {
                query: "why did the deploy fail with exit code 137".into(),
                vector: Some(query.clone()),
                embedder_id: None,
                k: 10,
                filters: Filters::default(),
                fusion: Fusion::default(),
                threshold: DEFAULT_THRESHOLD,
                candidates: 50,
            },
            |req| store.search(&req).expect("search").len(),
            BatchSize::SmallInput,
        );
    });
    group.finish();
}

criterion_group!(benches, bench_parse, bench_search);
criterion_main!(benches);
