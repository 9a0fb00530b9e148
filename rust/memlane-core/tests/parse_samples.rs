//! Every corpus sample of a supported format, parsed and checked turn by turn.
//!
//! The corpus lives outside the repository (`<repo>/../shared/data`); tests skip with a
//! message when it is absent.

use std::path::{Path, PathBuf};

use memlane_core::model::{Format, ParsedFile, Role, Session};
use memlane_core::parse;

fn data_dir() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data");
    if p.is_dir() {
        Some(p)
    } else {
        eprintln!(
            "SKIP: sample data not found at {} (expected ../shared/data next to the repo)",
            p.display()
        );
        None
    }
}

/// Path of a sample under `shared/data`, or return from the test when the corpus is absent.
macro_rules! sample {
    ($rel:expr) => {
        match data_dir() {
            Some(d) => {
                let p = d.join($rel);
                if !p.exists() {
                    eprintln!("SKIP: sample {} not found", p.display());
                    return;
                }
                p
            }
            None => return,
        }
    };
}

fn parse_ok(path: &Path) -> ParsedFile {
    parse::parse_file(path, None).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn roles(s: &Session) -> Vec<Role> {
    s.turns.iter().map(|t| t.role).collect()
}

fn ms(iso: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(iso)
        .unwrap()
        .timestamp_millis()
}

fn all_text(p: &ParsedFile) -> String {
    p.sessions
        .iter()
        .flat_map(|s| s.turns.iter().map(|t| t.text.as_str()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn session<'a>(p: &'a ParsedFile, id: &str) -> &'a Session {
    p.sessions.iter().find(|s| s.id == id).unwrap_or_else(|| {
        panic!(
            "no session {id}; have {:?}",
            p.sessions.iter().map(|s| &s.id).collect::<Vec<_>>()
        )
    })
}

use Role::{Assistant as A, Summary as S, User as U};

// ---------------------------------------------------------------------------------------------
// Claude Code

#[test]
fn claude_simonw_minimal_session() {
    let path = sample!("transcripts/claude-code/simonw-sample_session.jsonl");
    let p = parse_ok(&path);
    assert_eq!(p.format, Some(Format::ClaudeCode));
    assert!(p.skipped.is_empty(), "{:?}", p.skipped);
    assert_eq!(p.complete_bytes, std::fs::metadata(&path).unwrap().len());
    assert_eq!(p.sessions.len(), 1);
    let s = &p.sessions[0];
    assert_eq!(s.id, "simonw-sample_session");
    assert_eq!(s.parent_id, None);
    assert_eq!(s.title.as_deref(), Some("Test session for JSONL parsing"));
    assert_eq!(s.cwd.as_deref(), Some("/project"));
    assert_eq!(roles(s), [U, A, U, A]);
    assert_eq!(s.turns[0].text, "Create a hello world function");
    assert_eq!(s.turns[0].timestamp, Some(ms("2025-12-24T10:00:00Z")));
    assert!(s.turns.iter().all(|t| t.timestamp.is_some()));
    let a = &s.turns[1];
    assert_eq!(a.tools, ["Write", "Bash"]);
    assert_eq!(a.files, ["/project/hello.py"]);
    assert!(a.text.starts_with("I'll create that function for you.\n[tool Write] /project/hello.py\n[result] File written successfully"));
    assert!(a
        .text
        .contains("[tool Bash] git add . && git commit -m 'Add hello function'"));
    assert_eq!(a.ids, ["msg-002", "msg-003", "msg-004", "msg-005"]);
    assert_eq!(s.turns[2].text, "Now add a goodbye function");
    assert_eq!(s.turns[3].text, "Done! The hello function is ready.");
}

#[test]
fn claude_dag_follows_active_branch_and_keeps_compaction_summary() {
    let path = sample!("transcripts/claude-code/daaain-dag_compact_after_rewind.jsonl");
    let p = parse_ok(&path);
    assert_eq!(p.format, Some(Format::ClaudeCode));
    assert_eq!(p.sessions.len(), 1);
    let s = &p.sessions[0];
    assert_eq!(s.id, "daaain-dag_compact_after_rewind");
    assert_eq!(roles(s), [U, A, U, A, U, A, S, U, A]);
    let texts: Vec<&str> = s.turns.iter().map(|t| t.text.as_str()).collect();
    assert_eq!(
        texts[..6],
        [
            "Start",
            "Ready",
            "Second attempt",
            "Second answer",
            "Keep going",
            "Kept going"
        ]
    );
    // The rewound branch (b1u/b1a) is not on the active path.
    assert!(!all_text(&p).contains("First attempt"));
    assert!(!all_text(&p).contains("First answer"));
    // compact_boundary links across compaction via logicalParentUuid; the summary stays a Summary.
    assert!(texts[6].starts_with("This session is being continued from a previous conversation"));
    assert_eq!(s.turns[6].ids, ["cs"]);
    assert_eq!(texts[7..], ["After compaction", "Final answer"]);
    assert!(s.turns.iter().all(|t| t.timestamp.is_some()));
    assert_eq!(s.turns[8].timestamp, Some(ms("2025-07-01T10:41:00Z")));
}

#[test]
fn claude_polylogue_edge_cases() {
    let path = sample!("transcripts/claude-code/polylogue-claude-normalization-main.jsonl");
    let p = parse_ok(&path);
    assert_eq!(p.format, Some(Format::ClaudeCode));
    assert!(p.skipped.is_empty(), "{:?}", p.skipped);
    let ids: Vec<&str> = p.sessions.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "polylogue-claude-normalization-main",
            "polylogue-claude-normalization-main:sidechain",
            "claude-normalization-other"
        ]
    );
    let main = &p.sessions[0];
    assert_eq!(roles(main), [U, A]);
    assert_eq!(main.turns[0].text, "Review the parser.");
    assert_eq!(main.turns[0].timestamp, Some(ms("2026-07-01T10:00:00Z")));
    let a = &main.turns[1].text;
    assert!(a.starts_with("Running the focused checks.\n[tool Bash] python -m pytest -q tests/unit/sources\n[tool Read] /workspace/polylogue/missing.py"));
    assert!(a.contains("[result] Command running in background with ID: task-bg."));
    assert!(
        a.ends_with("Checking a foreground failure.\n[tool Bash] false\n[error] command failed")
    );
    assert_eq!(main.turns[1].tools, ["Bash", "Read"]);
    assert_eq!(main.turns[1].files, ["/workspace/polylogue/missing.py"]);
    let text = all_text(&p);
    // duplicate uuid (first wins), slash-command envelope, isMeta, interrupt marker, thinking.
    assert!(!text.contains("Conflicting duplicate"));
    assert!(!text.contains("command-name"));
    assert!(!text.contains("runtime-only workspace facts"));
    assert!(!text.contains("Request interrupted"));
    assert!(!text.contains("inspect the production route"));
    // inline sidechain line → own session linked to the parent
    let side = &p.sessions[1];
    assert_eq!(
        side.parent_id.as_deref(),
        Some("polylogue-claude-normalization-main")
    );
    assert_eq!(roles(side), [A]);
    assert_eq!(side.turns[0].text, "Normalization complete.");
    // a line of another sessionId → that session, not mixed into this one
    let other = &p.sessions[2];
    assert_eq!(other.parent_id, None);
    assert_eq!(roles(other), [U, A]);
    assert_eq!(other.turns[0].text, "An independent session.");
    assert_eq!(other.turns[1].text, "Other reply.");
}

