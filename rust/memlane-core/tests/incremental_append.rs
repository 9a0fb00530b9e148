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

/// `n` exchanges of about `words` words a prompt (twice that a reply, every other one with a
/// tool call).
fn exchanges_of(n: usize, words: usize) -> Vec<Step> {
    (0..n)
        .map(|i| Step::Exchange {
            words: words + i % 7,
            tool: i % 2 == 0,
        })
        .collect()
}

/// Short exchanges (10 to 16 words a prompt): two or three are packed into one chunk.
fn exchanges(n: usize) -> Vec<Step> {
    exchanges_of(n, 10)
}

/// Cut `steps`' session after `first` steps, index, append the rest, re-index: snapshots
/// and resumes.
fn two_part(steps: &[Step], first: usize) -> (Snapshot, Snapshot, u64) {
    let head = claude_session(&steps[..first]);
    let bytes = claude_session(steps);
    assert!(bytes.starts_with(&head));
    append_in_pieces(Path::new("p/s1.jsonl"), &bytes, &[head.len()], None)
}

/// The chunk keys the manifest of `home` lists for its one file.
fn file_keys(home: &Path) -> Vec<u64> {
    let manifest: Manifest =
        serde_json::from_slice(&std::fs::read(home.join("manifest.json")).unwrap()).unwrap();
    let [entry] = manifest.files.values().collect::<Vec<_>>()[..] else {
        panic!("expected one file");
    };
    entry.keys.clone()
}

/// Index a Claude Code session of `steps` cut before its last two exchanges, append them,
/// index again: the second run's report and the file's chunk keys after each run.
fn append_last_two(steps: &[Step]) -> (IndexReport, Vec<u64>, Vec<u64>) {
    let tmp = tempfile::tempdir().unwrap();
    let (root, home) = (tmp.path().join("a"), tmp.path().join("home"));
    std::fs::create_dir_all(&root).unwrap();
    let file = root.join("s1.jsonl");
    let head = claude_session(&steps[..steps.len() - 2]);
    let bytes = claude_session(steps);
    std::fs::write(&file, &head).unwrap();
    let first = index(&home, &root, None);
    assert_eq!(first.files_resumed, 0);
    let before = file_keys(&home);
    std::fs::write(&file, &bytes).unwrap();
    let again = index(&home, &root, None);
    assert_eq!((again.files_indexed, again.files_resumed), (1, 1));
    let appended = (bytes.len() - head.len()) as u64;
    // The last exchange of the head is re-read (its pair could still have been growing),
    // nothing before it: the turns a re-chunking starts with come from the resume state.
    assert!(again.bytes_parsed > appended, "{again:?}");
    assert!(again.bytes_parsed < appended * 2, "{again:?} vs {appended}");
    (again, before, file_keys(&home))
}

#[test]
fn plain_append_reads_only_the_last_exchange_and_the_new_bytes() {
    // Exchanges of 200 to 350 estimated tokens: too long to pack, short enough for one chunk.
    let steps = exchanges_of(40, 40);
    let (again, before, after) = append_last_two(&steps);
    assert_eq!(again.chunks_removed, 0, "a closed pair keeps its chunk");
    assert_eq!(again.chunks_added, 2);
    assert_eq!(after[..before.len()], before[..]);
    let (appended, full, resumed) = two_part(&steps, 38);
    assert_eq!(appended, full);
    assert_eq!(resumed, 1);
}

