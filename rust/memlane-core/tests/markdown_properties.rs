//! Property: a markdown note's sections cover every line after the frontmatter exactly once,
//! and its chunks cover every non-blank line exactly once, in order, with the exact text.

use memlane_core::chunk::chunk_parsed;
use memlane_core::parse::parse_bytes;
use proptest::prelude::*;
use std::path::Path;

fn line_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z]{1,10}( [a-z#]{1,10}){0,8}",
        1 => Just(String::new()),
        1 => Just("   ".to_owned()),
        1 => "#{1,4} [A-Za-z ]{0,12}",
        1 => "## [0-2][0-9]:[0-5][0-9] \\| [a-z]{1,8}",
        1 => Just("```".to_owned()),
        1 => Just("~~~~".to_owned()),
        1 => Just("---".to_owned()),
        1 => Just("=====".to_owned()),
        1 => "[-*] (2026-0[1-9]-1[0-9] )?[a-z ]{0,20}",
        1 => "  - [a-z]{1,8}",
        1 => Just("é😀 #tag `#code`".to_owned()),
        1 => "[a-z]{300,900}",
    ]
}

fn file_strategy() -> impl Strategy<Value = (String, String)> {
    let path = prop_oneof![
        Just("/lib/notes/design.md".to_owned()),
        Just("/lib/DailyActivity/2026-04-01.md".to_owned()),
        Just("/lib/signals/ops.md".to_owned()),
    ];
    let frontmatter = prop_oneof![
        Just(String::new()),
        Just("---\ntitle: T\ntags: [a, b]\ndate: 2026-03-01\n---\n".to_owned()),
    ];
    let body = prop::collection::vec(line_strategy(), 0..60);
    let crlf = any::<bool>();
    let trailing_newline = any::<bool>();
    (path, frontmatter, body, crlf, trailing_newline).prop_map(|(path, fm, body, crlf, nl)| {
        let mut text = fm + &body.join("\n");
        if nl && !body.is_empty() {
            text.push('\n');
        }
        if crlf {
            text = text.replace('\n', "\r\n");
        }
        (path, text)
    })
}

/// The lines as the parser numbers them.
fn lines_of(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l).to_owned())
        .collect();
    if text.is_empty() || text.ends_with('\n') {
        lines.pop();
    }
    lines
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn every_line_lands_once_in_order((path, text) in file_strategy(), budget in 20usize..400) {
        let parsed = parse_bytes(text.as_bytes(), Path::new(&path), None);
        let note = parsed.note.as_ref().expect("markdown parses to a note");
        let lines = lines_of(&text);
        let fm = note.frontmatter_lines as usize;

        // Sections partition the body lines.
        let mut next = fm + 1;
        for s in &note.sections {
            prop_assert_eq!(s.line_start as usize, next);
            prop_assert!(s.line_end >= s.line_start);
            prop_assert_eq!(&s.text, &lines[s.line_start as usize - 1..s.line_end as usize].join("\n"));
            next = s.line_end as usize + 1;
        }
        prop_assert_eq!(next - 1, if note.sections.is_empty() { fm } else { lines.len() });

        // Chunks cover each non-blank line once, in order.
        let chunks = chunk_parsed(&parsed, &path, budget);
        let mut covered = vec![0u32; lines.len() + 1];
        let mut prev: Option<(u64, u64, u64)> = None;
        for c in &chunks {
            prop_assert_eq!(c.source.as_str(), "knowledge");
            let start = c.meta["line_start"].as_u64().unwrap();
            let end = c.meta["line_end"].as_u64().unwrap();
            let part = c.meta["part"].as_u64().unwrap();
            prop_assert!(start as usize > fm && end as usize <= lines.len() && start <= end);
            let body = if c.heading.is_empty() {
                c.text.as_str()
            } else {
                c.text.strip_prefix(&format!("{}\n\n", c.heading)).expect("heading first")
            };
            match prev {
                // A line too long for one chunk: consecutive parts of the same single line.
                Some((s, e, p)) if (s, e) == (start, end) => {
                    prop_assert!(start == end && part == p + 1);
                    prev = Some((start, end, part));
                    continue;
                }
                Some((_, e, _)) => prop_assert!(start > e),
                None => {}
            }
            let expected = lines[start as usize - 1..end as usize].join("\n");
            if body != expected {
                // The first part of a split line.
                prop_assert!(start == end && expected.starts_with(body.trim_end()));
            }
            for l in start..=end {
                covered[l as usize] += 1;
            }
            prev = Some((start, end, part));
        }
        for (i, line) in lines.iter().enumerate().skip(fm) {
            if !line.trim().is_empty() {
                prop_assert_eq!(covered[i + 1], 1, "line {} {:?}", i + 1, line);
            }
        }
    }
}
