//! Transcript parsers: agent session logs and benchmark files → [`ParsedFile`]s of normalised
//! [`Session`](crate::model::Session)s.
//!
//! Supported: Claude Code, Codex (envelope and pre-envelope, plain or `.jsonl.zst`),
//! OpenClaw/pi, Gemini CLI (JSONL upsert log and legacy JSON), Cursor agent transcripts,
//! GitHub Copilot CLI events, Hermes legacy sessions, Aider chat histories, ChatGPT /
//! Claude.ai / Slack exports (as files or the export ZIP), generic role/content lines,
//! LongMemEval and LoCoMo. See `shared/FORMATS.md` for the formats themselves. Markdown notes (`.md`, `.markdown`,
//! recognised by extension, unless they are an Aider history) become a
//! [`Note`](crate::model::Note) of sections instead (see [`markdown`]).
//!
//! Whole-file JSON formats (exports, legacy sessions) are re-parsed whole when they change;
//! only formats whose parser returns a resume anchor are ever resumed.
//!
//! Robustness contract: [`parse_bytes`] never panics and never fails. Bad lines are counted
//! in [`ParsedFile::skipped`] (`invalid_json`, `invalid_record`, `oversize_line`, …) and
//! skipped; unknown record types are ignored silently; a partial last line (no trailing
//! newline, not valid JSON) is left out of [`ParsedFile::complete_bytes`] so the next run
//! re-reads it. Files are parsed single-threaded: callers parallelise over files.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::model::{Format, ParsedFile, Session, Turn};

mod aider;
mod archive;
mod bench;
mod chatgpt;
mod claude;
mod claude_ai;
mod clean;
mod codex;
mod copilot;
mod cursor;
mod detect;
mod document;
mod gemini;
mod generic;
mod hermes;
mod lenient;
mod lines;
pub mod markdown;
mod openclaw;
mod slack;
mod tree;
mod turns;

/// zstd frame magic number.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];
/// Largest decompressed `.zst` transcript, or text decompressed from one ZIP export, that we
/// accept (a guard against decompression bombs).
const MAX_DECOMPRESSED: u64 = 1 << 30;
/// Largest `agent-*.meta.json` sidecar we read for a subagent title.
const MAX_META: u64 = 1 << 20;

/// JSON files that sit next to transcripts but are indexes, settings or exports metadata.
const NOT_TRANSCRIPTS: [&str; 22] = [
    "sessions-index.json",
    "sessions.json",
    "channels.json",
    "users.json",
    "groups.json",
    "dms.json",
    "mpims.json",
    "integration_logs.json",
    "projects.json",
    "settings.json",
    "settings.local.json",
    "package.json",
    "package-lock.json",
    "tsconfig.json",
    "logs.json",
    "taskHistory.json",
    "task_metadata.json",
    "ui_messages.json",
    "export_manifest.json",
    "user.json",
    "user_settings.json",
    "message_feedback.json",
];

/// Aider's chat history: hidden markdown, so note walks skip it, but a transcript.
const AIDER_HISTORY: &str = ".aider.chat.history.md";

/// JSONL files that are prompt histories or lifecycle journals, not conversations.
const NOT_TRANSCRIPT_LINES: [&str; 3] = ["history.jsonl", "session_index.jsonl", "journal.jsonl"];

/// Whether a directory walk should open `path` at all: `.jsonl`, `.jsonl.zst` and `.json`
/// files, Aider's `.aider.chat.history.md` and `.zip` exports, minus well-known sidecars
/// (`*.meta.json`, `sessions-index.json`, `sessions.json`, Slack `channels.json`, …), prompt
/// histories (`history.jsonl`), and a `.jsonl.zst` whose plain `.jsonl` sibling exists (the
/// only check that touches the filesystem).
///
/// A candidate that turns out to be in no supported format parses to an empty
/// [`ParsedFile`] with `format: None`; this is only a cheap pre-filter.
#[must_use]
pub fn is_transcript_candidate(path: &Path) -> bool {
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("zip"))
    {
        return true;
    }
    if !is_transcript_name(path) {
        return false;
    }
    match path.file_name().map(|n| n.to_string_lossy()) {
        // Codex decompresses a cold rollout back to `.jsonl` before appending to it: when both
        // exist the plain file is the current one (FORMATS.md §2.1).
        Some(name) if name.ends_with(".zst") => {
            !path.with_file_name(&name[..name.len() - 4]).exists()
        }
        _ => true,
    }
}