#[test]
fn plain_append_to_packed_exchanges_re_chunks_only_the_last_pack() {
    let steps = exchanges(40);
    let (again, before, after) = append_last_two(&steps);
    assert!(
        before.len() < 30,
        "short exchanges are packed: {} chunks",
        before.len()
    );
    // Every pack but the last one, which the appended exchanges may join, keeps its chunk.
    let kept = before.len() - 1;
    assert_eq!(after[..kept], before[..kept]);
    assert!(again.chunks_removed <= 1, "{again:?}");
    let added = after[kept..].iter().filter(|k| !before.contains(k)).count();
    let removed = before[kept..].iter().filter(|k| !after.contains(k)).count();
    assert_eq!(again.chunks_added, added as u64, "{again:?}");
    assert_eq!(again.chunks_removed, removed as u64, "{again:?}");
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
fn json_documents_are_never_resumed_and_every_sample_ends_equal() {
    for (rel, bytes) in samples() {
        let Some(cut) = line_ends(&bytes).get(1).copied() else {
            continue;
        };
        let format = parse::parse_bytes(&bytes, &rel, None).format;
        let (appended, full, resumed) = append_in_pieces(&rel, &bytes, &[cut], format);
        if rel.extension().is_some_and(|e| e == "json") {
            assert_eq!(resumed, 0, "{}", rel.display());
        }
        assert_eq!(appended, full, "{}", rel.display());
    }
}

// ---- the other append-only formats ----

/// Real samples of `format` (as detected), each cut at random line ends, appended with the
/// format forced (most samples are shorter than the lines detection needs to settle).
fn real_samples_of(
    format: Format,
    picks: &[prop::sample::Index],
    mid: bool,
) -> Result<(), TestCaseError> {
    let all: Vec<(PathBuf, Vec<u8>)> = samples()
        .into_iter()
        .filter(|(rel, bytes)| parse::parse_bytes(bytes, rel, None).format == Some(format))
        .collect();
    if all.is_empty() {
        eprintln!("SKIP: no {} sample in the corpus", format.as_str());
        return Ok(());
    }
    for (rel, bytes) in &all {
        let ends = line_ends(bytes);
        if ends.is_empty() {
            continue;
        }
        let offsets: Vec<usize> = picks
            .iter()
            .map(|i| ends[i.index(ends.len())].saturating_sub(if mid { 5 } else { 0 }))
            .collect();
        let (appended, full, _) = append_in_pieces(rel, bytes, &offsets, Some(format));
        prop_assert!(
            appended == full,
            "{}: {}",
            rel.display(),
            diff(&appended, &full)
        );
    }
    Ok(())
}

fn ts(n: usize) -> String {
    format!(
        "2026-02-01T{:02}:{:02}:{:02}Z",
        (n / 3600) % 24,
        (n / 60) % 60,
        n % 60
    )
}

fn jsonl(lines: &[serde_json::Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for l in lines {
        out.extend_from_slice(serde_json::to_string(l).unwrap().as_bytes());
        out.push(b'\n');
    }
    out
}

/// What a synthetic Codex, OpenClaw, Gemini or generic record group does.
#[derive(Debug, Clone)]
enum Act {
    /// A prompt and a reply, maybe with a tool call and its output.
    Exchange { words: usize, tool: bool },
    /// Injected context written as a user message (Codex), or a system line.
    Scaffold,
    /// A compaction summary.
    Compact,
    /// Codex: a second `session_meta`. OpenClaw: a repeated id. Gemini: `$set` of the list.
    /// Generic: a record of another session.
    Odd,
    /// OpenClaw: continue from `back` entries ago. Gemini: `$rewindTo` a message `back` ago.
    Back { back: usize },
    /// Gemini: rewrite the message `back` ago (the CLI rewrites a reply as its tools finish).
    Rewrite { back: usize },
}

fn act() -> impl Strategy<Value = Act> {
    prop_oneof![
        12 => (1usize..80, any::<bool>()).prop_map(|(words, tool)| Act::Exchange { words, tool }),
        1 => Just(Act::Scaffold),
        1 => Just(Act::Compact),
        1 => Just(Act::Odd),
        2 => (1usize..10).prop_map(|back| Act::Back { back }),
        2 => (0usize..6).prop_map(|back| Act::Rewrite { back }),
    ]
}

/// A Codex rollout: the envelope layout (both logs from act `events_from` on, so appends can
/// switch the user prompts' source) or the pre-envelope one.
fn codex_rollout(acts: &[Act], envelope: bool, events_from: usize) -> Vec<u8> {
    let sid = "0199aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee";
    let mut lines = Vec::new();
    let mut n = 0;
    let mut rec = |lines: &mut Vec<serde_json::Value>, kind: &str, payload: serde_json::Value| {
        n += 1;
        if envelope {
            lines.push(json!({"timestamp": ts(n), "type": kind, "payload": payload}));
        } else if kind == "response_item" {
            lines.push(payload);
        }
    };
    if envelope {
        rec(
            &mut lines,
            "session_meta",
            json!({"id": sid, "cwd": "/w", "source": "cli"}),
        );
    } else {
        lines.push(json!({"id": sid, "timestamp": "2025-08-20T13:20:47.060Z"}));
        lines.push(json!({"record_type": "state"}));
    }
    for (i, a) in acts.iter().enumerate() {
        let events = i >= events_from;
        match a {
            Act::Exchange { words, tool } => {
                let t = text("u", i, *words);
                rec(
                    &mut lines,
                    "response_item",
                    json!({"type": "message", "role": "user",
                    "content": [{"type": "input_text", "text": t}]}),
                );
                if events {
                    rec(
                        &mut lines,
                        "event_msg",
                        json!({"type": "user_message", "message": t}),
                    );
                }
                if *tool {
                    rec(
                        &mut lines,
                        "response_item",
                        json!({"type": "function_call",
                        "name": "shell", "arguments": format!("{{\"command\":[\"make\",\"t{i}\"]}}"),
                        "call_id": format!("c{i}")}),
                    );
                    rec(
                        &mut lines,
                        "response_item",
                        json!({"type": "function_call_output",
                        "call_id": format!("c{i}"), "output": text("o", i, *words)}),
                    );
                }
                let r = text("a", i, words * 2);
                rec(
                    &mut lines,
                    "response_item",
                    json!({"type": "message", "role": "assistant",
                    "content": [{"type": "output_text", "text": r}]}),
                );
                if events {
                    rec(
                        &mut lines,
                        "event_msg",
                        json!({"type": "agent_message", "message": r}),
                    );
                }
            }
            Act::Scaffold => rec(
                &mut lines,
                "response_item",
                json!({"type": "message",
                "role": "user", "content": [{"type": "input_text",
                "text": format!("<environment_context>cwd {i}</environment_context>")}]}),
            ),
            Act::Compact => rec(
                &mut lines,
                "compacted",
                json!({"message": text("c", i, 20),
                "replacement_history": []}),
            ),
            Act::Odd => rec(
                &mut lines,
                "session_meta",
                json!({"id": "other", "cwd": "/o"}),
            ),
            Act::Back { .. } | Act::Rewrite { .. } => {
                rec(
                    &mut lines,
                    "turn_context",
                    json!({"cwd": "/w", "model": "m"}),
                );
            }
        }
    }
    jsonl(&lines)
}

/// A pi / OpenClaw session: a tree of entries (or a linear v1 log without ids), tool results
/// whose `parentId` is the tool call's id, rewinds, compactions, repeated ids.
fn openclaw_session(acts: &[Act], linear: bool) -> Vec<u8> {
    let mut lines = vec![json!({"type": "session", "version": 3, "id": "pi-1",
        "timestamp": ts(0), "cwd": "/w"})];
    let mut ids: Vec<String> = Vec::new();
    let mut parent: Option<String> = None;
    let mut n = 0;
    let mut entry = |lines: &mut Vec<serde_json::Value>,
                     ids: &mut Vec<String>,
                     parent: &mut Option<String>,
                     mut v: serde_json::Value,
                     link: Option<String>| {
        n += 1;
        let id = format!("e{n:07x}");
        let o = v.as_object_mut().unwrap();
        if !linear {
            o.entry("id").or_insert(json!(id));
            o.insert("parentId".into(), json!(link.or_else(|| parent.clone())));
        }
        o.insert("timestamp".into(), json!(ts(n)));
        let id = o
            .get("id")
            .and_then(|i| i.as_str())
            .unwrap_or(&id)
            .to_owned();
        ids.push(id.clone());
        *parent = Some(id);
        lines.push(v);
    };
    for (i, a) in acts.iter().enumerate() {
        match a {
            Act::Exchange { words, tool } => {
                entry(
                    &mut lines,
                    &mut ids,
                    &mut parent,
                    json!({"type": "message",
                    "message": {"role": "user", "content": [{"type": "text",
                    "text": text("u", i, *words)}]}}),
                    None,
                );
                let mut content = vec![json!({"type": "text", "text": text("a", i, words * 2)})];
                if *tool {
                    content.push(json!({"type": "toolCall", "id": format!("call{i}"),
                        "name": "bash", "arguments": {"command": format!("make t{i}")}}));
                }
                entry(
                    &mut lines,
                    &mut ids,
                    &mut parent,
                    json!({"type": "message",
                    "message": {"role": "assistant", "content": content}}),
                    None,
                );
                if *tool {
                    entry(
                        &mut lines,
                        &mut ids,
                        &mut parent,
                        json!({"type": "message",
                        "message": {"role": "toolResult", "toolCallId": format!("call{i}"),
                        "content": [{"type": "text", "text": text("o", i, *words)}]}}),
                        Some(format!("call{i}")),
                    );
                }
            }
            Act::Scaffold => entry(
                &mut lines,
                &mut ids,
                &mut parent,
                json!({"type": "model_change", "provider": "p", "modelId": "m"}),
                None,
            ),
            Act::Compact => entry(
                &mut lines,
                &mut ids,
                &mut parent,
                json!({"type": "compaction",
                "summary": text("c", i, 20), "details": {"readFiles": ["a.rs"]}}),
                None,
            ),
            Act::Odd => {
                if let Some(old) = ids.first().cloned() {
                    entry(
                        &mut lines,
                        &mut ids,
                        &mut parent,
                        json!({"type": "message", "id": old,
                        "message": {"role": "user", "content": text("r", i, 4)}}),
                        None,
                    );
                }
            }
            Act::Back { back } | Act::Rewrite { back } => {
                parent = ids.len().checked_sub(back + 1).map(|j| ids[j].clone());
            }
        }
    }
    jsonl(&lines)
}

/// A Gemini CLI JSONL upsert log: replies rewritten in place as their tools finish, rewinds,
/// whole-list `$set`s, metadata patches.
fn gemini_log(acts: &[Act]) -> Vec<u8> {
    let mut lines = vec![
        json!({"sessionId": "gem-1", "projectHash": "h", "startTime": ts(0),
        "lastUpdated": ts(0), "kind": "main"}),
    ];
    let mut msgs: Vec<serde_json::Value> = Vec::new();
    let mut n = 0;
    for (i, a) in acts.iter().enumerate() {
        n += 1;
        match a {
            Act::Exchange { words, tool } => {
                let u = json!({"id": format!("m{n}u"), "timestamp": ts(n), "type": "user",
                    "content": [{"text": text("u", i, *words)}]});
                let mut g = json!({"id": format!("m{n}g"), "timestamp": ts(n), "type": "gemini",
                    "content": text("a", i, words * 2)});
                lines.push(u.clone());
                msgs.push(u);
                if *tool {
                    // First written without the result, then rewritten with it.
                    g["toolCalls"] = json!([{"id": format!("t{i}"), "name": "run_shell_command",
                        "args": {"command": format!("make t{i}")}, "status": "executing"}]);
                    lines.push(g.clone());
                    g["toolCalls"][0]["status"] = json!("success");
                    g["toolCalls"][0]["result"] = json!([{"functionResponse": {"response":
                        {"output": text("o", i, *words)}}}]);
                }
                lines.push(g.clone());
                msgs.push(g);
                lines.push(json!({"$set": {"lastUpdated": ts(n)}}));
            }
            Act::Scaffold => {
                let m = json!({"id": format!("m{n}i"), "type": "info", "content": "note"});
                lines.push(m.clone());
                msgs.push(m);
            }
            Act::Compact => {
                lines.push(json!({"$set": {"messages": msgs.clone(), "summary": text("t", i, 3)}}));
            }
            Act::Odd => lines.push(json!({"$set": {"summary": text("t", i, 3)}})),
            Act::Back { back } => {
                if let Some(j) = msgs.len().checked_sub(back + 1) {
                    lines.push(json!({"$rewindTo": msgs[j]["id"].clone()}));
                    msgs.truncate(j);
                }
            }
            Act::Rewrite { back } => {
                if let Some(j) = msgs.len().checked_sub(back + 1) {
                    let mut m = msgs[j].clone();
                    m["content"] = json!(text("w", i, 6));
                    lines.push(m.clone());
                    msgs[j] = m;
                }
            }
        }
    }
    jsonl(&lines)
}

/// Generic role/content lines, with tool records and now and then another session's record.
fn generic_lines(acts: &[Act]) -> Vec<u8> {
    let mut lines = Vec::new();
    let mut n = 0;
    for (i, a) in acts.iter().enumerate() {
        let mut rec = |lines: &mut Vec<serde_json::Value>,
                       role: &str,
                       content: String,
                       extra: serde_json::Value| {
            n += 1;
            let mut v = json!({"id": format!("r{n}"), "role": role, "content": content,
                "timestamp": ts(n)});
            if let serde_json::Value::Object(x) = extra {
                v.as_object_mut().unwrap().extend(x);
            }
            lines.push(v);
        };
        match a {
            Act::Exchange { words, tool } => {
                rec(&mut lines, "user", text("u", i, *words), json!({}));
                if *tool {
                    rec(
                        &mut lines,
                        "tool_call",
                        String::new(),
                        json!({"tool_name": "bash",
                        "parameters": {"command": format!("make t{i}")}}),
                    );
                    rec(&mut lines, "tool_result", text("o", i, *words), json!({}));
                }
                rec(&mut lines, "assistant", text("a", i, words * 2), json!({}));
            }
            Act::Scaffold | Act::Back { .. } | Act::Rewrite { .. } => {
                rec(&mut lines, "system", "be brief".into(), json!({}));
            }
            Act::Compact => rec(&mut lines, "assistant", text("c", i, 10), json!({})),
            Act::Odd => rec(
                &mut lines,
                "user",
                text("f", i, 5),
                json!({"session_id": "other"}),
            ),
        }
    }
    jsonl(&lines)
}

/// Keep only the acts that leave an append parsable alone, for half the cases.
fn plain(acts: Vec<Act>, only_plain: bool) -> Vec<Act> {
    acts.into_iter()
        .filter(|a| !only_plain || matches!(a, Act::Exchange { .. } | Act::Scaffold | Act::Compact))
        .collect()
}

fn cut_and_compare(
    rel: &str,
    bytes: &[u8],
    cuts: &[prop::sample::Index],
    format: Option<Format>,
) -> Result<u64, TestCaseError> {
    let ends = line_ends(bytes);
    let offsets: Vec<usize> = cuts.iter().map(|i| ends[i.index(ends.len())]).collect();
    let (appended, full, resumed) = append_in_pieces(Path::new(rel), bytes, &offsets, format);
    prop_assert!(appended == full, "{}", diff(&appended, &full));
    Ok(resumed)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn appended_codex_rollout_equals_full_index(
        acts in prop::collection::vec(act(), 30..60),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 1..5),
        envelope in any::<bool>(),
        // Both logs from the start, or never the event log: a switch half-way re-numbers the
        // turns before it on a full parse, and a chunk whose text is already indexed keeps its
        // first turn numbers (a store limitation, resumed or not; the switch's fallback is
        // checked in `appends_that_reach_back_fall_back_to_a_full_parse`).
        events_from in prop_oneof![Just(0usize), Just(usize::MAX)],
        only_plain in any::<bool>(),
        picks in prop::collection::vec(any::<prop::sample::Index>(), 1..3),
        mid in any::<bool>(),
    ) {
        real_samples_of(Format::Codex, &picks, mid)?;
        let bytes = codex_rollout(&plain(acts, only_plain), envelope, events_from);
        cut_and_compare("s/rollout-2026-01-01T00-00-00-0199aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee.jsonl",
            &bytes, &cuts, None)?;
    }

    #[test]
    fn appended_openclaw_session_equals_full_index(
        acts in prop::collection::vec(act(), 30..60),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 1..5),
        linear in any::<bool>(),
        only_plain in any::<bool>(),
        picks in prop::collection::vec(any::<prop::sample::Index>(), 1..3),
        mid in any::<bool>(),
    ) {
        real_samples_of(Format::Openclaw, &picks, mid)?;
        let bytes = openclaw_session(&plain(acts, only_plain), linear);
        cut_and_compare("pi/2026_s.jsonl", &bytes, &cuts, Some(Format::Openclaw))?;
    }

    #[test]
    fn appended_gemini_log_equals_full_index(
        acts in prop::collection::vec(act(), 30..60),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 1..5),
        only_plain in any::<bool>(),
        picks in prop::collection::vec(any::<prop::sample::Index>(), 1..3),
        mid in any::<bool>(),
    ) {
        real_samples_of(Format::Gemini, &picks, mid)?;
        let bytes = gemini_log(&plain(acts, only_plain));
        cut_and_compare("chats/session-2026-02-01T00-00-gem1.jsonl", &bytes, &cuts, None)?;
    }

    #[test]
    fn appended_generic_lines_equal_full_index(
        acts in prop::collection::vec(act(), 30..60),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 1..5),
        only_plain in any::<bool>(),
    ) {
        let bytes = generic_lines(&plain(acts, only_plain));
        cut_and_compare("g/log.jsonl", &bytes, &cuts, None)?;
    }
}

