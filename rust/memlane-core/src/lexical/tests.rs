use super::document::{schema, transcript_meta};
use super::{Filters, Lexical};
use crate::chunk::Chunk;
use std::path::Path;
use tantivy::schema::Schema;
use tantivy::Index;

/// The chunk of a one-line generic transcript saying "billing database note `i`".
fn note_chunk(i: usize) -> Chunk {
    let line = format!("{{\"role\":\"user\",\"content\":\"billing database note {i}\"}}\n");
    let parsed = crate::parse::parse_bytes(
        line.as_bytes(),
        Path::new("/x.jsonl"),
        Some(crate::model::Format::Generic),
    );
    crate::chunk::chunk_parsed(&parsed, "/x.jsonl", 500).remove(0)
}

/// A home built before projects were recorded (its schema lacks `project` and `branch`)
/// opens, takes new chunks and answers; its chunks read as of no project, and a project or
/// branch filter matches none of them.
#[test]
fn a_schema_without_project_fields_still_answers() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = Schema::builder();
    for entry in schema().fields() {
        let (_, e) = entry;
        if !matches!(e.name(), "project" | "branch") {
            b.add_field(e.clone());
        }
    }
    Index::create_in_dir(dir.path(), b.build()).unwrap();
    let lexical = Lexical::open(dir.path()).unwrap();
    assert!(!lexical.records_projects());
    let mut chunk = crate::chunk::chunk_parsed(
        &crate::parse::parse_bytes(
            b"{\"role\":\"user\",\"content\":\"billing uses postgres\"}\n",
            Path::new("/x.jsonl"),
            Some(crate::model::Format::Generic),
        ),
        "/x.jsonl",
        500,
    )
    .remove(0);
    chunk.branch = Some("main".into());
    let mut writer = lexical.writer().unwrap();
    writer
        .add_document(lexical.document(&chunk, &chunk.source, &chunk.heading, "/src/billing"))
        .unwrap();
    writer.commit().unwrap();
    lexical.reload().unwrap();
    let searcher = lexical.searcher();
    let all = lexical
        .search(&searcher, "postgres", &Filters::default(), 10, &searcher)
        .unwrap();
    assert_eq!(all.len(), 1);
    let stored = lexical.fetch(&searcher, all[0].2).unwrap();
    assert_eq!((stored.project.as_str(), stored.branch.as_str()), ("", ""));
    for filters in [
        Filters {
            projects: vec!["/src/billing".into()],
            ..Filters::default()
        },
        Filters {
            branch: Some("main".into()),
            ..Filters::default()
        },
    ] {
        assert!(lexical
            .search(&searcher, "postgres", &filters, 10, &searcher)
            .unwrap()
            .is_empty());
        assert!(lexical
            .filtered_keys(&searcher, &filters)
            .unwrap()
            .is_empty());
    }
    assert!(lexical.projects().unwrap().is_empty());
}

#[test]
fn project_and_branch_filters_and_counts() {
    let dir = tempfile::tempdir().unwrap();
    let lexical = Lexical::open(dir.path()).unwrap();
    assert!(lexical.records_projects());
    let mut writer = lexical.writer().unwrap();
    for (i, (project, branch)) in [
        ("/src/a", "main"),
        ("/src/a", "dev"),
        ("/src/b", "main"),
        ("", ""),
    ]
    .into_iter()
    .enumerate()
    {
        let mut chunk = note_chunk(i);
        chunk.branch = (!branch.is_empty()).then(|| branch.to_owned());
        writer
            .add_document(lexical.document(&chunk, &chunk.source, &chunk.heading, project))
            .unwrap();
    }
    writer.commit().unwrap();
    lexical.reload().unwrap();
    let searcher = lexical.searcher();
    let count = |projects: &[&str], branch: Option<&str>| {
        let filters = Filters {
            projects: projects.iter().map(|p| (*p).to_owned()).collect(),
            branch: branch.map(str::to_owned),
            ..Filters::default()
        };
        let hits = lexical
            .search(&searcher, "billing", &filters, 10, &searcher)
            .unwrap()
            .len();
        // The vector side's allow-list (asked for only when some filter is set) agrees.
        if !filters.is_empty() {
            assert_eq!(
                hits,
                lexical.filtered_keys(&searcher, &filters).unwrap().len()
            );
        }
        hits
    };
    assert_eq!(count(&[], None), 4);
    assert_eq!(count(&["/src/a"], None), 2);
    assert_eq!(count(&["/src/a", "/src/b"], None), 3);
    assert_eq!(count(&["/src/a"], Some("main")), 1);
    assert_eq!(count(&[], Some("main")), 2);
    assert_eq!(count(&["/src/c"], None), 0);
    let projects = lexical.projects().unwrap();
    assert_eq!(
        projects.into_iter().collect::<Vec<_>>(),
        vec![("/src/a".to_owned(), 2), ("/src/b".to_owned(), 1)]
    );
}

