//! Text clean-up shared by every parser: scaffolding stripping, capping, timestamps and the
//! one-line rendering of tool calls.

use chrono::{DateTime, NaiveDate, NaiveDateTime};
use serde_json::Value;

use crate::model::PlanItem;

/// Placeholder that replaces every image / binary payload.
pub(crate) const IMAGE: &str = "[image]";
/// Characters of a tool result kept in the assistant turn: results are mostly noise for
/// recall, but their head (error messages, file lists) is often what a user searches for.
pub(crate) const RESULT_CAP: usize = 1_500;
/// Characters of a rendered tool-call argument line.
pub(crate) const CALL_CAP: usize = 300;
/// Longest path we accept as a file mention (anything longer is not a path).
const PATH_MAX: usize = 1_024;

/// Content-block types that carry images or other binary payloads.
pub(crate) fn is_image_kind(kind: &str) -> bool {
    matches!(
        kind,
        "image" | "input_image" | "image_url" | "inlineData" | "image_asset_pointer"
    )
}

/// `s` cut to `max` characters, with a marker saying how much was dropped.
pub(crate) fn cap_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_owned(),
        Some((idx, _)) => {
            let cut = s[idx..].chars().count();
            format!("{}… [{cut} chars cut]", &s[..idx])
        }
    }
}

/// `s` flattened to one line and cut to `max` characters.
pub(crate) fn one_line(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max + 8));
    let mut n = 0usize;
    let mut last_space = true;
    for c in s.chars() {
        if n >= max {
            out.push('…');
            break;
        }
        if c.is_whitespace() {
            if !last_space {
                out.push(' ');
                n += 1;
            }
            last_space = true;
        } else {
            out.push(c);
            n += 1;
            last_space = false;
        }
    }
    let trimmed = out.trim_end().len();
    out.truncate(trimmed);
    out
}