/// Plain appends of each format: every re-index after the first resumes, and reads little
/// more than the appended bytes.
#[test]
fn plain_appends_of_every_format_resume() {
    let acts: Vec<Act> = (0..40)
        .map(|i| Act::Exchange {
            words: 10 + i % 7,
            tool: i % 2 == 0,
        })
        .collect();
    // (file name, first version, appended version, forced format)
    type Case<'a> = (&'a str, Vec<u8>, Vec<u8>, Option<Format>);
    let cases: [Case; 5] = [
        (
            "s/rollout-x-0199aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee.jsonl",
            codex_rollout(&acts[..38], true, 0),
            codex_rollout(&acts, true, 0),
            None,
        ),
        (
            "s/rollout-y-0199aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee.jsonl",
            codex_rollout(&acts[..38], false, 0),
            codex_rollout(&acts, false, 0),
            None,
        ),
        (
            "pi/s.jsonl",
            openclaw_session(&acts[..38], false),
            openclaw_session(&acts, false),
            None,
        ),
        (
            "chats/session-g.jsonl",
            gemini_log(&acts[..38]),
            gemini_log(&acts),
            None,
        ),
        (
            "g/log.jsonl",
            generic_lines(&acts[..38]),
            generic_lines(&acts),
            None,
        ),
    ];
    for (rel, head, bytes, format) in cases {
        assert!(bytes.starts_with(&head), "{rel}");
        let tmp = tempfile::tempdir().unwrap();
        let (root, home) = (tmp.path().join("a"), tmp.path().join("home"));
        let file = root.join(rel);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, &head).unwrap();
        index(&home, &root, format);
        std::fs::write(&file, &bytes).unwrap();
        let again = index(&home, &root, format);
        assert_eq!((again.files_indexed, again.files_resumed), (1, 1), "{rel}");
        let appended = (bytes.len() - head.len()) as u64;
        assert!(
            again.bytes_parsed > appended && again.bytes_parsed < appended * 2,
            "{rel}: {again:?}"
        );
        let (a, f, resumed) = append_in_pieces(Path::new(rel), &bytes, &[head.len()], format);
        assert_eq!(a, f, "{rel}");
        assert_eq!(resumed, 1, "{rel}");
    }
}

