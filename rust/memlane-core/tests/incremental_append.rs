//! Appending to a transcript and re-indexing must end in exactly the state a fresh full index
//! of the final file gives (same chunk keys, texts and provenance, same manifest keys),
//! whether the append was parsed alone (a resume) or the file was parsed again whole.
//!
//! Real samples come from `<repo>/../shared/data/transcripts`; those tests skip with a message
//! when the corpus is absent. Synthetic Claude Code sessions add long files with rewinds,
//! compactions, sidechains, foreign sessions and repeated uuids.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use memlane_core::model::Format;
use memlane_core::parse;
use memlane_core::store::{IndexReport, Manifest, Store, Writer};
use memlane_core::vector::Quantization;
use proptest::prelude::*;
use serde_json::json;

fn transcripts_dir() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/transcripts");
    if p.is_dir() {
        Some(p)
    } else {
        eprintln!(
            "SKIP: transcript samples not found at {} (expected ../shared/data next to the repo)",
            p.display()
        );
        None
    }
}

/// Every sample file, as (path relative to the corpus, bytes).
fn samples() -> Vec<(PathBuf, Vec<u8>)> {
    let Some(dir) = transcripts_dir() else {
        return Vec::new();
    };
    let mut out: Vec<(PathBuf, Vec<u8>)> = walkdir(&dir)
        .into_iter()
        .filter(|p| parse::is_transcript_candidate(p))
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p.strip_prefix(&dir).unwrap().to_path_buf(), bytes)
        })
        .collect();
    out.sort();
    out
}

fn walkdir(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walkdir(&p));
        } else {
            out.push(p);
        }
    }
    out
}

fn index(home: &Path, root: &Path, format: Option<Format>) -> IndexReport {
    let store = Store::open(home, Quantization::F16).unwrap();
    let mut w = Writer::new(store, format).unwrap();
    let plan = w.scan(&[root.to_path_buf()]).unwrap();
    w.remove_files(&plan.deleted);
    w.index_files(&plan.to_index).unwrap();
    w.commit().unwrap()
}

/// What a reader can see: per file its chunk keys in order, per chunk its text and
/// provenance. Not the `meta` lists (tools, files, turn ids): a chunk whose text is already
/// indexed keeps the lists it was first indexed with, so the part of a long split turn that
/// does not change while later parts grow keeps older lists, resumed or not.
#[derive(Debug, PartialEq)]
struct Snapshot {
    keys: BTreeMap<String, Vec<u64>>,
    chunks: BTreeMap<u64, String>,
}

/// What differs between two snapshots, for failure messages.
fn diff(a: &Snapshot, b: &Snapshot) -> String {
    let mut out = String::new();
    for (k, v) in &a.keys {
        if b.keys.get(k) != Some(v) {
            out += &format!("keys of {k}: appended {v:?} vs full {:?}\n", b.keys.get(k));
        }
    }
    for (k, v) in &a.chunks {
        if b.chunks.get(k) != Some(v) {
            out += &format!("only appended: {v}\n");
        }
    }
    for (k, v) in &b.chunks {
        if a.chunks.get(k) != Some(v) {
            out += &format!("only full: {v}\n");
        }
    }
    out
}

fn snapshot(home: &Path, root: &Path) -> Snapshot {
    let manifest: Manifest =
        serde_json::from_slice(&std::fs::read(home.join("manifest.json")).unwrap()).unwrap();
    let keys: BTreeMap<String, Vec<u64>> = manifest
        .files
        .iter()
        .map(|(p, e)| {
            let rel = Path::new(p).strip_prefix(root).unwrap();
            (rel.to_string_lossy().into_owned(), e.keys.clone())
        })
        .collect();
    let all: Vec<u64> = keys.values().flatten().copied().collect();
    let store = Store::open(home, Quantization::F16).unwrap();
    let root_str = root.to_string_lossy();
    let chunks = store
        .get(&all)
        .unwrap()
        .into_iter()
        .map(|c| {
            let shown = format!(
                "{}|{}|{}|{}-{}|{:?}-{:?}|{}|{}",
                c.path.replace(root_str.as_ref(), ""),
                c.session_id,
                c.role,
                c.turn_start,
                c.turn_end,
                c.timestamp,
                c.timestamp_end,
                c.format,
                c.text
            );
            (c.key, shown)
        })
        .collect();
    Snapshot { keys, chunks }
}

