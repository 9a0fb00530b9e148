//! JSONL plumbing: line splitting, the partial-last-line rule, and the repair fallback for
//! lines serde_json rejects (invalid UTF-8, lone UTF-16 surrogate escapes).

use std::borrow::Cow;

use crate::model::ParsedFile;

/// Lines longer than this are skipped unparsed (`oversize_line`).
pub(crate) const MAX_LINE: usize = 64 << 20;

/// UTF-8 byte-order mark.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Length of a leading UTF-8 BOM (0 or 3).
pub(crate) fn bom_len(bytes: &[u8]) -> usize {
    if bytes.starts_with(BOM) {
        BOM.len()
    } else {
        0
    }
}

/// Consumer of one JSON line; returns serde's error when the line does not deserialize into
/// whatever record type the sink expects.
pub(crate) trait LineSink {
    /// Parse `line` (exact JSON text, no newline) and take in the record.
    fn line(&mut self, line: &[u8]) -> Result<(), serde_json::Error>;

    /// The next [`LineSink::line`] call is for the line starting at byte `offset` of the
    /// input (sinks that support resuming a file remember where their records came from).
    fn line_start(&mut self, _offset: usize) {}
}

/// A sink of JSON records that keeps the offset of the line each came from: the formats
/// whose records are read one [`serde_json::Value`] at a time. Each is a [`LineSink`].
pub(crate) trait RecordSink {
    /// Take in one record.
    fn record(&mut self, record: &serde_json::Value);

    /// Where the sink keeps the offset of the line being parsed.
    fn line_offset(&mut self) -> &mut usize;
}

impl<S: RecordSink> LineSink for S {
    fn line(&mut self, line: &[u8]) -> Result<(), serde_json::Error> {
        let v: serde_json::Value = serde_json::from_slice(line)?;
        self.record(&v);
        Ok(())
    }

    fn line_start(&mut self, offset: usize) {
        *self.line_offset() = offset;
    }
}

/// Why a line was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reject {
    /// Not JSON, even after repair.
    Syntax,
    /// Valid JSON, but not a record of the expected shape (e.g. a bare number).
    Shape,
}

impl Reject {
    fn reason(self) -> &'static str {
        match self {
            Reject::Syntax => "invalid_json",
            Reject::Shape => "invalid_record",
        }
    }
}

fn classify(e: &serde_json::Error) -> Reject {
    if e.is_data() {
        Reject::Shape
    } else {
        Reject::Syntax
    }
}

/// Feed `line` to `f`, retrying once on a repaired copy when serde_json rejects the text
/// itself. The fast path never copies.
pub(crate) fn with_repair<F>(line: &[u8], mut f: F) -> Result<(), Reject>
where
    F: FnMut(&[u8]) -> Result<(), serde_json::Error>,
{
    match f(line) {
        Ok(()) => Ok(()),
        Err(e) if e.is_data() => Err(Reject::Shape),
        Err(_) => match repair(line) {
            Some(fixed) => f(&fixed).map_err(|e| classify(&e)),
            None => Err(Reject::Syntax),
        },
    }
}

/// A repaired copy of `line`: invalid UTF-8 replaced lossily, lone surrogate escapes turned
/// into `\uFFFD`. `None` when neither applies (the line is simply not JSON).
pub(crate) fn repair(line: &[u8]) -> Option<Vec<u8>> {
    let lossy: Cow<[u8]> = match std::str::from_utf8(line) {
        Ok(_) => Cow::Borrowed(line),
        Err(_) => Cow::Owned(String::from_utf8_lossy(line).into_owned().into_bytes()),
    };
    let changed_utf8 = matches!(lossy, Cow::Owned(_));
    match fix_surrogates(&lossy) {
        Some(fixed) => Some(fixed),
        None if changed_utf8 => Some(lossy.into_owned()),
        None => None,
    }
}

fn hex4(b: &[u8]) -> Option<u16> {
    if b.len() < 4 {
        return None;
    }
    let mut v: u16 = 0;
    for &c in &b[..4] {
        let d = (c as char).to_digit(16)?;
        v = (v << 4) | u16::try_from(d).ok()?;
    }
    Some(v)
}

/// Rewrite `\uD800`–`\uDFFF` escapes that do not form a valid high+low pair to `\uFFFD`.
/// Escaped backslashes (`\\uD83D` is literal text) are respected. `None` if nothing changed.
pub(crate) fn fix_surrogates(s: &[u8]) -> Option<Vec<u8>> {
    let finder = memchr::memmem::Finder::new(b"\\u");
    finder.find(s)?;
    let mut out: Vec<u8> = Vec::with_capacity(s.len());
    let mut changed = false;
    let mut i = 0;
    while i < s.len() {
        let Some(off) = memchr::memchr(b'\\', &s[i..]) else {
            out.extend_from_slice(&s[i..]);
            break;
        };
        out.extend_from_slice(&s[i..i + off]);
        i += off;
        // s[i] == '\\'
        if s.get(i + 1) != Some(&b'u') {
            let end = (i + 2).min(s.len());
            out.extend_from_slice(&s[i..end]);
            i = end;
            continue;
        }
        let Some(unit) = hex4(&s[i + 2..]) else {
            out.extend_from_slice(&s[i..i + 2]);
            i += 2;
            continue;
        };
        match unit {
            0xD800..=0xDBFF => {
                let low = if s.get(i + 6) == Some(&b'\\') && s.get(i + 7) == Some(&b'u') {
                    hex4(&s[i + 8..])
                } else {
                    None
                };
                if matches!(low, Some(0xDC00..=0xDFFF)) {
                    out.extend_from_slice(&s[i..i + 12]);
                    i += 12;
                } else {
                    out.extend_from_slice(b"\\uFFFD");
                    changed = true;
                    i += 6;
                }
            }
            0xDC00..=0xDFFF => {
                out.extend_from_slice(b"\\uFFFD");
                changed = true;
                i += 6;
            }
            _ => {
                out.extend_from_slice(&s[i..i + 6]);
                i += 6;
            }
        }
    }
    changed.then_some(out)
}