#[test]
fn claude_jazzyalex_record_type_catalogue() {
    let path = sample!("transcripts/claude-code/jazzyalex-stage0-claude-small.jsonl");
    let p = parse_ok(&path);
    assert_eq!(p.format, Some(Format::ClaudeCode));
    // ≈25 record types and 30+ attachment/system subtypes: unknown ones are ignored silently.
    // Two sidechain records have a newer sibling (tool result u2b of a1, reply a2 of u2):
    // they are off the active branch, and the report says so.
    assert_eq!(p.skipped, [("abandoned_branch".to_owned(), 2)].into());
    assert_eq!(p.complete_bytes, std::fs::metadata(&path).unwrap().len());
    let main = session(&p, "jazzyalex-stage0-claude-small");
    assert_eq!(main.title.as_deref(), Some("Stage0 small fixture"));
    assert_eq!(roles(main), [A]);
    assert!(main.turns[0]
        .text
        .starts_with("Listing the files.\n[tool Bash] ls\n[result] a.txt"));
    // The fixture's first 22 lines are marked isSidechain: they form a sidechain session.
    let side = session(&p, "jazzyalex-stage0-claude-small:sidechain-sys1");
    assert_eq!(
        side.parent_id.as_deref(),
        Some("jazzyalex-stage0-claude-small")
    );
    assert_eq!(roles(side), [U, A, S]);
    assert_eq!(side.turns[0].text, "Hello");
    assert_eq!(side.turns[0].timestamp, Some(ms("2025-12-16T00:00:01Z")));
    assert!(side.turns[1].text.contains("[tool bash] ls"));
    assert_eq!(side.turns[2].text, "Summary of prior context.");
    let text = all_text(&p);
    assert!(
        !text.contains("Reasoning goes here."),
        "thinking blocks are dropped"
    );
    assert!(
        !text.contains("doesn't want to proceed"),
        "the rejected sibling branch is not active"
    );
}

#[test]
fn claude_showcase_session_and_subagent() {
    let path = sample!("transcripts/claude-code/daaain-minimal_showcase/55550000-0000-4000-8000-000000000001.jsonl");
    let p = parse_ok(&path);
    assert_eq!(p.sessions.len(), 1);
    let s = &p.sessions[0];
    assert_eq!(s.id, "55550000-0000-4000-8000-000000000001");
    assert_eq!(s.cwd.as_deref(), Some("/workspace/example-app"));
    assert_eq!(roles(s), [U, A]);
    assert!(s.turns[0]
        .text
        .starts_with("Give me a tour of the repository"));
    let a = &s.turns[1];
    assert_eq!(
        a.tools,
        [
            "mcp__plugin_showcase_example__inspect_repository_structure",
            "mcp__plugin_showcase_example__refresh_search_index",
            "ScheduleWakeup",
            "Agent"
        ]
    );
    assert!(a
        .text
        .contains("[tool Agent] Survey the web module\n[tool Agent] Survey the jobs module"));
    // tool_result content arrays are flattened; results are capped.
    assert!(a
        .text
        .contains("[result] The jobs module defines three scheduled jobs"));
    assert!(
        a.text.contains("\"status\": \"deprecated\""),
        "a 1.4 KB result is under the cap"
    );
    assert!(a.text.ends_with("**jobs** runs three scheduled jobs."));

    let sub_path =
        path.with_file_name("55550000-0000-4000-8000-000000000001/subagents/agent-showcol1.jsonl");
    let sub = parse_ok(&sub_path);
    assert_eq!(sub.format, Some(Format::ClaudeCode));
    assert_eq!(sub.sessions.len(), 1);
    let s = &sub.sessions[0];
    assert_eq!(s.id, "55550000-0000-4000-8000-000000000001:agent-showcol1");
    assert_eq!(
        s.parent_id.as_deref(),
        Some("55550000-0000-4000-8000-000000000001")
    );
    assert_eq!(
        s.title.as_deref(),
        Some("Survey the web module"),
        "title from agent-showcol1.meta.json"
    );
    assert_eq!(roles(s), [U, A]);
    assert_eq!(
        s.turns[0].text,
        "Survey src/web and report its layout, with a screenshot."
    );
    assert!(s.turns[1].text.starts_with("## The web module"));
    assert!(s.turns.iter().all(|t| t.timestamp.is_some()));

    let meta = sub_path.with_file_name("agent-showcol1.meta.json");
    assert!(!parse::is_transcript_candidate(&meta));
    assert_eq!(parse_ok(&meta).format, None);
}