/// Remove every `<tag …>…</tag>` block (an unclosed block runs to the end).
pub(crate) fn strip_tag_blocks(s: &str, tag: &str) -> String {
    let open = format!("<{tag}");
    let close = format!("</{tag}>");
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find(&open) {
        out.push_str(&rest[..i]);
        let after = &rest[i..];
        match after.find(&close) {
            Some(j) => rest = &after[j + close.len()..],
            None => {
                rest = "";
                break;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Injected blocks that are never part of what a human typed: (opening prefix, tag).
const NOISE_TAGS: [(&str, &str); 2] = [
    ("<system-reminder", "system-reminder"),
    ("<session_context", "session_context"),
];

/// Strip injected reminder blocks and surrounding whitespace from user-visible text.
pub(crate) fn clean_text(s: &str) -> String {
    let mut owned: Option<String> = None;
    for (open, tag) in NOISE_TAGS {
        let cur = owned.as_deref().unwrap_or(s);
        if cur.contains(open) {
            owned = Some(strip_tag_blocks(cur, tag));
        }
    }
    owned.as_deref().unwrap_or(s).trim().to_owned()
}

/// Remove ANSI escape sequences (terminal colours in shell output).
pub(crate) fn strip_ansi(s: &str) -> String {
    if !s.contains('\u{1b}') {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match it.peek() {
            Some('[') => {
                it.next();
                // CSI: parameters then one final byte in @..~
                for d in it.by_ref() {
                    if ('@'..='~').contains(&d) {
                        break;
                    }
                }
            }
            Some(']') => {
                it.next();
                // OSC: up to BEL or ESC \
                while let Some(d) = it.next() {
                    if d == '\u{7}' {
                        break;
                    }
                    if d == '\u{1b}' {
                        it.next();
                        break;
                    }
                }
            }
            Some(_) => {
                it.next();
            }
            None => {}
        }
    }
    out
}

/// A tool result as kept in the assistant turn: ANSI stripped, trimmed, capped.
pub(crate) fn render_result(s: &str) -> String {
    let s = strip_ansi(s);
    cap_chars(s.trim(), RESULT_CAP)
}

// ---------------------------------------------------------------------------------------------
// Timestamps

const MIN_MS: i64 = 0;
/// 9999-12-31T23:59:59.999Z: anything later is garbage, not a date.
const MAX_MS: i64 = 253_402_300_799_999;

/// Epoch seconds or milliseconds (told apart by magnitude) → ms.
pub(crate) fn epoch_to_ms(v: f64) -> Option<i64> {
    if !v.is_finite() || v < 0.0 {
        return None;
    }
    // 1e11 s is the year 5138, 1e11 ms is 1973: numbers above are milliseconds.
    let ms = if v >= 1e11 { v } else { v * 1000.0 };
    #[allow(clippy::cast_possible_truncation)]
    let ms = ms.round() as i64;
    (MIN_MS..=MAX_MS).contains(&ms).then_some(ms)
}

/// ISO-8601 / RFC 3339 (with or without zone; no zone means UTC), a bare date, or a numeric
/// epoch string → ms since the epoch.
pub(crate) fn parse_ts_str(s: &str) -> Option<i64> {
    let s = s.trim();
    if s.is_empty() || s.len() > 64 {
        return None;
    }
    let first = s.as_bytes()[0];
    if !first.is_ascii_digit() {
        return None;
    }
    if let Ok(dt) = DateTime::parse_from_rfc3339(s) {
        return in_range(dt.timestamp_millis());
    }
    if s.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return s.parse::<f64>().ok().and_then(epoch_to_ms);
    }
    for fmt in [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M",
    ] {
        if let Ok(dt) = NaiveDateTime::parse_from_str(s, fmt) {
            return in_range(dt.and_utc().timestamp_millis());
        }
    }
    if let Ok(dt) = DateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S%.f %z") {
        return in_range(dt.timestamp_millis());
    }
    parse_date_loose(s)
}

fn in_range(ms: i64) -> Option<i64> {
    (MIN_MS..=MAX_MS).contains(&ms).then_some(ms)
}

/// Benchmark-style dates: `2023/05/28 (Sun) 16:07`, `2023/05/28`, `2024-01-01`.
pub(crate) fn parse_date_loose(s: &str) -> Option<i64> {
    // Drop a parenthesised weekday: "2023/05/28 (Sun) 16:07" → "2023/05/28 16:07".
    let cleaned: String = match (s.find('('), s.find(')')) {
        (Some(a), Some(b)) if a < b => format!("{} {}", s[..a].trim(), s[b + 1..].trim()),
        _ => s.to_owned(),
    };
    let cleaned = cleaned.trim();
    for fmt in [
        "%Y/%m/%d %H:%M",
        "%Y/%m/%d %H:%M:%S",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M:%S",
    ] {
        if let Ok(dt) = NaiveDateTime::parse_from_str(cleaned, fmt) {
            return in_range(dt.and_utc().timestamp_millis());
        }
    }
    for fmt in ["%Y/%m/%d", "%Y-%m-%d"] {
        if let Ok(d) = NaiveDate::parse_from_str(cleaned, fmt) {
            return in_range(d.and_hms_opt(0, 0, 0)?.and_utc().timestamp_millis());
        }
    }
    None
}

/// LoCoMo session dates: `1:56 pm on 8 May, 2023` (taken as UTC).
pub(crate) fn parse_locomo_date(s: &str) -> Option<i64> {
    let s = s.trim();
    for fmt in [
        "%I:%M %p on %d %B, %Y",
        "%I:%M %p on %d %b, %Y",
        "%I:%M %p on %B %d, %Y",
    ] {
        if let Ok(dt) = NaiveDateTime::parse_from_str(s, fmt) {
            return in_range(dt.and_utc().timestamp_millis());
        }
    }
    parse_ts_str(s).or_else(|| parse_date_loose(s))
}

/// A JSON value used as a timestamp.
pub(crate) fn value_ts(v: &Value) -> Option<i64> {
    match v {
        Value::String(s) => parse_ts_str(s),
        Value::Number(n) => n.as_f64().and_then(epoch_to_ms),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Tool calls

/// Input keys that name the thing a tool acts on, most telling first.
const SUMMARY_KEYS: [&str; 14] = [
    "command",
    "cmd",
    "file_path",
    "notebook_path",
    "absolute_path",
    "path",
    "pattern",
    "query",
    "url",
    "description",
    "prompt",
    "skill",
    "subject",
    "input",
];

/// Input keys holding file paths.
const FILE_KEYS: [&str; 5] = [
    "file_path",
    "notebook_path",
    "absolute_path",
    "path",
    "filePath",
];

fn value_as_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
        Value::Array(items) => {
            let parts: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
            (!parts.is_empty()).then(|| parts.join(" "))
        }
        _ => None,
    }
}

/// A short, one-line description of what a tool call does (`ls -la`, `src/app.py`, …).
pub(crate) fn tool_summary(name: &str, input: &Value) -> String {
    if is_patch_tool(name) {
        let text = match input {
            Value::String(s) => Some(s.clone()),
            Value::Object(o) => o
                .get("input")
                .or_else(|| o.get("patch"))
                .and_then(value_as_text),
            _ => None,
        };
        if let Some(text) = text {
            let files = patch_files(&text);
            if !files.is_empty() {
                return one_line(&files.join(", "), CALL_CAP);
            }
        }
    }
    match input {
        Value::Object(o) => {
            for key in SUMMARY_KEYS {
                if let Some(text) = o.get(key).and_then(value_as_text) {
                    return one_line(&text, CALL_CAP);
                }
            }
            if o.is_empty() {
                String::new()
            } else {
                one_line(&input.to_string(), CALL_CAP)
            }
        }
        Value::String(s) => one_line(s, CALL_CAP),
        Value::Null => String::new(),
        other => one_line(&other.to_string(), CALL_CAP),
    }
}

/// `[tool Bash] ls -la`.
pub(crate) fn tool_line(name: &str, summary: &str) -> String {
    if summary.is_empty() {
        format!("[tool {name}]")
    } else {
        format!("[tool {name}] {summary}")
    }
}

/// The plan a call of an agent's own plan tool writes: Claude Code's `TodoWrite`
/// (`todos: [{content, status, priority?}]`) or Codex's `update_plan` (`plan: [{step, status}]`);
/// `None` for any other call. Items without text are left out.
pub(crate) fn plan_items(name: &str, input: &Value) -> Option<Vec<PlanItem>> {
    let (list, text_key) = match name {
        "TodoWrite" => (input.get("todos")?, "content"),
        "update_plan" => (input.get("plan")?, "step"),
        _ => return None,
    };
    let word = |o: &serde_json::Map<String, Value>, key: &str| {
        o.get(key)
            .and_then(Value::as_str)
            .map(|s| s.trim().to_ascii_lowercase())
            .filter(|s| !s.is_empty())
    };
    let items = list
        .as_array()?
        .iter()
        .filter_map(Value::as_object)
        .filter_map(|o| {
            let text = one_line(o.get(text_key)?.as_str()?, CALL_CAP);
            (!text.is_empty()).then(|| PlanItem {
                text,
                status: word(o, "status").unwrap_or_else(|| "pending".to_owned()),
                priority: word(o, "priority"),
            })
        })
        .collect();
    Some(items)
}

fn is_patch_tool(name: &str) -> bool {
    name == "apply_patch" || name.ends_with("apply_patch")
}

fn plausible_path(p: &str) -> bool {
    let p = p.trim();
    !p.is_empty() && p.len() <= PATH_MAX && !p.contains('\n') && p != "." && p != ".."
}

/// Paths named by a tool input (`file_path`, `path`, `notebook_path`, apply_patch headers).
pub(crate) fn tool_files(name: &str, input: &Value, out: &mut Vec<String>) {
    match input {
        Value::Object(o) => {
            for key in FILE_KEYS {
                if let Some(Value::String(p)) = o.get(key) {
                    if plausible_path(p) {
                        push_unique(out, p.trim());
                    }
                }
            }
            // apply_patch shows up as its own tool or inside a shell command / `input`.
            for key in ["input", "patch", "command", "cmd"] {
                if let Some(text) = o.get(key).and_then(value_as_text) {
                    if text.contains("*** ") {
                        for f in patch_files(&text) {
                            push_unique(out, &f);
                        }
                    }
                }
            }
        }
        Value::String(s) if is_patch_tool(name) || s.contains("*** Begin Patch") => {
            for f in patch_files(s) {
                push_unique(out, &f);
            }
        }
        _ => {}
    }
}

/// Files named by `*** Add File: p` / `*** Update File: p` / `*** Delete File: p` /
/// `*** Move to: p` headers of an apply_patch body.
pub(crate) fn patch_files(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim_start();
        let Some(rest) = line.strip_prefix("*** ") else {
            continue;
        };
        for prefix in ["Add File:", "Update File:", "Delete File:", "Move to:"] {
            if let Some(p) = rest.strip_prefix(prefix) {
                let p = p.trim();
                if plausible_path(p) {
                    push_unique(&mut out, p);
                }
            }
        }
    }
    out
}

/// Append `s` unless already present (lists are short: linear scan is fine).
pub(crate) fn push_unique(v: &mut Vec<String>, s: &str) {
    if !v.iter().any(|x| x == s) {
        v.push(s.to_owned());
    }
}

/// Parse a JSON-in-a-string tool argument (Codex `arguments`), tolerating invalid JSON.
pub(crate) fn decode_arguments(v: &Value) -> Value {
    match v {
        Value::String(s) => {
            let t = s.trim_start();
            if t.starts_with('{') || t.starts_with('[') {
                serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))
            } else {
                Value::String(s.clone())
            }
        }
        other => other.clone(),
    }
}