/// [`is_transcript_candidate`] by the name alone (also used for the members of a ZIP export).
fn is_transcript_name(path: &Path) -> bool {
    let Some(name) = path.file_name().map(|n| n.to_string_lossy()) else {
        return false;
    };
    if name == AIDER_HISTORY {
        return true;
    }
    if name.ends_with(".jsonl") {
        return !NOT_TRANSCRIPT_LINES.contains(&name.as_ref());
    }
    if let Some(plain) = name.strip_suffix(".zst").filter(|p| p.ends_with(".jsonl")) {
        return !NOT_TRANSCRIPT_LINES.contains(&plain);
    }
    if name.ends_with(".json") {
        return !(name.ends_with(".meta.json")
            || name.starts_with("checkpoint-")
            || NOT_TRANSCRIPTS.contains(&name.as_ref()));
    }
    false
}

/// Whether a directory walk should open `path` when indexing as `forced` (all formats when
/// `None`): forcing a format also narrows the walk to that format's files.
#[must_use]
pub fn is_candidate(path: &Path, forced: Option<Format>) -> bool {
    match forced {
        Some(Format::Markdown) => markdown::is_note_candidate(path),
        Some(Format::Aider) => markdown::has_markdown_extension(path),
        Some(_) => is_transcript_candidate(path),
        None => is_transcript_candidate(path) || markdown::is_note_candidate(path),
    }
}

/// Recognise the transcript format of `bytes` (the content of `path`; the path is only a
/// tie-breaker, e.g. `rollout-*.jsonl`). `None` when it is no supported format. Markdown is
/// recognised by its extension: an Aider chat history, else a note.
#[must_use]
pub fn detect(bytes: &[u8], path: &Path) -> Option<Format> {
    if let Some(f) = markdown_format(bytes, path) {
        return Some(f);
    }
    if bytes.starts_with(&ZSTD_MAGIC) {
        return decompress(bytes)
            .ok()
            .and_then(|d| detect::detect(&d, path));
    }
    if is_zip(bytes, path) {
        return archive::parse(bytes, path, None).format;
    }
    detect::detect(bytes, path)
}

/// For a markdown file: [`Format::Aider`] when it has an Aider session header, else
/// [`Format::Markdown`]. `None` for other files.
fn markdown_format(bytes: &[u8], path: &Path) -> Option<Format> {
    if !markdown::has_markdown_extension(path) {
        return None;
    }
    Some(if aider::is_aider(bytes) {
        Format::Aider
    } else {
        Format::Markdown
    })
}

fn decompress(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    zstd::stream::read::Decoder::new(bytes)?
        .take(MAX_DECOMPRESSED + 1)
        .read_to_end(&mut out)?;
    if out.len() as u64 > MAX_DECOMPRESSED {
        return Err(std::io::Error::other(
            "decompressed transcript exceeds 1 GiB",
        ));
    }
    Ok(out)
}

/// Parse the content of one transcript file.
///
/// The format is `forced`, else detected from the content (see [`detect`]). zstd-compressed
/// content is decompressed first (then `complete_bytes` is the compressed length, or 0 when
/// the stream is corrupt or truncated); a ZIP export has its transcript members parsed (see
/// [`archive`]). Never panics and never fails: unsupported content
/// yields `format: None` and no sessions; bad records are counted in `skipped`.
#[must_use]
pub fn parse_bytes(bytes: &[u8], path: &Path, forced: Option<Format>) -> ParsedFile {
    if is_zip(bytes, path) {
        return archive::parse(bytes, path, forced);
    }
    if bytes.starts_with(&ZSTD_MAGIC) {
        return match decompress(bytes) {
            Ok(data) => {
                let mut parsed = parse_plain(&data, path, forced);
                parsed.complete_bytes = bytes.len() as u64;
                parsed
            }
            Err(_) => {
                let mut parsed = ParsedFile {
                    format: forced,
                    ..ParsedFile::default()
                };
                parsed.skip("invalid_zstd");
                parsed
            }
        };
    }
    parse_plain(bytes, path, forced)
}