// ---------------------------------------------------------------------------------------------
// Codex

const DAAAIN_ROLLOUT: &str =
    "transcripts/codex/daaain/sessions/2026/01/02/rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl";

#[test]
fn codex_duplicated_logs_yield_each_message_once() {
    let path = sample!(DAAAIN_ROLLOUT);
    let p = parse_ok(&path);
    assert_eq!(p.format, Some(Format::Codex));
    assert!(
        p.skipped.is_empty(),
        "unknown record types are not 'skipped': {:?}",
        p.skipped
    );
    assert_eq!(p.sessions.len(), 1);
    let s = &p.sessions[0];
    assert_eq!(s.id, "11111111-1111-4111-8111-111111111111");
    assert_eq!(s.cwd.as_deref(), Some("/workspace/synthetic-project"));
    assert_eq!(roles(s), [U, A]);
    assert_eq!(s.turns[0].text, "List the synthetic files.");
    assert_eq!(
        s.turns[0].timestamp,
        Some(ms("2026-01-02T03:04:07Z")),
        "prompt taken from event_msg"
    );
    let text = all_text(&p);
    assert_eq!(text.matches("List the synthetic files.").count(), 1);
    assert_eq!(
        text.matches("The synthetic files are alpha.txt and beta.txt.")
            .count(),
        1
    );
    let a = &s.turns[1];
    assert_eq!(
        a.tools,
        ["exec_command", "apply_patch", "mcp__synthetic__lookup"]
    );
    assert_eq!(a.files, ["gamma.txt"]);
    assert_eq!(
        a.text,
        "[tool exec_command] find . -maxdepth 1 -type f\n[result] ./alpha.txt\n./beta.txt\n\
         [tool apply_patch] gamma.txt\n[result] Done!\n[tool mcp__synthetic__lookup] fixture\n\
         [result] {\"status\":\"ok\"}\nThe synthetic files are alpha.txt and beta.txt."
    );
    assert!(!text.contains("SYNTHETIC_ENCRYPTED"));
    assert!(
        !text.contains("I will inspect"),
        "reasoning summaries are not indexed"
    );
}

#[test]
fn codex_malformed_line_is_counted_and_good_turns_survive() {
    let path = sample!(
        "transcripts/codex/daaain/malformed/rollout-66666666-6666-4666-8666-666666666666.jsonl"
    );
    let p = parse_ok(&path);
    assert_eq!(p.format, Some(Format::Codex));
    assert_eq!(p.skipped.get("invalid_json"), Some(&1));
    assert_eq!(p.skipped.len(), 1);
    // The bad line ends with a newline: it is complete, just broken.
    assert_eq!(p.complete_bytes, std::fs::metadata(&path).unwrap().len());
    let s = &p.sessions[0];
    assert_eq!(s.id, "66666666-6666-4666-8666-666666666666");
    assert_eq!(roles(s), [U]);
    assert_eq!(s.turns[0].text, "Safe line before malformed input.");
    assert_eq!(s.turns[0].timestamp, Some(ms("2026-02-01T00:00:01Z")));
}

#[test]
fn codex_pre_envelope_uses_header_timestamp() {
    let path = sample!(
        "transcripts/codex/daaain/sessions/rollout-44444444-4444-4444-8444-444444444444.jsonl"
    );
    let p = parse_ok(&path);
    assert_eq!(p.format, Some(Format::Codex));
    let s = &p.sessions[0];
    assert_eq!(s.id, "44444444-4444-4444-8444-444444444444");
    assert_eq!(roles(s), [U, A]);
    assert_eq!(s.turns[0].text, "Open the synthetic legacy session.");
    assert_eq!(s.turns[1].text, "The synthetic legacy session is open.");
    let header = ms("2026-01-04T05:06:07Z");
    assert!(s.turns.iter().all(|t| t.timestamp == Some(header)));
}

