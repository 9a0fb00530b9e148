//! The indexer never opens a FIFO, socket or device: opening a FIFO waits for a writer that
//! never comes, so one named like a transcript (`*.jsonl`) beside real ones, named directly,
//! reached through a symlink, or sitting where a subagent's `.meta.json` sidecar is read,
//! would hang every index run. Each is reported (`not_a_regular_file`) and the rest indexed.
//!
//! Every run goes on a thread the test waits on with a deadline, so a regression fails here
//! instead of hanging the suite.

#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use memlane_core::error::Error;
use memlane_core::parse;
use memlane_core::store::{IndexReport, Store, Writer};
use memlane_core::vector::Quantization;
use serde_json::json;

/// Long enough for an index of a few small files on a loaded machine; a blocked open never ends.
const DEADLINE: Duration = Duration::from_secs(60);

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("run mkfifo");
    assert!(status.success(), "mkfifo {}", path.display());
}

fn write_jsonl(path: &Path, records: &[serde_json::Value]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let text: String = records.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(path, text).unwrap();
}

/// A generic transcript of one exchange.
fn transcript(path: &Path, session: &str) {
    write_jsonl(
        path,
        &[
            json!({"role": "user", "content": "why did the deploy fail?", "session_id": session, "timestamp": "2026-03-01T10:00:00Z"}),
            json!({"role": "assistant", "content": "The container was OOM-killed: exit code 137.", "session_id": session, "timestamp": "2026-03-01T10:01:00Z"}),
        ],
    );
}

/// A Claude Code subagent transcript (`…/subagents/agent-<id>.jsonl`): reading it looks for
/// its `agent-<id>.meta.json` sidecar.
fn subagent(dir: &Path) -> PathBuf {
    let path = dir.join("subagents").join("agent-a1.jsonl");
    write_jsonl(
        &path,
        &[
            json!({"type": "user", "uuid": "u1", "parentUuid": null, "sessionId": "s1", "isSidechain": true,
                   "timestamp": "2026-03-01T10:00:00Z", "message": {"role": "user", "content": "list the failing tests"}}),
            json!({"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": "s1", "isSidechain": true,
                   "timestamp": "2026-03-01T10:01:00Z",
                   "message": {"role": "assistant", "content": [{"type": "text", "text": "test_deploy and test_billing fail"}]}}),
        ],
    );
    path
}

/// Index `root` into a new home at `home` on a thread; the report, or a failure when the
/// run does not end before [`DEADLINE`] (it blocked opening something).
fn index_within_deadline(home: &Path, root: &Path) -> IndexReport {
    let (home, root) = (home.to_owned(), root.to_owned());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let store = Store::open(&home, Quantization::I8).unwrap();
        let mut w = Writer::new(store, None).unwrap();
        let plan = w.scan(&[root]).unwrap();
        w.index_files(&plan.to_index).unwrap();
        let _ = tx.send(w.commit().unwrap());
    });
    rx.recv_timeout(DEADLINE)
        .expect("indexing blocked: something that is not a regular file was opened")
}

fn not_regular(report: &IndexReport) -> u64 {
    report
        .records_skipped
        .get("not_a_regular_file")
        .copied()
        .unwrap_or(0)
}

#[test]
fn a_fifo_beside_transcripts_is_reported_and_the_rest_indexed() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    transcript(&src.join("deploy.jsonl"), "deploy-1");
    mkfifo(&src.join("pipe.jsonl"));
    let report = index_within_deadline(&tmp.path().join("home"), &src);
    assert_eq!(not_regular(&report), 1, "{:?}", report.records_skipped);
    assert_eq!(report.files_indexed, 1);
    assert!(report.chunks_added > 0);
    let fifo = std::fs::canonicalize(src.join("pipe.jsonl")).unwrap();
    let line = report
        .files
        .iter()
        .find(|f| Path::new(&f.path) == fifo)
        .expect("the FIFO has a line in the per-file report");
    assert_eq!(line.empty_reason.as_deref(), Some("not_a_regular_file"));
}

#[test]
fn a_fifo_named_directly_or_through_a_symlink_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("named.jsonl");
    mkfifo(&fifo);
    let link = tmp.path().join("link.jsonl");
    std::os::unix::fs::symlink(&fifo, &link).unwrap();
    for (n, root) in [&fifo, &link].into_iter().enumerate() {
        let report = index_within_deadline(&tmp.path().join(format!("home{n}")), root);
        assert_eq!(
            not_regular(&report),
            1,
            "{}: {:?}",
            root.display(),
            report.records_skipped
        );
        assert_eq!((report.files_indexed, report.chunks_added), (0, 0));
        assert_eq!(
            report.empty_roots,
            vec![root.to_string_lossy().into_owned()]
        );
    }
}

#[test]
fn a_fifo_in_place_of_a_subagent_sidecar_is_not_read() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("project");
    let transcript = subagent(&src);
    mkfifo(&transcript.with_file_name("agent-a1.meta.json"));
    let report = index_within_deadline(&tmp.path().join("home"), &src);
    assert_eq!(report.files_indexed, 1);
    assert!(report.chunks_added > 0, "{:?}", report.files);
}

#[test]
fn parsing_a_fifo_is_refused_without_opening_it() {
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("pipe.jsonl");
    mkfifo(&fifo);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(parse::parse_file(&fifo, None).map(|_| ()));
    });
    let result = rx
        .recv_timeout(DEADLINE)
        .expect("parse_file blocked opening a FIFO");
    assert!(
        matches!(&result, Err(Error::Parse { reason, .. }) if reason.contains("not a regular file")),
        "{result:?}"
    );
}