/// A ZIP archive by its magic number, or by its name (an empty or damaged one then reports
/// `invalid_zip` instead of being read as text).
fn is_zip(bytes: &[u8], path: &Path) -> bool {
    bytes.starts_with(&archive::ZIP_MAGIC)
        || path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("zip"))
}

fn parse_plain(bytes: &[u8], path: &Path, forced: Option<Format>) -> ParsedFile {
    parse_plain_resumable(bytes, path, forced).0
}

/// [`parse_plain`], and where a later append can be parsed from, when the format allows it
/// and the detected format cannot change with appended lines.
fn parse_plain_resumable(
    bytes: &[u8],
    path: &Path,
    forced: Option<Format>,
) -> (ParsedFile, Option<Anchor>) {
    // A markdown file is known by its name (and an Aider header); appending to it can never
    // change that.
    let by_name = markdown_format(bytes, path);
    let (format, settled) = match forced.or(by_name) {
        Some(f) => (Some(f), true),
        None => detect::detect_settled(bytes, path),
    };
    let Some(format) = format else {
        let mut out = ParsedFile {
            complete_bytes: bytes.len() as u64,
            ..ParsedFile::default()
        };
        out.unrecognised = Some(unrecognised(bytes, &mut out).into());
        return (out, None);
    };
    let mut out = ParsedFile {
        format: Some(format),
        ..ParsedFile::default()
    };
    let anchor = match format {
        Format::ClaudeCode => claude::parse(bytes, path, &mut out),
        Format::Codex => codex::parse(bytes, path, &mut out),
        Format::Openclaw => openclaw::parse(bytes, path, &mut out),
        Format::Gemini => gemini::parse(bytes, path, &mut out),
        Format::Generic => generic::parse(bytes, path, &mut out),
        Format::Longmemeval => {
            bench::parse_longmemeval(bytes, &mut out);
            None
        }
        Format::Locomo => {
            bench::parse_locomo(bytes, &mut out);
            None
        }
        Format::Markdown => {
            markdown::parse(bytes, path, &mut out);
            None
        }
        Format::Cursor => {
            cursor::parse(bytes, path, &mut out);
            None
        }
        Format::Aider => {
            aider::parse(bytes, path, &mut out);
            None
        }
        Format::Chatgpt => {
            chatgpt::parse(bytes, path, &mut out);
            None
        }
        Format::ClaudeAi => {
            claude_ai::parse(bytes, path, &mut out);
            None
        }
        Format::Copilot => {
            copilot::parse(bytes, path, &mut out);
            None
        }
        Format::Slack => {
            slack::parse(bytes, path, &mut out);
            None
        }
        Format::Hermes => {
            hermes::parse(bytes, path, &mut out);
            None
        }
    };
    (out, anchor.filter(|_| settled))
}

/// Why `bytes` are in no format: what a user needs to know about a file that gave nothing.
/// Lines too long to parse are counted in `out` (they may be what hid the format).
fn unrecognised(bytes: &[u8], out: &mut ParsedFile) -> &'static str {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return "empty_file";
    }
    let head = &bytes[..bytes.len().min(8192)];
    // Text files hold no NUL; a cut at the sample's end may split one UTF-8 character.
    let text = match std::str::from_utf8(head) {
        Ok(_) => true,
        Err(e) => e.error_len().is_none() && head.len() == 8192,
    };
    if head.contains(&0) || !text {
        return "binary";
    }
    let (mut oversize, mut other) = (0, 0);
    for line in bytes.split(|&b| b == b'\n') {
        if line.len() > lines::MAX_LINE {
            oversize += 1;
            out.skip("oversize_line");
        } else if !line.iter().all(u8::is_ascii_whitespace) {
            other += 1;
        }
    }
    if oversize > 0 && other == 0 {
        "oversize_line"
    } else {
        "unknown_format"
    }
}

/// Read and parse one transcript file (`.jsonl`, `.json`, zstd-compressed `.jsonl.zst`, or a
/// `.zip` export).
///
/// Subagent transcripts (`…/subagents/agent-<id>.jsonl`) take their title from the sibling
/// `agent-<id>.meta.json` when present.
///
/// # Errors
/// [`Error::NotFound`] when `path` does not exist, [`Error::Io`] when it cannot be read,
/// [`Error::Parse`] when a `.zst` file is not valid zstd or `path` is a FIFO, socket or
/// device (never opened). Malformed content never errors.
pub fn parse_file(path: &Path, forced: Option<Format>) -> Result<ParsedFile> {
    Ok(parse_file_resumable(path, forced)?.0)
}