/// The user's libraries join a project filter with their notes only: a transcript filed
/// under a library's key (a session run in the notes folder) stays out.
#[test]
fn library_notes_join_a_project_filter_and_transcripts_do_not() {
    let dir = tempfile::tempdir().unwrap();
    let lexical = Lexical::open(dir.path()).unwrap();
    let mut writer = lexical.writer().unwrap();
    for (i, (project, source)) in [
        ("/src/a", "transcript"),
        ("/src/b", "transcript"),
        ("/src/b", "knowledge"),
        ("/notes", "knowledge"),
        ("/notes", "summary"),
        ("/notes", "transcript"),
    ]
    .into_iter()
    .enumerate()
    {
        let chunk = note_chunk(i);
        writer
            .add_document(lexical.document(&chunk, source, &chunk.heading, project))
            .unwrap();
    }
    writer.commit().unwrap();
    lexical.reload().unwrap();
    let searcher = lexical.searcher();
    let count = |projects: &[&str], libraries: &[&str]| {
        let filters = Filters {
            projects: projects.iter().map(|p| (*p).to_owned()).collect(),
            libraries: libraries.iter().map(|p| (*p).to_owned()).collect(),
            ..Filters::default()
        };
        let hits = lexical
            .search(&searcher, "billing", &filters, 10, &searcher)
            .unwrap()
            .len();
        assert_eq!(
            hits,
            lexical.filtered_keys(&searcher, &filters).unwrap().len()
        );
        hits
    };
    assert_eq!(count(&["/src/a"], &[]), 1);
    assert_eq!(count(&["/src/a"], &["/notes"]), 3);
    assert_eq!(count(&["/src/b"], &["/notes"]), 4);
    assert_eq!(count(&[], &["/notes"]), 2);
    assert_eq!(count(&["/src/a"], &["/src/b"]), 2); // b's notes, not its transcripts
    assert_eq!(
        lexical
            .note_projects()
            .unwrap()
            .into_iter()
            .collect::<Vec<_>>(),
        vec![("/notes".to_owned(), 2), ("/src/b".to_owned(), 1)]
    );
}

#[test]
fn transcript_meta_is_the_json_value_text() {
    let mut chunk = crate::chunk::chunk_parsed(
        &crate::parse::parse_bytes(
            b"{\"role\":\"user\",\"content\":\"hi \\\"there\\\"\"}\n",
            Path::new("/x.jsonl"),
            Some(crate::model::Format::Generic),
        ),
        "/x.jsonl",
        500,
    )
    .remove(0);
    chunk.tools = vec!["Bash".into(), "Re\"ad".into()];
    chunk.files = vec!["src/a.rs".into()];
    chunk.turn_ids = vec!["D1:3".into()];
    chunk.part = 2;
    for parent in [None, Some("p-1".to_owned())] {
        chunk.parent_session_id = parent;
        let value = serde_json::json!({
            "tools": chunk.tools,
            "files": chunk.files,
            "turn_ids": chunk.turn_ids,
            "parent_session_id": chunk.parent_session_id,
            "part": chunk.part,
        });
        assert_eq!(transcript_meta(&chunk), value.to_string());
    }
}

/// A keyword index of one generic-JSONL chunk per text (user turn only).
fn index_of(dir: &Path, texts: &[&str]) -> Lexical {
    let lexical = Lexical::open(dir).unwrap();
    let mut writer = lexical.writer().unwrap();
    for (i, text) in texts.iter().enumerate() {
        let line = serde_json::json!({"role": "user", "content": text}).to_string() + "\n";
        let path = format!("/s{i}.jsonl");
        let parsed = crate::parse::parse_bytes(
            line.as_bytes(),
            Path::new(&path),
            Some(crate::model::Format::Generic),
        );
        for chunk in crate::chunk::chunk_parsed(&parsed, &path, 500) {
            let source = if i % 2 == 0 {
                "transcript"
            } else {
                "knowledge"
            };
            writer
                .add_document(lexical.document(&chunk, source, "", ""))
                .unwrap();
        }
    }
    writer.commit().unwrap();
    lexical.reload().unwrap();
    lexical
}

#[test]
fn coverage_is_the_share_of_the_query_a_hit_holds_and_filters_score_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let lexical = index_of(
        dir.path(),
        &[
            "the deploy failed with exit code 137 in the billing worker",
            "the deploy went fine",
            "lunch at the ramen place",
            "exit code 137 means the kernel killed the worker for memory",
        ],
    );
    let searcher = lexical.searcher();
    let ceiling = |q: &str| lexical.bm25_ceiling(&searcher, q).unwrap();
    let best = |q: &str, filters: &Filters| {
        lexical
            .search(&searcher, q, filters, 10, &searcher)
            .unwrap()[0]
            .1
    };
    let full = best("deploy exit code 137 billing", &Filters::default())
        / ceiling("deploy exit code 137 billing");
    let part =
        best("deploy faucet plumber", &Filters::default()) / ceiling("deploy faucet plumber");
    assert!(full > 0.0 && full <= 1.0);
    // "faucet" and "plumber" are in no chunk: they weigh the most, and nothing holds them.
    assert!(part < 0.5 * full, "{part} vs {full}");
    assert!((ceiling("deploy faucet") - ceiling("faucet deploy")).abs() < 1e-6);
    // A source filter selects without adding to the score.
    let filtered = Filters {
        sources: vec!["transcript".into()],
        ..Filters::default()
    };
    assert_eq!(
        best("deploy exit code", &filtered),
        best("deploy exit code", &Filters::default())
    );
    let empty = tempfile::tempdir().unwrap();
    let none = Lexical::open(empty.path()).unwrap();
    assert_eq!(
        none.bm25_ceiling(&none.searcher(), "anything").unwrap(),
        0.0
    );
}

