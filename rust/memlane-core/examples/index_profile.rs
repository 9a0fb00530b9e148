//! Where indexing CPU goes, stage by stage, on a folder of transcripts: a profiling aid (see
//! benches/README.md), not a benchmark with targets (`make bench` is that). CPU time comes from
//! /proc, so a loaded machine inflates wall clock much more than these figures.
//!
//! ```text
//! cargo run --release -p memlane-core --example index_profile -- DIR [stages|index]
//! ```
//!
//! `stages` runs read + parse, chunk, document building and tokenizing one after another on
//! one thread; `index` runs the whole writer (parallel parse, tantivy threads, commit).
#![allow(clippy::print_stdout, clippy::cast_precision_loss)]

use memlane_core::chunk::{chunk_parsed, DEFAULT_BUDGET_TOKENS};
use memlane_core::lexical::Lexical;
use memlane_core::store::{Store, Writer};
use memlane_core::tokenize::CodeTokenizer;
use memlane_core::vector::Quantization;
use std::path::PathBuf;
use std::time::Instant;
use tantivy::tokenizer::{TokenStream, Tokenizer};

/// CPU seconds (user + system) of this process so far, from /proc/self/stat (100 Hz ticks).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after_name = stat.rsplit(')').next().unwrap_or_default();
    let fields: Vec<f64> = after_name
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(0.0))
        .collect();
    (fields.get(11).unwrap_or(&0.0) + fields.get(12).unwrap_or(&0.0)) / 100.0
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = args
        .get(1)
        .expect("usage: index_profile DIR [stages|index]");
    let mode = args.get(2).map_or("stages", String::as_str);
    let mut paths: Vec<PathBuf> = walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(walkdir::DirEntry::into_path)
        .collect();
    paths.sort();
    let mb = paths
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum::<u64>() as f64
        / 1e6;
    let mut clock = (cpu_seconds(), Instant::now());
    let mut report = |what: &str| {
        let cpu = cpu_seconds() - clock.0;
        let wall = clock.1.elapsed().as_secs_f64();
        println!(
            "{what:<28} cpu {cpu:7.3} s {:6.2} ms/MB  wall {wall:7.3} s",
            cpu * 1000.0 / mb
        );
        clock = (cpu_seconds(), Instant::now());
    };
    let home = tempfile::tempdir().expect("tempdir");
    if mode == "index" {
        let store = Store::open(home.path(), Quantization::F16).expect("open");
        let mut writer = Writer::new(store, None).expect("writer");
        for batch in paths.chunks(64) {
            writer.index_files(batch).expect("index");
        }
        let done = writer.commit().expect("commit");
        report(&format!("index ({} chunks)", done.chunks_added));
        return;
    }
    let parsed: Vec<_> = paths
        .iter()
        .map(|p| (p, memlane_core::parse::parse_file(p, None).expect("parse")))
        .collect();
    report("read + parse");
    let chunks: Vec<_> = parsed
        .iter()
        .flat_map(|(p, f)| chunk_parsed(f, &p.to_string_lossy(), DEFAULT_BUDGET_TOKENS))
        .collect();
    report(&format!("chunk ({} chunks)", chunks.len()));
    let lexical = Lexical::open(home.path()).expect("lexical");
    let docs: Vec<_> = chunks
        .iter()
        .map(|c| lexical.document(c, &c.source, &c.heading, ""))
        .collect();
    report("build documents");
    drop(docs);
    let mut tokenizer = CodeTokenizer::default();
    let mut tokens = 0usize;
    for c in &chunks {
        let mut stream = tokenizer.token_stream(&c.text);
        while stream.advance() {
            tokens += 1;
        }
    }
    report(&format!("tokenize ({:.0} tokens/MB)", tokens as f64 / mb));
}