fn trim_ascii(mut b: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = b {
        if first.is_ascii_whitespace() {
            b = rest;
        } else {
            break;
        }
    }
    while let [rest @ .., last] = b {
        if last.is_ascii_whitespace() {
            b = rest;
        } else {
            break;
        }
    }
    b
}

/// Run every line of `bytes` through `sink`, counting bad lines in `out.skipped` and setting
/// `out.complete_bytes`.
///
/// The last line without a trailing newline is special: if it does not parse, the writer is
/// probably still appending it, so it is neither counted nor included in `complete_bytes`
/// (the next run re-reads it); if it parses, it is taken.
pub(crate) fn drive(bytes: &[u8], out: &mut ParsedFile, sink: &mut impl LineSink) {
    let mut pos = bom_len(bytes);
    let mut complete = pos;
    while pos < bytes.len() {
        let (end, next, terminated) = match memchr::memchr(b'\n', &bytes[pos..]) {
            Some(i) => (pos + i, pos + i + 1, true),
            None => (bytes.len(), bytes.len(), false),
        };
        let raw = &bytes[pos..end];
        let start = pos;
        pos = next;
        if raw.len() > MAX_LINE {
            if terminated {
                out.skip("oversize_line");
                complete = next;
            }
            continue;
        }
        let line = trim_ascii(raw);
        if line.is_empty() {
            if terminated {
                complete = next;
            }
            continue;
        }
        sink.line_start(start);
        let result = if line[0] == b'{' {
            with_repair(line, |l| sink.line(l))
        } else {
            // Every supported JSONL record is an object; typed sinks would otherwise accept a
            // JSON array as a struct written positionally.
            with_repair(line, |l| {
                serde_json::from_slice::<serde::de::IgnoredAny>(l)?;
                Err(serde::de::Error::custom("not a JSON object"))
            })
        };
        match result {
            Ok(()) => complete = next,
            Err(Reject::Syntax) if !terminated => {}
            Err(r) => {
                out.skip(r.reason());
                complete = next;
            }
        }
    }
    out.complete_bytes = complete as u64;
}

/// Up to `max` JSON values from the first non-empty lines (unparsable lines are passed over),
/// for format detection, and whether the sample is settled: it stopped at its limits on a
/// terminated line, so bytes appended to `bytes` later cannot change it.
pub(crate) fn sample_values(bytes: &[u8], max: usize) -> (Vec<serde_json::Value>, bool) {
    let mut out = Vec::new();
    let mut pos = bom_len(bytes);
    let mut looked = 0;
    let mut last_end = 0;
    while pos < bytes.len() && out.len() < max && looked < max * 4 {
        let end = memchr::memchr(b'\n', &bytes[pos..]).map_or(bytes.len(), |i| pos + i);
        let line = trim_ascii(&bytes[pos..end]);
        pos = end + 1;
        last_end = end;
        if line.is_empty() || line.len() > MAX_LINE {
            continue;
        }
        looked += 1;
        let _ = with_repair(line, |l| {
            let v: serde_json::Value = serde_json::from_slice(l)?;
            out.push(v);
            Ok(())
        });
    }
    let settled = (out.len() == max || looked == max * 4) && last_end < bytes.len();
    (out, settled)
}

/// Parse a whole JSON document (BOM stripped, repair on failure).
pub(crate) fn parse_document<T, F>(bytes: &[u8], mut f: F) -> Result<T, Reject>
where
    F: FnMut(&[u8]) -> Result<T, serde_json::Error>,
{
    let body = &bytes[bom_len(bytes)..];
    let mut result = None;
    with_repair(body, |b| {
        result = Some(f(b)?);
        Ok(())
    })?;
    result.ok_or(Reject::Syntax)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn surrogates() {
        let fixed = fix_surrogates(br#"{"a":"x\uD83D y \uDC00 \uD83D\uDE00 \\uD83D"}"#).unwrap();
        assert_eq!(
            std::str::from_utf8(&fixed).unwrap(),
            r#"{"a":"x\uFFFD y \uFFFD \uD83D\uDE00 \\uD83D"}"#
        );
        assert!(fix_surrogates(br#"{"a":"\u00e9"}"#).is_none());
        // truncated escapes never panic
        assert!(fix_surrogates(b"\\uD8").is_none());
        assert!(fix_surrogates(b"\\").is_none());
        assert_eq!(fix_surrogates(b"\\uD83D\\u12").unwrap(), b"\\uFFFD\\u12");
    }
}