#[test]
fn codex_real_capture_strips_scaffolding() {
    let path = sample!("transcripts/codex/simonw-sample_codex_session.jsonl");
    let p = parse_ok(&path);
    assert_eq!(p.format, Some(Format::Codex));
    let s = &p.sessions[0];
    assert_eq!(s.id, "019b64e5-57fa-7463-b644-fba7e456f905");
    assert_eq!(
        s.cwd.as_deref(),
        Some("/Users/macmini/Code/homelab-migration")
    );
    // The head of a real rollout: the prompt (logged twice) and no answer yet.
    assert_eq!(roles(s), [U]);
    assert!(s.turns[0]
        .text
        .starts_with("can you analyse the MD files in this directory"));
    assert_eq!(s.turns[0].timestamp, Some(ms("2025-12-28T12:21:44.491Z")));
    let text = all_text(&p);
    assert!(!text.contains("AGENTS.md"));
    assert!(!text.contains("environment_context"));
}

#[test]
fn codex_jazzyalex_shape_catalogue() {
    let path = sample!("transcripts/codex/jazzyalex-stage0-codex-small.jsonl");
    let p = parse_ok(&path);
    assert_eq!(p.format, Some(Format::Codex));
    assert!(p.skipped.is_empty(), "{:?}", p.skipped);
    assert_eq!(
        p.sessions.len(),
        1,
        "several session_meta lines still make one session"
    );
    let s = &p.sessions[0];
    assert_eq!(
        s.id, "019fc8be-3658-7ca3-9e29-000000000000",
        "first session_meta wins"
    );
    assert_eq!(s.cwd.as_deref(), Some("/tmp/repo"));
    // 5 non-empty `compacted` records become summaries (the empty one is dropped).
    assert_eq!(roles(s), [U, A, S, S, U, S, U, S, A, S, A]);
    assert_eq!(s.turns[0].text, "List the files");
    assert_eq!(s.turns[0].timestamp, Some(ms("2026-08-03T10:48:56Z")));
    let a = &s.turns[1];
    assert_eq!(a.tools, ["shell", "tool_search", "web_search"]);
    assert!(a
        .text
        .starts_with("[tool shell] ls\n[tool shell] ls\n[result] a.txt"));
    assert_eq!(all_text(&p).matches("Found 2 files.").count(), 1);
}

#[test]
fn codex_zst_equals_plain() {
    let path = sample!(DAAAIN_ROLLOUT);
    let plain = parse_ok(&path);
    let raw = std::fs::read(&path).unwrap();
    let compressed = zstd::encode_all(&raw[..], 3).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let zpath = dir.path().join(format!(
        "{}.zst",
        path.file_name().unwrap().to_string_lossy()
    ));
    std::fs::write(&zpath, &compressed).unwrap();
    assert!(parse::is_transcript_candidate(&zpath));
    assert_eq!(parse::detect(&compressed, &zpath), Some(Format::Codex));
    let z = parse_ok(&zpath);
    assert_eq!(z.format, Some(Format::Codex));
    assert_eq!(z.sessions, plain.sessions);
    assert_eq!(
        z.complete_bytes,
        compressed.len() as u64,
        "complete_bytes of a .zst is its compressed size"
    );
    // a truncated .zst is an error for parse_file, never a panic
    let broken = dir.path().join("rollout-broken.jsonl.zst");
    std::fs::write(&broken, &compressed[..compressed.len() / 2]).unwrap();
    assert!(matches!(
        parse::parse_file(&broken, None),
        Err(memlane_core::Error::Parse { .. })
    ));
}

// ---------------------------------------------------------------------------------------------
// Gemini, OpenClaw / pi

#[test]
fn gemini_jsonl_upsert_log() {
    let path = sample!("transcripts/gemini-cli/jazzyalex-stage0-gemini-jsonl_v040.jsonl");
    let p = parse_ok(&path);
    assert_eq!(p.format, Some(Format::Gemini));
    assert!(p.skipped.is_empty());
    let s = &p.sessions[0];
    assert_eq!(s.id, "gemini_stage0_jsonl");
    assert_eq!(roles(s), [U, A]);
    assert_eq!(s.turns[0].text, "Say hello and list files.");
    assert_eq!(s.turns[0].timestamp, Some(ms("2026-04-29T21:39:33.155Z")));
    let a = &s.turns[1];
    assert_eq!(a.tools, ["run_shell_command"]);
    assert!(a
        .text
        .starts_with("[tool run_shell_command] ls -F\n[result] Output: AgentSessions/\nREADME.md"));
    assert!(a.text.ends_with("Hello! I listed the files."));
    assert_eq!(a.ids, ["g-assistant-1", "g-assistant-2"]);
}

#[test]
fn gemini_legacy_json() {
    let path = sample!("transcripts/gemini-cli/jazzyalex-stage0-gemini-small.json");
    assert!(parse::is_transcript_candidate(&path));
    let p = parse_ok(&path);
    assert_eq!(p.format, Some(Format::Gemini));
    let s = &p.sessions[0];
    assert_eq!(s.id, "session-2026-01-16T18-34-3739ef95");
    assert_eq!(roles(s), [U, A]);
    assert_eq!(s.turns[0].text, "Hello");
    assert_eq!(s.turns[1].text, "Hi!");
    assert_eq!(s.turns[1].timestamp, Some(ms("2026-01-16T18:34:02Z")));
    assert!(
        !all_text(&p).contains("reasoning placeholder"),
        "thoughts are dropped"
    );
}