/// Write `bytes` to `rel` under `root` in the given pieces, re-indexing `home` after each;
/// then index the whole file into a fresh home and return both snapshots and how many
/// re-indexes resumed.
fn append_in_pieces(
    rel: &Path,
    bytes: &[u8],
    cuts: &[usize],
    format: Option<Format>,
) -> (Snapshot, Snapshot, u64) {
    let tmp = tempfile::tempdir().unwrap();
    let (root, home, fresh) = (
        tmp.path().join("a"),
        tmp.path().join("home"),
        tmp.path().join("fresh"),
    );
    let file = root.join(rel);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let mut bounds: Vec<usize> = cuts.iter().map(|c| (*c).min(bytes.len())).collect();
    bounds.sort_unstable();
    bounds.push(bytes.len());
    let mut resumed = 0;
    for (i, end) in bounds.iter().enumerate() {
        std::fs::write(&file, &bytes[..*end]).unwrap();
        let report = index(&home, &root, format);
        if i > 0 {
            resumed += report.files_resumed;
        }
    }
    let root2 = tmp.path().join("b");
    let file2 = root2.join(rel);
    std::fs::create_dir_all(file2.parent().unwrap()).unwrap();
    std::fs::write(&file2, bytes).unwrap();
    index(&fresh, &root2, format);
    (snapshot(&home, &root), snapshot(&fresh, &root2), resumed)
}

/// Byte offsets just after each newline.
fn line_ends(bytes: &[u8]) -> Vec<usize> {
    bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .map(|(i, _)| i + 1)
        .collect()
}

// ---- synthetic Claude Code sessions ----

/// What a synthetic record does.
#[derive(Debug, Clone)]
enum Step {
    /// A human prompt and a reply (text, maybe a tool call and its result).
    Exchange { words: usize, tool: bool },
    /// Rewind: the next prompt continues from the record `back` records ago.
    Rewind { back: usize },
    /// A compaction boundary and summary.
    Compact,
    /// A sidechain (inline subagent) record.
    Sidechain,
    /// A record of another session id.
    Foreign,
    /// A record that repeats an earlier uuid.
    Repeat { back: usize },
    /// A `last-prompt` pointer at the current leaf.
    LastPrompt,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        12 => (1usize..120, any::<bool>()).prop_map(|(words, tool)| Step::Exchange { words, tool }),
        2 => (1usize..12).prop_map(|back| Step::Rewind { back }),
        1 => Just(Step::Compact),
        1 => Just(Step::Sidechain),
        1 => Just(Step::Foreign),
        1 => (1usize..12).prop_map(|back| Step::Repeat { back }),
        1 => Just(Step::LastPrompt),
    ]
}

fn text(tag: &str, seed: usize, words: usize) -> String {
    const W: [&str; 12] = [
        "deploy", "cache", "index", "query", "parser", "vector", "billing", "token", "chunk",
        "latency", "merge", "schema",
    ];
    // The record number keeps texts unique: two chunks with one text share one key, and
    // which provenance that key keeps depends on indexing order, resumed or not.
    let words: Vec<&str> = (0..words)
        .map(|i| W[(seed * 7 + i * 3 + i / 5) % W.len()])
        .collect();
    format!("{tag}{seed} {}", words.join(" "))
}