#[test]
fn a_passage_holds_the_query_terms_wherever_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let lexical = index_of(dir.path(), &["unrelated words"]);
    let tail = "the build log says: ERR_CONN_RESET while fetching packages";
    let text = format!(
        "{}{tail}",
        "setting up the environment and reading docs. ".repeat(20)
    );
    let found = lexical
        .passages(
            &lexical.searcher(),
            "conn reset fetching",
            &[&text, "nothing here"],
            60,
        )
        .unwrap();
    let range = found[0].clone().expect("a passage");
    assert!(
        text[range.clone()].contains("ERR_CONN_RESET"),
        "{:?}",
        &text[range.clone()]
    );
    assert!(range.start > 0 && text[range].chars().count() <= 60);
    assert_eq!(found[1], None);
}

#[test]
fn a_tie_across_the_cut_is_settled_by_chunk_key_not_by_document_order() {
    let texts: Vec<String> = (0..12)
        .map(|i| format!("release checklist item{i}"))
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let mut answers = Vec::new();
    for order in [refs.clone(), refs.iter().rev().copied().collect()] {
        let dir = tempfile::tempdir().unwrap();
        let lexical = index_of(dir.path(), &order);
        let searcher = lexical.searcher();
        let hits = lexical
            .search(
                &searcher,
                "release checklist",
                &Filters::default(),
                5,
                &searcher,
            )
            .unwrap();
        assert!(hits.iter().all(|h| h.1 == hits[0].1), "one tie");
        answers.push(hits.iter().map(|h| h.0).collect::<Vec<u64>>());
    }
    let mut all = answers[0].clone();
    all.sort_unstable();
    assert_eq!(answers[0], answers[1]);
    assert_eq!(answers[0], all);
}

/// The session catalog counts live transcript chunks only, merged across segments, and takes
/// its key, project and branch from a session's earliest chunk that has them.
#[test]
fn sessions_are_summed_over_segments_from_live_transcripts() {
    use super::SessionSummary;
    let dir = tempfile::tempdir().unwrap();
    let lexical = Lexical::open(dir.path()).unwrap();
    let mut writer = lexical.writer().unwrap();
    /// Key, session, source, timestamp, project, branch.
    type Doc = (
        u64,
        &'static str,
        &'static str,
        Option<i64>,
        &'static str,
        &'static str,
    );
    let segments: [&[Doc]; 2] = [
        &[
            (1, "s1", "transcript", Some(100), "/src/a", "main"),
            (2, "s1", "transcript", Some(300), "/src/a", "main"),
            (3, "s2", "transcript", Some(50), "", ""),
            // A note of session s1, earlier than all of it: not a transcript chunk.
            (4, "s1", "knowledge", Some(10), "/notes", ""),
            (5, "", "transcript", Some(70), "/src/a", ""),
        ],
        &[
            (6, "s1", "transcript", Some(500), "/src/a", "dev"),
            (7, "s2", "transcript", Some(20), "/src/b", ""),
            // Deleted below: neither counted nor widening s1's time span.
            (8, "s1", "transcript", Some(900), "/src/c", "main"),
            (9, "s3", "transcript", None, "", ""),
        ],
    ];
    for chunks in segments {
        for &(key, session, source, ts, project, branch) in chunks {
            let mut chunk = note_chunk(usize::try_from(key).unwrap());
            chunk.key = key;
            chunk.session_id = session.into();
            chunk.ts_start = ts;
            chunk.branch = (!branch.is_empty()).then(|| branch.to_owned());
            writer
                .add_document(lexical.document(&chunk, source, "", project))
                .unwrap();
        }
        writer.commit().unwrap();
    }
    writer.delete_term(lexical.key_term(8));
    writer.commit().unwrap();
    lexical.reload().unwrap();
    // Each commit writes a segment per indexing thread at least.
    assert!(lexical.searcher().segment_readers().len() >= 2);
    let row = |session_id: &str, chunks, ts: [Option<i64>; 2], project: &str, branch: &str, key| {
        SessionSummary {
            session_id: session_id.into(),
            chunks,
            first_ts: ts[0],
            last_ts: ts[1],
            project: project.into(),
            branch: branch.into(),
            key,
        }
    };
    assert_eq!(
        lexical.sessions().unwrap(),
        vec![
            row("s1", 3, [Some(100), Some(500)], "/src/a", "main", 1),
            row("s2", 2, [Some(20), Some(50)], "/src/b", "", 7),
            row("s3", 1, [None, None], "", "", 9),
        ]
    );
    assert_eq!(lexical.session_keys("s1").unwrap(), vec![1, 2, 4, 6]);
    assert_eq!(lexical.session_keys("s9").unwrap(), Vec::<u64>::new());
}