/// [`parse_file`], with where a later run can parse only what is appended to the file, when
/// its format allows it (see [`resume_file`]).
///
/// # Errors
/// As [`parse_file`].
pub fn parse_file_resumable(
    path: &Path,
    forced: Option<Format>,
) -> Result<(ParsedFile, Option<ResumePoint>)> {
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        // Opening a FIFO waits for a writer (forever), a device may never end.
        return Err(Error::Parse {
            path: path.to_path_buf(),
            reason: "not a regular file (a FIFO, socket or device is never opened)".into(),
        });
    }
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::NotFound(path.to_path_buf()))
        }
        Err(e) => return Err(e.into()),
    };
    parse_read(&bytes, path, forced)
}

/// [`parse_file_resumable`] of the bytes of `path`, already read (the home's archived copy of
/// a transcript whose file is gone).
///
/// # Errors
/// `Parse` when the whole file cannot be read (a broken zstd stream).
pub fn parse_read(
    bytes: &[u8],
    path: &Path,
    forced: Option<Format>,
) -> Result<(ParsedFile, Option<ResumePoint>)> {
    let named_zst = path.extension().is_some_and(|e| e == "zst");
    if named_zst && !bytes.is_empty() && !bytes.starts_with(&ZSTD_MAGIC) {
        return Err(Error::Parse {
            path: path.to_path_buf(),
            reason: "not a zstd stream".into(),
        });
    }
    let (mut parsed, anchor) = if bytes.starts_with(&ZSTD_MAGIC) || is_zip(bytes, path) {
        (parse_bytes(bytes, path, forced), None)
    } else {
        parse_plain_resumable(bytes, path, forced)
    };
    let complete =
        usize::try_from(parsed.complete_bytes).map_or(bytes.len(), |n| n.min(bytes.len()));
    parsed.content_hash = Some(blake3::hash(&bytes[..complete]).to_hex()[..32].to_owned());
    let resume = match (anchor, parsed.format) {
        (Some(a), Some(format)) => {
            ResumePoint::new(&bytes[..complete], a, format, forced.is_some())
        }
        _ => None,
    };
    if parsed.skipped.contains_key("invalid_zstd") {
        return Err(Error::Parse {
            path: path.to_path_buf(),
            reason: "corrupt or truncated zstd stream".into(),
        });
    }
    subagent_title(path, &mut parsed);
    Ok((parsed, resume))
}

/// Bytes at the start of a file whose hash a resume checks (see [`ResumePoint`]).
const HEAD_WINDOW: usize = 4096;

fn short_hash(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex()[..32].to_owned()
}

/// A 32-bit fingerprint of a record id, for the sets of ids a resume checks appended
/// records against (a collision only costs a full re-parse).
pub(crate) fn fingerprint(id: &str) -> u32 {
    let h = blake3::hash(id.as_bytes());
    let b = h.as_bytes();
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

/// `known` plus the fingerprints of `ids`, sorted and deduplicated.
pub(crate) fn fingerprints<'a>(
    ids: impl Iterator<Item = &'a str>,
    mut known: Vec<u32>,
) -> Vec<u32> {
    known.extend(ids.map(fingerprint));
    known.sort_unstable();
    known.dedup();
    known
}

/// Whether `id`'s fingerprint is in the sorted set `known`.
pub(crate) fn is_known(known: &[u32], id: &str) -> bool {
    known.binary_search(&fingerprint(id)).is_ok()
}

/// Where a format's parser can re-parse a file from, found while parsing it whole (or from
/// an earlier anchor): the line of a record that opens a human or summary turn of the file's
/// one session and adds nothing to the turn before it, so the turns before it are final.
pub(crate) struct Anchor {
    /// Byte offset of that record's line.
    pub offset: usize,
    /// Index of the turn it opens in the session.
    pub turn_base: usize,
    /// What a parse from `offset` needs to know about the bytes before it.
    pub state: Continuation,
}