/// Appends that change what came before them are parsed whole, and end equal.
#[test]
fn appends_that_reach_back_fall_back_to_a_full_parse() {
    let acts: Vec<Act> = (0..30)
        .map(|i| Act::Exchange {
            words: 12,
            tool: i % 3 == 0,
        })
        .collect();
    let with = |extra: Act| {
        let mut a = acts.clone();
        a.push(extra);
        a.push(Act::Exchange {
            words: 9,
            tool: false,
        });
        a
    };
    let cases: Vec<(&str, Vec<u8>, Vec<u8>)> = vec![
        // The first `event_msg` prompt switches every user turn to the event log.
        (
            "s/rollout-a-0199aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee.jsonl",
            codex_rollout(&acts, true, 99),
            codex_rollout(&with(Act::Scaffold), true, 30),
        ),
        (
            "s/rollout-b-0199aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee.jsonl",
            codex_rollout(&acts, true, 0),
            codex_rollout(&with(Act::Odd), true, 0),
        ),
        (
            "pi/rewind.jsonl",
            openclaw_session(&acts, false),
            openclaw_session(&with(Act::Back { back: 20 }), false),
        ),
        (
            "pi/repeat.jsonl",
            openclaw_session(&acts, false),
            openclaw_session(&with(Act::Odd), false),
        ),
        (
            "chats/rewind.jsonl",
            gemini_log(&acts),
            gemini_log(&with(Act::Back { back: 12 })),
        ),
        (
            "chats/rewrite.jsonl",
            gemini_log(&acts),
            gemini_log(&with(Act::Rewrite { back: 9 })),
        ),
        (
            "chats/set.jsonl",
            gemini_log(&acts),
            gemini_log(&with(Act::Compact)),
        ),
        (
            "g/two.jsonl",
            generic_lines(&acts),
            generic_lines(&with(Act::Odd)),
        ),
    ];
    for (rel, head, bytes) in cases {
        assert!(bytes.starts_with(&head), "{rel}");
        let (a, f, resumed) = append_in_pieces(Path::new(rel), &bytes, &[head.len()], None);
        assert_eq!(resumed, 0, "{rel}");
        assert_eq!(a, f, "{rel}");
    }
}