/// Text of a generic JSON content value: a string, or an array of parts / blocks with `text`
/// (images become `[image]`). Depth-limited: only the first two levels are read.
pub(crate) fn value_text(v: &Value) -> String {
    fn walk(v: &Value, depth: u8, out: &mut Vec<String>) {
        match v {
            Value::String(s) => out.push(s.clone()),
            Value::Array(items) if depth < 3 => {
                for it in items {
                    walk(it, depth + 1, out);
                }
            }
            Value::Object(o) if depth < 3 => {
                let kind = o.get("type").and_then(Value::as_str).unwrap_or("");
                if is_image_kind(kind)
                    || o.contains_key("inlineData")
                    || o.contains_key("image_url")
                {
                    out.push(IMAGE.to_owned());
                } else if let Some(t) = o.get("text").and_then(Value::as_str) {
                    out.push(t.to_owned());
                } else if let Some(c) = o.get("content") {
                    walk(c, depth + 1, out);
                }
            }
            _ => {}
        }
    }
    let mut parts = Vec::new();
    walk(v, 0, &mut parts);
    parts.retain(|p| !p.trim().is_empty());
    parts.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_on_char_boundaries() {
        let s = "é".repeat(2000);
        let c = cap_chars(&s, RESULT_CAP);
        assert!(c.starts_with(&"é".repeat(RESULT_CAP)));
        assert!(c.ends_with("… [500 chars cut]"));
        assert_eq!(cap_chars("short", 10), "short");
    }

    #[test]
    fn strips_reminders_and_ansi() {
        assert_eq!(
            clean_text("hi <system-reminder>x</system-reminder> there"),
            "hi  there"
        );
        assert_eq!(clean_text("a<system-reminder>unclosed"), "a");
        assert_eq!(strip_ansi("\u{1b}[31mred\u{1b}[0m"), "red");
    }

    #[test]
    fn timestamps() {
        assert_eq!(parse_ts_str("1970-01-01T00:00:01Z"), Some(1000));
        assert_eq!(parse_ts_str("1970-01-01T00:00:01.5"), Some(1500));
        assert_eq!(parse_ts_str("1700000000"), Some(1_700_000_000_000));
        assert_eq!(parse_ts_str("[trimmed]"), None);
        assert_eq!(epoch_to_ms(1_700_000_000_123.0), Some(1_700_000_000_123));
        assert_eq!(epoch_to_ms(f64::NAN), None);
        assert_eq!(
            parse_date_loose("2023/05/28 (Sun) 16:07"),
            parse_ts_str("2023-05-28T16:07:00Z")
        );
        assert_eq!(
            parse_date_loose("2024-01-01"),
            parse_ts_str("2024-01-01T00:00:00Z")
        );
        assert_eq!(
            parse_locomo_date("1:56 pm on 8 May, 2023"),
            parse_ts_str("2023-05-08T13:56:00Z")
        );
    }

    #[test]
    fn tool_rendering() {
        let v: Value = serde_json::json!({"command": "ls -la\n  /tmp", "description": "x"});
        assert_eq!(tool_summary("Bash", &v), "ls -la /tmp");
        let p = Value::String(
            "*** Begin Patch\n*** Add File: a.txt\n+x\n*** Update File: b/c.rs\n".into(),
        );
        assert_eq!(tool_summary("apply_patch", &p), "a.txt, b/c.rs");
        let mut files = Vec::new();
        tool_files("apply_patch", &p, &mut files);
        assert_eq!(files, ["a.txt", "b/c.rs"]);
    }

    #[test]
    fn plans_of_the_agents_own_plan_tools() {
        let todo = serde_json::json!({"todos": [
            {"content": "Add retry", "status": "in_progress", "priority": "High"},
            {"content": "  ", "status": "pending"},
            {"content": "Write docs"}
        ]});
        let items = plan_items("TodoWrite", &todo).unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(
            (items[0].text.as_str(), items[0].status.as_str()),
            ("Add retry", "in_progress")
        );
        assert_eq!(items[0].priority.as_deref(), Some("high"));
        assert_eq!(
            (items[1].text.as_str(), items[1].status.as_str()),
            ("Write docs", "pending")
        );
        let plan = serde_json::json!({"explanation": "x", "plan": [{"step": "Run tests", "status": "completed"}]});
        assert_eq!(
            plan_items("update_plan", &plan).unwrap()[0].status,
            "completed"
        );
        // An empty list is a plan (everything cleared); another tool or a malformed input is none.
        assert_eq!(
            plan_items("TodoWrite", &serde_json::json!({"todos": []})),
            Some(vec![])
        );
        assert_eq!(plan_items("Bash", &todo), None);
        assert_eq!(
            plan_items("TodoWrite", &serde_json::json!({"todos": "x"})),
            None
        );
    }
}