/// Finish the turns `b` built, with the anchor a resume needs when `opened` says where it is
/// (the offset of the line of the record that opened the last turn group `b` can rebuild,
/// how many raw turns `b` held then, and the format's state for a parse from there); the
/// turns, unless there are none, become the session `session` makes of them, pushed to `out`.
pub(crate) fn finish_session(
    out: &mut ParsedFile,
    b: turns::TurnBuilder,
    opened: Option<(usize, usize, Continuation)>,
    session: impl FnOnce(Vec<Turn>) -> Session,
) -> Option<Anchor> {
    let (turns, anchor) = match opened {
        Some((offset, raw, state)) => {
            let (turns, turn_base) = b.finish_tracking(raw);
            let anchor = Anchor {
                offset,
                turn_base,
                state,
            };
            (turns, Some(anchor))
        }
        None => (b.finish(), None),
    };
    if !turns.is_empty() {
        out.sessions.push(session(turns));
    }
    anchor
}

/// Each resumable format's state for parsing a file from an [`Anchor`] on: the session's
/// identity and whatever the records before the anchor decide for the ones after it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Continuation {
    /// Claude Code.
    ClaudeCode(claude::Continuation),
    /// Codex rollouts (plain `.jsonl`).
    Codex(codex::Continuation),
    /// OpenClaw / pi.
    Openclaw(openclaw::Continuation),
    /// Gemini CLI JSONL.
    Gemini(gemini::Continuation),
    /// Generic role/content lines.
    Generic(generic::Continuation),
}

/// Where a later run can continue parsing a file that only grew, and how it checks that the
/// bytes it does not re-read are still the ones parsed (kept with the manifest).
///
/// A resume re-reads the file from `offset` (the line that opened the last turn group it can
/// rebuild, so the last, possibly incomplete, turn pair is re-chunked when it completes) and
/// checks that the bytes up to the old end hash to `tail_hash`, that the first
/// [`HEAD_WINDOW`] bytes hash to `head_hash`, and that the file is not shorter. Hashing the
/// whole prefix would mean reading it, which is what resuming avoids; the trade-off is that a
/// rewrite that keeps the length, the first 4 KiB and the re-read tail but changes bytes in
/// between goes unnoticed. Transcript writers only append or rewrite whole files (which
/// change the head or the tail), so that case is accepted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResumePoint {
    /// Format the file was parsed as.
    pub format: Format,
    /// Whether that format was forced by the caller (else it was detected).
    pub forced: bool,
    /// Byte offset where the re-parse starts.
    pub offset: u64,
    /// Index, in the file's one session, of the first turn the re-parse rebuilds.
    pub turn_base: u32,
    /// End of the complete lines parsed so far.
    pub complete_bytes: u64,
    /// blake3 of the first `min(offset, HEAD_WINDOW)` bytes.
    pub head_hash: String,
    /// blake3 of the bytes from `offset` to `complete_bytes`.
    pub tail_hash: String,
    state: Continuation,
}

impl ResumePoint {
    /// `complete`: the file's complete lines. `None` unless the anchor's line is terminated:
    /// an unterminated last line may still be growing, and a re-parse would then not find
    /// the record the anchor names.
    fn new(complete: &[u8], anchor: Anchor, format: Format, forced: bool) -> Option<ResumePoint> {
        memchr::memchr(b'\n', complete.get(anchor.offset..)?)?;
        let head = anchor.offset.min(HEAD_WINDOW);
        Some(ResumePoint {
            format,
            forced,
            offset: anchor.offset as u64,
            turn_base: u32::try_from(anchor.turn_base).ok()?,
            complete_bytes: complete.len() as u64,
            head_hash: short_hash(&complete[..head]),
            tail_hash: short_hash(complete.get(anchor.offset..)?),
            state: anchor.state,
        })
    }
}