/// A resume state that is missing or damaged (a crash, a manual edit) only costs a full parse;
/// a manifest from before resume states had their own files still opens.
#[test]
fn missing_damaged_or_old_inline_resume_state_falls_back() {
    let acts: Vec<Act> = (0..30)
        .map(|_| Act::Exchange {
            words: 12,
            tool: true,
        })
        .collect();
    let head = generic_lines(&acts[..28]);
    let bytes = generic_lines(&acts);
    for damage in ["delete", "corrupt", "old"] {
        let tmp = tempfile::tempdir().unwrap();
        let (root, home) = (tmp.path().join("a"), tmp.path().join("home"));
        std::fs::create_dir_all(&root).unwrap();
        let file = root.join("log.jsonl");
        std::fs::write(&file, &head).unwrap();
        index(&home, &root, None);
        let states: Vec<PathBuf> = std::fs::read_dir(home.join("resume"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(states.len(), 1);
        match damage {
            "delete" => std::fs::remove_file(&states[0]).unwrap(),
            "corrupt" => std::fs::write(&states[0], b"{\"format\":\"generic\"}").unwrap(),
            _ => {
                // The layout before: the point inline under `resume`, no `resume/` folder.
                std::fs::remove_dir_all(home.join("resume")).unwrap();
                let path = home.join("manifest.json");
                let mut m: serde_json::Value =
                    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
                for e in m["files"].as_object_mut().unwrap().values_mut() {
                    let o = e.as_object_mut().unwrap();
                    o.remove("resume_state");
                    o.insert(
                        "resume".into(),
                        json!({"point": {"claude": {}}, "head_keys": 1}),
                    );
                }
                std::fs::write(&path, serde_json::to_vec(&m).unwrap()).unwrap();
            }
        }
        std::fs::write(&file, &bytes).unwrap();
        let again = index(&home, &root, None);
        assert_eq!(
            (again.files_indexed, again.files_resumed),
            (1, 0),
            "{damage}"
        );
        // The full parse wrote a fresh state; the next append resumes from it.
        let more = generic_lines(&[acts.clone(), acts[..2].to_vec()].concat());
        std::fs::write(&file, &more).unwrap();
        assert_eq!(index(&home, &root, None).files_resumed, 1, "{damage}");
        let named = std::fs::read_dir(home.join("resume")).unwrap().count();
        assert_eq!(named, 1, "{damage}: states no longer named are deleted");
    }
}