/// JSONL of a Claude Code session made of `steps`.
fn claude_session(steps: &[Step]) -> Vec<u8> {
    let mut lines: Vec<serde_json::Value> = Vec::new();
    let mut uuids: Vec<String> = Vec::new();
    let mut parent: Option<String> = None;
    let mut n = 0usize;
    let mut rec = |lines: &mut Vec<serde_json::Value>,
                   uuids: &mut Vec<String>,
                   parent: &mut Option<String>,
                   mut v: serde_json::Value,
                   advance: bool| {
        n += 1;
        let uuid = format!("u{n}");
        let o = v.as_object_mut().unwrap();
        o.entry("uuid").or_insert(json!(uuid));
        o.entry("parentUuid").or_insert(json!(parent.clone()));
        o.entry("sessionId").or_insert(json!("s1"));
        o.entry("isSidechain").or_insert(json!(false));
        o.insert(
            "timestamp".into(),
            json!(format!("2026-01-01T00:{:02}:{:02}Z", (n / 60) % 60, n % 60)),
        );
        let id = o["uuid"].as_str().unwrap().to_owned();
        uuids.push(id.clone());
        if advance {
            *parent = Some(id);
        }
        lines.push(v);
    };
    for (i, s) in steps.iter().enumerate() {
        match s {
            Step::Exchange { words, tool } => {
                rec(
                    &mut lines,
                    &mut uuids,
                    &mut parent,
                    json!({"type": "user",
                    "message": {"role": "user", "content": text("u", i, *words)}}),
                    true,
                );
                rec(
                    &mut lines,
                    &mut uuids,
                    &mut parent,
                    json!({"type": "assistant",
                    "message": {"id": format!("m{i}"), "role": "assistant",
                    "content": [{"type": "text", "text": text("a", i, words * 2)}]}}),
                    true,
                );
                if *tool {
                    rec(
                        &mut lines,
                        &mut uuids,
                        &mut parent,
                        json!({"type": "assistant",
                        "message": {"id": format!("m{i}"), "role": "assistant",
                        "content": [{"type": "tool_use", "id": format!("t{i}"), "name": "Bash",
                                     "input": {"command": format!("make test{i}")}}]}}),
                        true,
                    );
                    rec(
                        &mut lines,
                        &mut uuids,
                        &mut parent,
                        json!({"type": "user",
                        "message": {"role": "user", "content": [{"type": "tool_result",
                        "tool_use_id": format!("t{i}"), "content": text("t", i, *words)}]}}),
                        true,
                    );
                }
            }
            Step::Rewind { back } => {
                parent = uuids.len().checked_sub(*back + 1).map(|j| uuids[j].clone());
            }
            Step::Compact => {
                let logical = parent.clone();
                rec(
                    &mut lines,
                    &mut uuids,
                    &mut parent,
                    json!({"type": "system",
                    "subtype": "compact_boundary", "parentUuid": null,
                    "logicalParentUuid": logical}),
                    true,
                );
                rec(
                    &mut lines,
                    &mut uuids,
                    &mut parent,
                    json!({"type": "user",
                    "isCompactSummary": true,
                    "message": {"role": "user", "content": text("c", i, 30)}}),
                    true,
                );
            }
            Step::Sidechain => {
                rec(
                    &mut lines,
                    &mut uuids,
                    &mut parent,
                    json!({"type": "user",
                    "isSidechain": true, "agentId": "ag1",
                    "message": {"role": "user", "content": text("s", i, 5)}}),
                    false,
                );
            }
            Step::Foreign => {
                rec(
                    &mut lines,
                    &mut uuids,
                    &mut parent,
                    json!({"type": "user",
                    "sessionId": "other",
                    "message": {"role": "user", "content": text("f", i, 5)}}),
                    true,
                );
            }
            Step::Repeat { back } => {
                if let Some(u) = uuids.len().checked_sub(*back + 1).map(|j| uuids[j].clone()) {
                    rec(
                        &mut lines,
                        &mut uuids,
                        &mut parent,
                        json!({"type": "user", "uuid": u,
                        "message": {"role": "user", "content": text("p", i, 4)}}),
                        true,
                    );
                }
            }
            Step::LastPrompt => {
                lines.push(json!({"type": "last-prompt", "leafUuid": parent.clone(),
                                  "sessionId": "s1"}));
            }
        }
    }
    let mut out = Vec::new();
    for l in lines {
        out.extend_from_slice(serde_json::to_string(&l).unwrap().as_bytes());
        out.push(b'\n');
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Real samples of every format, cut at random line ends (and sometimes mid-line, as a
    /// writer caught mid-record), detected or with the format forced.
    #[test]
    fn appended_real_sample_equals_full_index(
        pick in any::<prop::sample::Index>(),
        cuts in prop::collection::vec((any::<prop::sample::Index>(), any::<bool>()), 1..4),
        force in any::<bool>(),
    ) {
        let all = samples();
        if all.is_empty() {
            return Ok(());
        }
        let (rel, bytes) = &all[pick.index(all.len())];
        let ends = line_ends(bytes);
        let offsets: Vec<usize> = cuts
            .iter()
            .map(|(i, mid)| {
                let e = if ends.is_empty() { bytes.len() } else { ends[i.index(ends.len())] };
                if *mid { e.saturating_sub(7) } else { e }
            })
            .collect();
        let format = if force {
            parse::parse_bytes(bytes, rel, None).format
        } else {
            None
        };
        let (appended, full, _) = append_in_pieces(rel, bytes, &offsets, format);
        prop_assert!(appended == full, "{}", diff(&appended, &full));
    }

    /// Long synthetic Claude Code sessions with rewinds, compactions, sidechains, foreign
    /// records, repeated uuids and `last-prompt` pointers, cut at random line ends.
    #[test]
    fn appended_claude_session_equals_full_index(
        steps in prop::collection::vec(step(), 30..70),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 1..5),
        agent in any::<bool>(),
        one_session in any::<bool>(),
    ) {
        // Half the sessions keep to one agent and session id, so appends can resume.
        let steps: Vec<Step> = steps
            .into_iter()
            .filter(|s| {
                !one_session
                    || matches!(s, Step::Exchange { .. } | Step::Rewind { .. } | Step::Compact)
            })
            .collect();
        let bytes = claude_session(&steps);
        let ends = line_ends(&bytes);
        let offsets: Vec<usize> = cuts.iter().map(|i| ends[i.index(ends.len())]).collect();
        let rel = if agent {
            PathBuf::from("s1/subagents/agent-a1.jsonl")
        } else {
            PathBuf::from("proj/s1.jsonl")
        };
        let (appended, full, _) = append_in_pieces(&rel, &bytes, &offsets, None);
        prop_assert!(appended == full, "{}", diff(&appended, &full));
    }
}

fn exchanges(n: usize) -> Vec<Step> {
    (0..n)
        .map(|i| Step::Exchange {
            words: 10 + i % 7,
            tool: i % 2 == 0,
        })
        .collect()
}

/// Cut `steps`' session after `first` steps, index, append the rest, re-index: snapshots
/// and resumes.
fn two_part(steps: &[Step], first: usize) -> (Snapshot, Snapshot, u64) {
    let head = claude_session(&steps[..first]);
    let bytes = claude_session(steps);
    assert!(bytes.starts_with(&head));
    append_in_pieces(Path::new("p/s1.jsonl"), &bytes, &[head.len()], None)
}

#[test]
fn plain_append_reads_only_the_last_exchange_and_the_new_bytes() {
    let steps = exchanges(40);
    let tmp = tempfile::tempdir().unwrap();
    let (root, home) = (tmp.path().join("a"), tmp.path().join("home"));
    std::fs::create_dir_all(&root).unwrap();
    let file = root.join("s1.jsonl");
    let head = claude_session(&steps[..38]);
    let bytes = claude_session(&steps);
    std::fs::write(&file, &head).unwrap();
    let first = index(&home, &root, None);
    assert_eq!(first.files_resumed, 0);
    std::fs::write(&file, &bytes).unwrap();
    let again = index(&home, &root, None);
    assert_eq!((again.files_indexed, again.files_resumed), (1, 1));
    let appended = (bytes.len() - head.len()) as u64;
    // The last exchange of the head is re-read (its pair could still have been growing),
    // nothing before it.
    assert!(again.bytes_parsed > appended, "{again:?}");
    assert!(again.bytes_parsed < appended * 2, "{again:?} vs {appended}");
    assert_eq!(again.chunks_removed, 0, "a closed pair keeps its chunk");
    assert_eq!(again.chunks_added, 2);

    let (appended, full, resumed) = two_part(&steps, 38);
    assert_eq!(appended, full);
    assert_eq!(resumed, 1);
}

#[test]
fn rewind_to_before_the_last_exchange_falls_back_to_a_full_parse() {
    let mut steps = exchanges(40);
    steps.push(Step::Rewind { back: 12 });
    steps.extend(exchanges(2));
    let (appended, full, resumed) = two_part(&steps, 40);
    assert_eq!(resumed, 0);
    assert_eq!(appended, full);
}

#[test]
fn foreign_session_sidechain_repeat_and_pin_fall_back() {
    for odd in [
        Step::Foreign,
        Step::Sidechain,
        Step::Repeat { back: 30 },
        Step::LastPrompt,
    ] {
        let mut steps = exchanges(40);
        steps.push(odd.clone());
        let (appended, full, resumed) = two_part(&steps, 40);
        assert_eq!(resumed, 0, "{odd:?}");
        assert_eq!(appended, full, "{odd:?}");
    }
}

#[test]
fn compaction_that_continues_the_branch_resumes() {
    let mut steps = exchanges(40);
    steps.push(Step::Compact);
    steps.extend(exchanges(2));
    let (appended, full, resumed) = two_part(&steps, 40);
    assert_eq!(resumed, 1);
    assert_eq!(appended, full);
}

#[test]
fn rewritten_or_truncated_file_is_parsed_again_whole() {
    let steps = exchanges(40);
    let bytes = claude_session(&steps);
    let tmp = tempfile::tempdir().unwrap();
    let (root, home) = (tmp.path().join("a"), tmp.path().join("home"));
    std::fs::create_dir_all(&root).unwrap();
    let file = root.join("s1.jsonl");
    std::fs::write(&file, &bytes).unwrap();
    index(&home, &root, None);
    // Same head, a changed last exchange, longer file.
    let mut rewritten = bytes.clone();
    let at = rewritten.len() - 40;
    rewritten[at..at + 6].copy_from_slice(b"zzzzzz");
    rewritten.extend_from_slice(&claude_session(&exchanges(41))[bytes.len()..]);
    std::fs::write(&file, &rewritten).unwrap();
    let report = index(&home, &root, None);
    assert_eq!((report.files_indexed, report.files_resumed), (1, 0));
    // Truncated.
    std::fs::write(&file, &bytes[..bytes.len() / 2]).unwrap();
    let report = index(&home, &root, None);
    assert_eq!((report.files_indexed, report.files_resumed), (1, 0));
    // A different first 4 KiB, same length or longer.
    let mut other = bytes.clone();
    other[20..26].copy_from_slice(b"yyyyyy");
    other.extend_from_slice(b"\n");
    std::fs::write(&file, &other).unwrap();
    let report = index(&home, &root, None);
    assert_eq!((report.files_indexed, report.files_resumed), (1, 0));
}

#[test]
fn json_documents_and_other_formats_are_never_resumed() {
    for (rel, bytes) in samples() {
        let Some(cut) = line_ends(&bytes).get(1).copied() else {
            continue;
        };
        let format = parse::parse_bytes(&bytes, &rel, None).format;
        if format == Some(Format::ClaudeCode) {
            continue;
        }
        let (appended, full, resumed) = append_in_pieces(&rel, &bytes, &[cut], format);
        assert_eq!(resumed, 0, "{}", rel.display());
        assert_eq!(appended, full, "{}", rel.display());
    }
}