#[test]
fn openclaw_session_with_tool_result() {
    let path = sample!("transcripts/openclaw-pi/jazzyalex-stage0-openclaw-small.jsonl");
    let p = parse_ok(&path);
    assert_eq!(p.format, Some(Format::Openclaw));
    let s = &p.sessions[0];
    assert_eq!(s.id, "openclaw-stage0-small");
    assert_eq!(s.cwd.as_deref(), Some("/tmp/repo"));
    assert_eq!(roles(s), [U, A]);
    assert_eq!(s.turns[0].text, "List files");
    assert_eq!(s.turns[0].timestamp, Some(ms("2026-02-24T09:00:02Z")));
    assert_eq!(
        s.turns[1].text,
        "Running ls now.\n[tool shell_exec] ls\n[result] main.swift\nResources"
    );
    assert_eq!(s.turns[1].tools, ["shell_exec"]);
}

#[test]
fn pi_session_with_compactions() {
    let path = sample!("transcripts/openclaw-pi/jazzyalex-stage0-pi-small.jsonl");
    let p = parse_ok(&path);
    assert_eq!(p.format, Some(Format::Openclaw));
    let s = &p.sessions[0];
    assert_eq!(s.id, "019e19b4-eb48-746a-aa6b-8dfcfa37954b");
    assert_eq!(s.cwd.as_deref(), Some("/tmp/as-agent-fixture/project"));
    assert_eq!(roles(s), [U, A, S, U, A, S]);
    assert!(s.turns[0].text.starts_with("Read hello.py and summarize"));
    assert_eq!(s.turns[2].text, "hello.py prints a fixture greeting.");
    assert_eq!(s.turns[3].text, "Add one concise follow-up sentence.");
    assert!(s.turns.iter().all(|t| t.timestamp.is_some()));
}

// ---------------------------------------------------------------------------------------------
// Benchmarks and the generic format

#[test]
fn longmemeval_fixture() {
    let path = sample!("transcripts/longmemeval/mycelian-longmemeval_integ.json");
    let p = parse_ok(&path);
    assert_eq!(p.format, Some(Format::Longmemeval));
    assert!(p.skipped.is_empty());
    let ids: Vec<&str> = p.sessions.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "session_001",
            "session_002",
            "session_003",
            "session_004",
            "session_005",
            "session_006",
            "session_007"
        ]
    );
    let s = &p.sessions[0];
    assert_eq!(roles(s), [U, A, U, A]);
    assert!(s.turns[0]
        .text
        .starts_with("I'm working on a new project and I really love Python"));
    assert_eq!(s.turns[1].ids, ["session_001:1"]);
    assert!(s
        .turns
        .iter()
        .all(|t| t.timestamp == Some(ms("2024-01-01T00:00:00Z"))));
    assert_eq!(
        p.sessions[2].turns[0].timestamp,
        Some(ms("2024-01-04T00:00:00Z"))
    );
}

#[test]
fn locomo_full_file() {
    let path = sample!("locomo/locomo10.json");
    let p = parse_ok(&path);
    assert_eq!(p.format, Some(Format::Locomo));
    assert!(p.skipped.is_empty(), "{:?}", p.skipped);
    assert_eq!(p.sessions.len(), 272);
    assert_eq!(
        p.sessions.iter().map(|s| s.turns.len()).sum::<usize>(),
        5882
    );
    let s = &p.sessions[0];
    assert_eq!(s.id, "conv-26:session_1");
    let t = &s.turns[0];
    assert_eq!(
        (t.role, t.speaker.as_deref(), t.ids.as_slice()),
        (U, Some("Caroline"), &["D1:1".to_owned()][..])
    );
    assert_eq!(t.text, "Hey Mel! Good to see you! How have you been?");
    assert_eq!(
        t.timestamp,
        Some(ms("2023-05-08T13:56:00Z")),
        "1:56 pm on 8 May, 2023"
    );
    assert_eq!(
        (s.turns[1].role, s.turns[1].speaker.as_deref()),
        (A, Some("Melanie"))
    );
    let img = s.turns.iter().find(|t| t.ids == ["D1:5"]).unwrap();
    assert!(img
        .text
        .ends_with("[image: a photo of a dog walking past a wall with a painting of a woman]"));
    // sessions are in numeric order, not key order (session_10 after session_9)
    let conv26: Vec<&str> = p
        .sessions
        .iter()
        .filter(|s| s.id.starts_with("conv-26:"))
        .map(|s| s.id.as_str())
        .collect();
    assert_eq!(conv26.len(), 19);
    assert_eq!(conv26[9], "conv-26:session_10");
}

