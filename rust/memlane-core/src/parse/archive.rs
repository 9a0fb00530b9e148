//! ZIP archives of chat-app exports (ChatGPT, Claude.ai, Slack): the export is indexed as
//! delivered, without unpacking it first (FORMATS.md §4, §7.3).
//!
//! Every member a directory walk would open (see [`super::is_transcript_candidate`]) is
//! decompressed and parsed as if it were a file at `<archive path>/<member name>`, so a Slack
//! member `general/2024-01-15.json` keeps its channel-day session and ChatGPT's sharded
//! `conversations-000.json…` all count. Media, `chat.html` and sidecars such as `users.json`
//! are never decompressed. The archive is one file to the manifest: it is re-parsed whole when
//! it changes, like any export.

use std::io::{Cursor, Read};
use std::path::Path;

use crate::model::{Format, ParsedFile};

use super::{is_transcript_name, parse_plain, MAX_DECOMPRESSED};

/// ZIP local file header magic number.
pub(super) const ZIP_MAGIC: [u8; 4] = *b"PK\x03\x04";

/// Parse the transcript members of the archive `bytes` read from `path`.
///
/// Never panics and never fails: an unreadable archive counts one `invalid_zip`, an
/// unreadable member one `invalid_zip_member`, and a member that would take the archive past
/// [`MAX_DECOMPRESSED`] bytes of decompressed text one `oversize_zip_member` (a guard against
/// decompression bombs). `format` is the first recognised member's.
pub(super) fn parse(bytes: &[u8], path: &Path, forced: Option<Format>) -> ParsedFile {
    let mut out = ParsedFile {
        format: forced,
        complete_bytes: bytes.len() as u64,
        ..ParsedFile::default()
    };
    let Ok(mut zip) = zip::ZipArchive::new(Cursor::new(bytes)) else {
        out.skip("invalid_zip");
        return out;
    };
    let mut budget = MAX_DECOMPRESSED;
    for i in 0..zip.len() {
        let Ok(mut member) = zip.by_index(i) else {
            out.skip("invalid_zip_member");
            continue;
        };
        // `enclosed_name` refuses absolute paths and `..`: the name only labels sessions, but
        // a hostile name has no business in a session id either.
        let Some(name) = member.enclosed_name() else {
            out.skip("invalid_zip_member");
            continue;
        };
        if !member.is_file() || !is_transcript_name(&name) {
            continue;
        }
        if member.size() > budget {
            out.skip("oversize_zip_member");
            continue;
        }
        let mut data = Vec::new();
        // The declared size can lie: cap what is actually inflated too.
        match member.by_ref().take(budget + 1).read_to_end(&mut data) {
            Ok(n) if n as u64 <= budget => budget -= n as u64,
            Ok(_) => {
                out.skip("oversize_zip_member");
                continue;
            }
            Err(_) => {
                out.skip("invalid_zip_member");
                continue;
            }
        }
        let parsed = parse_plain(&data, &path.join(&name), forced);
        merge(&mut out, parsed);
    }
    out
}

/// Add one member's sessions and skip counts to the archive's.
fn merge(out: &mut ParsedFile, member: ParsedFile) {
    if member.sessions.is_empty() && member.skipped.is_empty() {
        return;
    }
    out.format = out.format.or(member.format);
    out.sessions.extend(member.sessions);
    for (reason, n) in member.skipped {
        *out.skipped.entry(reason).or_insert(0) += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use zip::write::SimpleFileOptions;

    fn archive(members: &[(&str, &[u8])]) -> Vec<u8> {
        let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
        for (name, data) in members {
            zip.start_file(*name, SimpleFileOptions::default()).unwrap();
            zip.write_all(data).unwrap();
        }
        zip.finish().unwrap().into_inner()
    }

    const SLACK_DAY: &[u8] = br#"[
        {"type":"message","user":"U1","text":"is the deploy green?","ts":"1700000000.000100"},
        {"type":"message","user":"U2","text":"yes, since noon","ts":"1700000060.000200"}
    ]"#;

    #[test]
    fn slack_members_keep_their_channel_day_sessions() {
        let bytes = archive(&[
            ("users.json", br#"[{"id":"U1","name":"ana"}]"#),
            ("general/2023-11-14.json", SLACK_DAY),
            ("random/2023-11-15.json", SLACK_DAY),
            ("avatar.png", b"\x89PNG not text"),
        ]);
        let parsed = parse(&bytes, Path::new("/x/slack.zip"), None);
        assert_eq!(parsed.format, Some(Format::Slack));
        let ids: Vec<&str> = parsed.sessions.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["general/2023-11-14", "random/2023-11-15"]);
        assert!(parsed.sessions[0].turns[0].text.contains("deploy green"));
        assert!(parsed.skipped.is_empty(), "{:?}", parsed.skipped);
    }

    #[test]
    fn damaged_archive_is_counted_not_fatal() {
        let mut bytes = archive(&[("general/2023-11-14.json", SLACK_DAY)]);
        bytes.truncate(bytes.len() / 2);
        let parsed = parse(&bytes, Path::new("/x/cut.zip"), None);
        assert!(parsed.sessions.is_empty());
        assert_eq!(parsed.skipped.get("invalid_zip"), Some(&1));
    }

    #[test]
    fn members_outside_the_archive_are_refused() {
        let bytes = archive(&[("../escape/2023-11-14.json", SLACK_DAY)]);
        let parsed = parse(&bytes, Path::new("/x/evil.zip"), None);
        assert!(parsed.sessions.is_empty());
        assert_eq!(parsed.skipped.get("invalid_zip_member"), Some(&1));
    }
}
