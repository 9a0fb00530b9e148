use std::path::{Path, PathBuf};
use memlane_core::parse;

fn data() -> PathBuf { Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data") }

#[test]
#[ignore]
fn dump() {
    let root = data().join("transcripts");
    let mut files: Vec<PathBuf> = walkdir::WalkDir::new(&root).into_iter().filter_map(Result::ok).filter(|e| e.file_type().is_file()).map(|e| e.into_path()).collect();
    files.sort();
    for f in files {
        let p = parse::parse_file(&f, None).unwrap();
        eprintln!("=== {} cand={} format={:?} skipped={:?} complete={}", f.strip_prefix(&root).unwrap().display(), parse::is_transcript_candidate(&f), p.format, p.skipped, p.complete_bytes);
        for s in &p.sessions {
            eprintln!("  session id={} parent={:?} cwd={:?} title={:?} turns={}", s.id, s.parent_id, s.cwd, s.title, s.turns.len());
            for t in &s.turns {
                let text: String = t.text.chars().take(300).collect();
                eprintln!("    {:?} ts={:?} tools={:?} files={:?} ids={:?} speaker={:?}\n      {}", t.role, t.timestamp, t.tools, t.files, t.ids, t.speaker, text.replace('\n', "\n      "));
            }
        }
    }
}