/// Parse only what was appended to `path` since `point` was taken: the returned
/// [`ParsedFile`] holds the session's turns from `point.turn_base` on (numbered from 0),
/// `complete_bytes` for the whole file and `content_hash` chained from `old_hash`, with the
/// next resume point.
///
/// `Ok(None)` when the file cannot be shown to have only grown, or the appended records
/// cannot be parsed alone (see [`ResumePoint`]): the caller then parses the whole file.
///
/// # Errors
/// [`Error::NotFound`] / [`Error::Io`] when the file cannot be read.
pub fn resume_file(
    path: &Path,
    point: &ResumePoint,
    forced: Option<Format>,
    old_hash: &str,
) -> Result<Option<(ParsedFile, Option<ResumePoint>)>> {
    let same_format = match forced {
        Some(f) => f == point.format,
        None => !point.forced,
    };
    let (Ok(offset), Ok(old_end)) = (
        usize::try_from(point.offset),
        usize::try_from(point.complete_bytes),
    ) else {
        return Ok(None);
    };
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::NotFound(path.to_path_buf()))
        }
        Err(e) => return Err(e.into()),
    };
    if !same_format || file.metadata()?.len() < point.complete_bytes {
        return Ok(None);
    }
    let mut head = vec![0; offset.min(HEAD_WINDOW)];
    file.read_exact(&mut head)?;
    if short_hash(&head) != point.head_hash {
        return Ok(None);
    }
    file.seek(SeekFrom::Start(point.offset))?;
    let mut region = Vec::new();
    file.read_to_end(&mut region)?;
    let old_len = old_end - offset;
    if region.len() < old_len || short_hash(&region[..old_len]) != point.tail_hash {
        return Ok(None);
    }
    if lines::bom_len(&region) > 0 {
        return Ok(None);
    }
    let mut parsed = ParsedFile {
        format: Some(point.format),
        ..ParsedFile::default()
    };
    let out = &mut parsed;
    let anchor = match &point.state {
        Continuation::ClaudeCode(s) => claude::resume(&region, old_len, path, s, out),
        Continuation::Codex(s) => codex::resume(&region, s, out),
        Continuation::Openclaw(s) => openclaw::resume(&region, old_len, s, out),
        Continuation::Gemini(s) => gemini::resume(&region, s, out),
        Continuation::Generic(s) => generic::resume(&region, path, s, out),
    };
    let Some(anchor) = anchor else {
        return Ok(None);
    };
    let complete =
        usize::try_from(parsed.complete_bytes).map_or(region.len(), |n| n.min(region.len()));
    if complete < old_len {
        return Ok(None);
    }
    let mut chained = blake3::Hasher::new();
    chained.update(old_hash.as_bytes());
    chained.update(&region[old_len..complete]);
    parsed.content_hash = Some(chained.finalize().to_hex()[..32].to_owned());
    parsed.complete_bytes = (offset + complete) as u64;
    let next_offset = offset + anchor.offset;
    let head_len = next_offset.min(HEAD_WINDOW);
    if head_len > head.len() {
        head.extend_from_slice(&region[..head_len - head.len()]);
    }
    // As in `ResumePoint::new`: only from a terminated line.
    if memchr::memchr(b'\n', &region[anchor.offset..complete]).is_none() {
        return Ok(Some((parsed, None)));
    }
    let next = ResumePoint {
        format: point.format,
        forced: point.forced,
        offset: next_offset as u64,
        turn_base: u32::try_from(anchor.turn_base)
            .ok()
            .and_then(|t| t.checked_add(point.turn_base))
            .ok_or_else(|| Error::InvalidArgument("turn index overflow".into()))?,
        complete_bytes: parsed.complete_bytes,
        head_hash: short_hash(&head),
        tail_hash: short_hash(&region[anchor.offset..complete]),
        state: anchor.state,
    };
    Ok(Some((parsed, Some(next))))
}

/// Title a subagent session from its `agent-<id>.meta.json` sidecar (`description`).
fn subagent_title(path: &Path, parsed: &mut ParsedFile) {
    if parsed.format != Some(Format::ClaudeCode) {
        return;
    }
    let stem = claude::stem(path);
    if !stem.starts_with("agent-") {
        return;
    }
    let meta = path.with_file_name(format!("{stem}.meta.json"));
    // A sidecar that is a FIFO would block the open below: only a regular file is read.
    if !std::fs::metadata(&meta).is_ok_and(|m| m.is_file()) {
        return;
    }
    let Ok(f) = std::fs::File::open(&meta) else {
        return;
    };
    let mut buf = Vec::new();
    if f.take(MAX_META).read_to_end(&mut buf).is_err() {
        return;
    }
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(&buf) else {
        return;
    };
    let Some(desc) = v
        .get("description")
        .and_then(|d| d.as_str())
        .filter(|d| !d.trim().is_empty())
    else {
        return;
    };
    for s in &mut parsed.sessions {
        if s.parent_id.is_some() && s.title.is_none() {
            s.title = Some(desc.trim().to_owned());
        }
    }
}