#[test]
fn generic_lines_built_from_longmemeval_turns() {
    let path = sample!("transcripts/longmemeval/mycelian-longmemeval_integ.json");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let turns = v[0]["haystack_sessions"][0].as_array().unwrap();
    let mut jsonl = String::new();
    for (i, t) in turns.iter().enumerate() {
        let line = serde_json::json!({"id": format!("m{i}"), "role": t["role"], "content": t["content"], "timestamp": 1_704_067_200 + i as i64});
        jsonl.push_str(&line.to_string());
        jsonl.push('\n');
        if i == 1 {
            jsonl.push_str(r#"{"id":"c1","role":"tool_call","content":"","tool_name":"Read","parameters":{"file_path":"notes.md"},"timestamp":1704067202}"#);
            jsonl.push('\n');
            jsonl.push_str(r#"{"id":"r1","role":"tool_result","content":"favourite: Python","timestamp":1704067202}"#);
            jsonl.push('\n');
            jsonl.push_str(r#"{"id":"s1","role":"system","content":"you are helpful"}"#);
            jsonl.push('\n');
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("chat-log.jsonl");
    std::fs::write(&file, jsonl).unwrap();
    let p = parse_ok(&file);
    assert_eq!(p.format, Some(Format::Generic));
    let s = &p.sessions[0];
    assert_eq!(s.id, "chat-log");
    assert_eq!(roles(s), [U, A, U, A]);
    assert_eq!(s.turns[0].text, turns[0]["content"].as_str().unwrap());
    assert_eq!(s.turns[0].timestamp, Some(1_704_067_200_000));
    let a = &s.turns[1];
    assert!(a
        .text
        .ends_with("[tool Read] notes.md\n[result] favourite: Python"));
    assert_eq!(a.tools, ["Read"]);
    assert_eq!(a.files, ["notes.md"]);
    assert_eq!(a.ids, ["m1", "c1", "r1"]);
    assert!(!all_text(&p).contains("you are helpful"));
}

// ---------------------------------------------------------------------------------------------
// Cursor, Copilot, Hermes, Aider

#[test]
fn cursor_agent_transcript() {
    let path = sample!("transcripts/cursor-agent/jazzyalex-cursor-test-session.jsonl");
    let p = parse_ok(&path);
    assert_eq!(p.format, Some(Format::Cursor));
    assert!(p.skipped.is_empty(), "{:?}", p.skipped);
    let s = &p.sessions[0];
    assert_eq!(s.id, "jazzyalex-cursor-test-session");
    assert_eq!(roles(s), [U, A, U, A]);
    assert_eq!(s.turns[0].text, "run ls command", "<user_query> unwrapped");
    let a = &s.turns[1];
    assert!(a
        .text
        .starts_with("Running the ls command for you.\n[tool Shell] ls -la /tmp\nHere are the directory contents:"));
    assert_eq!(a.tools, ["Shell"]);
    assert_eq!(s.turns[2].text, "now show me the git status");
    assert_eq!(
        s.turns[3].text,
        "[tool Shell] git status\nThe repository is clean — no uncommitted changes.",
        "the [REDACTED] placeholder is dropped"
    );
    assert!(
        s.turns.iter().all(|t| t.timestamp.is_none()),
        "no times in the file"
    );
}

#[test]
fn copilot_cli_events() {
    let path = sample!("transcripts/copilot-cli/jazzyalex-stage0-copilot-events.jsonl");
    let p = parse_ok(&path);
    assert_eq!(p.format, Some(Format::Copilot));
    assert!(p.skipped.is_empty(), "{:?}", p.skipped);
    let s = &p.sessions[0];
    assert_eq!(s.id, "aaaabbbb-1111-2222-3333-ccccddddeeee");
    assert_eq!(s.cwd.as_deref(), Some("/tmp/project"));
    assert_eq!(roles(s), [U, A]);
    assert_eq!(s.turns[0].text, "List the files");
    assert_eq!(s.turns[0].timestamp, Some(ms("2026-03-26T17:50:35Z")));
    assert_eq!(s.turns[0].ids, ["e2"]);
    let a = &s.turns[1];
    // The call is announced by toolRequests and by tool.execution_start: rendered once.
    assert_eq!(
        a.text,
        "[tool bash] ls\n[result] file1\nfile2\nThe directory contains file1 and file2."
    );
    assert_eq!(a.tools, ["bash"]);
    assert_eq!(a.timestamp, Some(ms("2026-03-26T17:50:36Z")));
    assert_eq!(a.ids, ["e4", "e8"]);
}

#[test]
fn hermes_legacy_session() {
    let path = sample!("transcripts/hermes/jazzyalex-stage0-hermes-small.json");
    assert!(parse::is_transcript_candidate(&path));
    let p = parse_ok(&path);
    assert_eq!(p.format, Some(Format::Hermes));
    let s = &p.sessions[0];
    assert_eq!(s.id, "20260429_hermes_small");
    assert_eq!(s.cwd.as_deref(), Some("/tmp/hermes-small"));
    assert_eq!(roles(s), [U, A]);
    assert_eq!(s.turns[0].text, "Summarize this directory.");
    assert_eq!(
        s.turns[1].text,
        "This directory contains a small Hermes fixture."
    );
    assert!(s
        .turns
        .iter()
        .all(|t| t.timestamp == Some(ms("2026-04-29T20:00:00Z"))));
}

#[test]
fn aider_chat_history() {
    let path = sample!("transcripts/aider/aider-tests-fixtures-chat-history.excerpt.md");
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(parse::detect(&bytes, &path), Some(Format::Aider));
    assert!(parse::is_candidate(&path, None));
    let p = parse_ok(&path);
    assert_eq!(p.format, Some(Format::Aider));
    assert!(p.note.is_none());
    assert!(p.skipped.is_empty(), "{:?}", p.skipped);
    // The excerpt starts mid-conversation: what comes before the first header has no time.
    let pre = session(&p, "aider:aider");
    assert_eq!(roles(pre), [U]);
    assert!(pre.turns[0]
        .text
        .starts_with("# Fix any errors below, if possible."));
    assert_eq!(pre.turns[0].timestamp, None);
    // A launch with only its banner yields no session.
    assert!(!p
        .sessions
        .iter()
        .any(|s| s.id == "aider:aider:2024-08-05T19:33:02"));
    let s = session(&p, "aider:aider:2024-08-05T19:33:32");
    assert_eq!(roles(s), [U, A, U, U]);
    let prompt = &s.turns[0];
    assert_eq!(
        prompt.text,
        "Use the Spinner instead of the inlined custom spinner"
    );
    // Local time with no zone, stored as written.
    assert_eq!(prompt.timestamp, Some(ms("2024-08-05T19:33:32Z")));
    assert_eq!(
        prompt.files,
        ["aider/utils.py"],
        "Added … to the chat (banner)"
    );
    let a = &s.turns[1];
    assert!(a
        .text
        .starts_with("Certainly! I'll modify the `run_install` function"));
    assert!(a.text.contains("<<<<<<< SEARCH\ndef run_install(cmd):"));
    assert!(a.text.ends_with(
        "[result] Applied edit to aider/utils.py\nCommit fd43cd4 feat: Use the Spinner instead of the inlined custom spinner"
    ), "{}", &a.text[a.text.len() - 200..]);
    assert!(!a.text.contains("Tokens: 5,244 sent"));
    assert_eq!(a.tools, ["edit", "commit"]);
    assert_eq!(a.files, ["aider/utils.py"]);
    assert_eq!(a.timestamp, prompt.timestamp);
    assert_eq!(
        (s.turns[2].text.as_str(), s.turns[2].tools.as_slice()),
        ("/diff", &["/diff".to_owned()][..])
    );
    assert_eq!(s.turns[3].text, "/ex");
    let hi = session(&p, "aider:aider:2024-08-05T20:39:59");
    assert_eq!(roles(hi), [U, A, U]);
    assert!(hi.turns[1]
        .text
        .starts_with("It seems like you want to change the greeting"));
    let n = bytes
        .split(|&b| b == b'\n')
        .filter(|l| l.starts_with(b"# aider chat started at "))
        .count();
    assert_eq!(n, 13);
    assert!(p.sessions.len() > 5 && p.sessions.len() <= n + 1);
    for s in &p.sessions {
        assert!(s.id.starts_with("aider:aider"));
        for t in &s.turns {
            assert!(!t.text.contains("\n#### ") && !t.text.starts_with("####"));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Chat-app exports

#[test]
fn chatgpt_export_follows_current_node() {
    let path = sample!("transcripts/chatgpt-export/polylogue-native-conversation-v1.json");
    let p = parse_ok(&path);
    assert_eq!(p.format, Some(Format::Chatgpt));
    assert!(p.skipped.is_empty(), "{:?}", p.skipped);
    assert_eq!(p.complete_bytes, std::fs::metadata(&path).unwrap().len());
    let s = &p.sessions[0];
    assert_eq!(s.id, "chatgpt-fixture-conversation");
    assert_eq!(
        s.title.as_deref(),
        Some("Privacy-safe ChatGPT native fixture")
    );
    assert_eq!(roles(s), [U, A]);
    let u = &s.turns[0];
    assert_eq!(
        u.text,
        "Analyze the attached fixture and create an artifact.\n[image]"
    );
    assert_eq!(u.files, ["input.txt"]);
    assert_eq!(u.timestamp, Some(1_784_164_540_000));
    assert_eq!(u.ids, ["user-message"]);
    let a = &s.turns[1];
    assert_eq!(
        a.text,
        "[tool browser.search] fixture evidence\n[result] Privacy-safe tool result.\nFinal answer. [Download artifact](sandbox:/mnt/data/fixture-result.zip)\n[image]"
    );
    assert_eq!(a.tools, ["browser.search"]);
    assert_eq!(a.timestamp, Some(1_784_164_545_000));
    let text = all_text(&p);
    for gone in [
        "Superseded answer",
        "reasoning trace",
        "reasoning summary",
        "Preserve structured",
    ] {
        assert!(!text.contains(gone), "{gone}");
    }
}

/// The exports as users download them: one ZIP with `conversations.json` (ChatGPT, or
/// Claude.ai under its batch folder), media and sidecars beside it.
#[test]
fn export_zips_parse_like_their_conversation_files() {
    use std::io::Write;
    let chatgpt = sample!("transcripts/chatgpt-export/polylogue-native-conversation-v1.json");
    let claude_ai =
        sample!("transcripts/claude-ai-export/polylogue-claude-ai-representative-sample-00.json");
    let dir = tempfile::tempdir().unwrap();
    for (export, member) in [
        (&chatgpt, "conversations.json"),
        (
            &claude_ai,
            "data-2025-01-02-03-04-05-batch-0000/conversations.json",
        ),
    ] {
        let zip_path = dir.path().join("export.zip");
        let mut zip = zip::ZipWriter::new(std::fs::File::create(&zip_path).unwrap());
        let options = zip::write::SimpleFileOptions::default();
        for (name, data) in [
            ("user.json", b"{\"id\":\"u\"}".to_vec()),
            ("file-abc-photo.png", vec![0x89, b'P', b'N', b'G', 0, 1, 2]),
            ("chat.html", b"<html>not a transcript</html>".to_vec()),
            (member, std::fs::read(export).unwrap()),
        ] {
            zip.start_file(name, options).unwrap();
            zip.write_all(&data).unwrap();
        }
        zip.finish().unwrap();
        assert!(parse::is_transcript_candidate(&zip_path));
        let (zipped, plain) = (parse_ok(&zip_path), parse_ok(export));
        assert_eq!(zipped.format, plain.format);
        assert!(zipped.skipped.is_empty(), "{:?}", zipped.skipped);
        assert_eq!(zipped.sessions, plain.sessions, "{}", export.display());
        assert!(!zipped.sessions.is_empty());
        assert_eq!(
            zipped.complete_bytes,
            std::fs::metadata(&zip_path).unwrap().len()
        );
    }
}

#[test]
fn claude_ai_export() {
    let path =
        sample!("transcripts/claude-ai-export/polylogue-claude-ai-representative-sample-00.json");
    let p = parse_ok(&path);
    assert_eq!(p.format, Some(Format::ClaudeAi));
    assert!(p.skipped.is_empty(), "{:?}", p.skipped);
    let s = &p.sessions[0];
    assert_eq!(s.id, "37f8a88b-17fc-495a-87a0-ca6e0822e8f3");
    assert_eq!(
        s.title.as_deref(),
        Some("Improving search index performance")
    );
    assert_eq!(roles(s), [U, A, U]);
    let u = &s.turns[0];
    // The sample's block types are placeholders: the flattened `text` is used.
    assert!(u.text.starts_with(
        "Can you explain how this works?\n[attachment synthetic-93850] Here's an implementation:"
    ));
    assert_eq!(
        u.files,
        [
            "synthetic-23519",
            "synthetic-39618",
            "synthetic-93850",
            "synthetic-28893",
            "synthetic-99458",
            "synthetic-44597"
        ]
    );
    assert_eq!(u.timestamp, Some(ms("2023-10-07T07:03:01.693Z")));
    assert_eq!(u.ids, ["b289f224-4ac9-478d-8da8-eee40df56ac6"]);
    assert_eq!(
        s.turns[1].text,
        "After reviewing, I found several areas for improvement."
    );
    assert_eq!(s.turns[1].timestamp, Some(ms("2024-05-09T12:29:00.780Z")));
    assert!(
        !all_text(&p).contains("example.com"),
        "block metadata is not text"
    );
}

#[test]
fn slack_channel_day() {
    let path = sample!("transcripts/slack-export/enrique/2016-01-15.json");
    let p = parse_ok(&path);
    assert_eq!(p.format, Some(Format::Slack));
    assert!(p.skipped.is_empty(), "{:?}", p.skipped);
    let s = &p.sessions[0];
    assert_eq!(s.id, "enrique/2016-01-15");
    // Two exchanges: four messages within three minutes, then two an hour later.
    assert_eq!(roles(s), [U, A, A, A, U, A]);
    let speakers: Vec<&str> = s
        .turns
        .iter()
        .filter_map(|t| t.speaker.as_deref())
        .collect();
    assert_eq!(
        speakers,
        [
            "U0BMYT2FL",
            "U0BMQB6JE",
            "U0BMYT2FL",
            "U0BMQB6JE",
            "U0BMQB6JE",
            "U0BMQB6JE"
        ]
    );
    assert!(s.turns[0].text.starts_with("what should setup.py do?"));
    assert_eq!(s.turns[1].text, "Nope. Just \"install\" the executor.");
    assert_eq!(
        s.turns[3].text,
        "Here's an example: https://github.com/hfaran/progressive/blob/master/setup.py"
    );
    assert_eq!(s.turns[0].timestamp, Some(1_452_845_865_000));
    assert_eq!(s.turns[0].ids, ["1452845865.000008"]);
    // The export's sidecars are not transcripts.
    let channels = path
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("channels.json");
    assert!(!parse::is_transcript_candidate(&channels));
    if channels.exists() {
        let p = parse_ok(&channels);
        assert_eq!((p.format, p.sessions.len()), (None, 0));
    }
}

// ---------------------------------------------------------------------------------------------
// The whole corpus

#[test]
fn whole_corpus_parses_and_every_turn_is_clean() {
    let Some(d) = data_dir() else { return };
    let mut files: Vec<PathBuf> = walkdir::WalkDir::new(d.join("transcripts"))
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file() && parse::is_candidate(e.path(), None))
        .map(walkdir::DirEntry::into_path)
        .collect();
    files.sort();
    assert!(files.len() >= 20, "{files:?}");
    let mut supported = 0;
    for f in &files {
        let p = parse_ok(f);
        let bytes = std::fs::read(f).unwrap();
        // parse_file adds only the subagent title from the .meta.json sidecar, the hash of
        // the complete bytes it read and where an append can be parsed from.
        let mut from_bytes = parse::parse_bytes(&bytes, f, None);
        for (a, b) in from_bytes.sessions.iter_mut().zip(&p.sessions) {
            a.title = a.title.take().or_else(|| b.title.clone());
        }
        let complete = usize::try_from(p.complete_bytes).unwrap();
        let expected_hash = blake3::hash(&bytes[..complete]).to_hex()[..32].to_owned();
        assert_eq!(
            p.content_hash.as_deref(),
            Some(expected_hash.as_str()),
            "{}",
            f.display()
        );
        from_bytes.content_hash.clone_from(&p.content_hash);
        assert_eq!(
            from_bytes,
            p,
            "parse_file and parse_bytes agree ({})",
            f.display()
        );
        if p.format == Some(Format::Markdown) {
            continue;
        }
        if p.format.is_some() {
            supported += 1;
            assert!(!p.sessions.is_empty(), "{}", f.display());
        }
        for s in &p.sessions {
            assert_eq!(s.format, p.format);
            for t in &s.turns {
                assert!(!t.text.trim().is_empty());
                assert!(!t.text.contains("<system-reminder>"));
                assert!(!t.text.contains("base64"), "{}", f.display());
            }
        }
    }
    // Every transcript but the two sidecars (subagent .meta.json, Slack channels.json).
    assert_eq!(supported, 23);
}
