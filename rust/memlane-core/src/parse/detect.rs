//! Format detection (FORMATS.md §8): content first (the first lines of a JSONL file, the
//! top-level shape of a JSON document), the path only as a tie-breaker.

use std::fmt;
use std::path::Path;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::model::Format;

use super::generic;
use super::lines;

/// Lines sampled from a JSONL file.
const SAMPLE_LINES: usize = 25;

const CODEX_KINDS: [&str; 8] = [
    "session_meta",
    "response_item",
    "event_msg",
    "turn_context",
    "compacted",
    "world_state",
    "inter_agent_communication",
    "inter_agent_communication_metadata",
];

const CODEX_BARE_ITEMS: [&str; 6] = [
    "message",
    "function_call",
    "function_call_output",
    "reasoning",
    "local_shell_call",
    "custom_tool_call",
];

/// Claude Code record types (new ones appear every release; these are enough to recognise
/// a file from its first lines).
const CLAUDE_KINDS: [&str; 20] = [
    "user",
    "assistant",
    "summary",
    "system",
    "attachment",
    "progress",
    "file-history-snapshot",
    "queue-operation",
    "custom-title",
    "ai-title",
    "agent-name",
    "last-prompt",
    "permission-mode",
    "mode",
    "pr-link",
    "frame-link",
    "worktree-state",
    "relocated",
    "bridge-session",
    "atis-latch",
];

/// Claude types no other supported tool writes: enough on their own.
const CLAUDE_ONLY_KINDS: [&str; 6] = [
    "file-history-snapshot",
    "queue-operation",
    "custom-title",
    "ai-title",
    "last-prompt",
    "permission-mode",
];

fn kind(o: &Map<String, Value>) -> Option<&str> {
    o.get("type").and_then(Value::as_str)
}

fn is_codex_envelope(o: &Map<String, Value>) -> bool {
    kind(o).is_some_and(|k| CODEX_KINDS.contains(&k))
        && o.get("payload").is_some_and(Value::is_object)
}

fn is_codex_header(o: &Map<String, Value>) -> bool {
    !o.contains_key("type")
        && o.get("id").is_some_and(Value::is_string)
        && o.contains_key("timestamp")
        && !o.contains_key("sessionId")
        && !o.contains_key("role")
}

fn is_codex_bare_item(o: &Map<String, Value>) -> bool {
    (o.contains_key("record_type") && !o.contains_key("type"))
        || (kind(o).is_some_and(|k| CODEX_BARE_ITEMS.contains(&k))
            && !o.contains_key("payload")
            && !o.contains_key("uuid")
            && !o.contains_key("sessionId")
            && !o.contains_key("parentId")
            && !o.contains_key("message"))
}

fn is_openclaw(o: &Map<String, Value>, first: bool) -> bool {
    match kind(o) {
        Some("session") => first && o.get("id").is_some_and(Value::is_string),
        Some("message") => {
            o.contains_key("parentId") && o.get("message").is_some_and(Value::is_object)
        }
        Some("model_change" | "thinking_level_change" | "compaction" | "branch_summary") => {
            o.contains_key("parentId")
        }
        _ => false,
    }
}

fn is_gemini(o: &Map<String, Value>, first: bool) -> bool {
    if o.contains_key("$set") || o.contains_key("$rewindTo") {
        return true;
    }
    if first && !o.contains_key("type") && o.get("sessionId").is_some_and(Value::is_string) {
        return o.contains_key("projectHash") || o.contains_key("startTime");
    }
    kind(o) == Some("gemini") && o.contains_key("id")
}

fn is_claude(o: &Map<String, Value>) -> bool {
    let Some(k) = kind(o) else { return false };
    if o.contains_key("payload") || k.contains('.') {
        return false;
    }
    if CLAUDE_ONLY_KINDS.contains(&k) {
        return true;
    }
    CLAUDE_KINDS.contains(&k)
        && (o
            .get("message")
            .and_then(|m| m.get("role"))
            .is_some_and(Value::is_string)
            || o.contains_key("uuid")
            || o.contains_key("sessionId")
            || o.contains_key("leafUuid"))
}

/// Copilot CLI events: dotted `type` (`session.start`, `user.message`, …) with a `data` object.
fn is_copilot(o: &Map<String, Value>) -> bool {
    kind(o).is_some_and(|k| k.contains('.'))
        && o.get("data").is_some_and(Value::is_object)
        && !o.contains_key("payload")
}

/// Cursor agent transcript lines: `{"role", "message": {"content"}}` with no `type`, or the
/// `{"type": "turn_ended"}` marker.
fn is_cursor(o: &Map<String, Value>) -> bool {
    if kind(o) == Some("turn_ended") {
        return true;
    }
    !o.contains_key("type")
        && !o.contains_key("uuid")
        && !o.contains_key("timestamp")
        && matches!(
            o.get("role").and_then(Value::as_str),
            Some("user" | "assistant")
        )
        && o.get("message").and_then(|m| m.get("content")).is_some()
}

fn is_generic(o: &Map<String, Value>) -> bool {
    let Some(role) = o
        .get("role")
        .and_then(Value::as_str)
        .filter(|r| generic::ROLES.contains(r))
    else {
        return false;
    };
    (["content", "tool_call", "tool_result", "tool_calls"]
        .iter()
        .any(|k| o.contains_key(*k))
        || generic::is_contentless_tool_record(o, role))
        && !(o.contains_key("type") && o.contains_key("payload"))
        && !o.contains_key("message")
        && !o.contains_key("uuid")
}

fn detect_lines(values: &[Value]) -> Option<Format> {
    let objs: Vec<&Map<String, Value>> = values.iter().filter_map(Value::as_object).collect();
    let first = objs.first()?;
    if objs.iter().any(|o| is_codex_envelope(o)) {
        return Some(Format::Codex);
    }
    if is_codex_header(first) && objs.iter().skip(1).any(|o| is_codex_bare_item(o)) {
        return Some(Format::Codex);
    }
    if objs.iter().enumerate().any(|(i, o)| is_openclaw(o, i == 0)) {
        return Some(Format::Openclaw);
    }
    if objs.iter().any(|o| is_copilot(o)) {
        return Some(Format::Copilot);
    }
    if objs.iter().enumerate().any(|(i, o)| is_gemini(o, i == 0)) {
        return Some(Format::Gemini);
    }
    if objs.iter().any(|o| is_claude(o)) {
        return Some(Format::ClaudeCode);
    }
    if objs.iter().all(|o| is_cursor(o)) {
        return Some(Format::Cursor);
    }
    if objs.len() == values.len() && objs.iter().all(|o| is_generic(o)) {
        return Some(Format::Generic);
    }
    None
}

/// Top-level shape of a JSON document, read without building it.
#[derive(Default, Debug)]
struct Shape {
    is_array: bool,
    /// Keys of the object (or of the array's first element).
    keys: Vec<String>,
    /// Keys of that object's `conversation` member (LoCoMo).
    conversation_keys: Vec<String>,
}

impl Shape {
    fn has(&self, k: &str) -> bool {
        self.keys.iter().any(|x| x == k)
    }
}

/// Records the keys of one object (values skipped, except `conversation`'s keys).
struct KeysSeed<'s>(&'s mut Shape, bool);

impl<'de> de::DeserializeSeed<'de> for KeysSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for KeysSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let (shape, nested) = (self.0, self.1);
        while let Some(k) = map.next_key::<String>()? {
            if !nested && k == "conversation" {
                let mut inner = Shape::default();
                map.next_value_seed(KeysSeed(&mut inner, true))?;
                shape.conversation_keys = inner.keys;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
            if shape.keys.len() < 256 {
                shape.keys.push(k);
            }
        }
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
}

struct ShapeVisitor;

impl<'de> Visitor<'de> for ShapeVisitor {
    type Value = Shape;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON document")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Shape, A::Error> {
        let mut shape = Shape {
            is_array: true,
            ..Shape::default()
        };
        if seq
            .next_element_seed(KeysSeed(&mut shape, false))?
            .is_some()
        {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
        }
        Ok(shape)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Shape, A::Error> {
        let mut shape = Shape::default();
        KeysSeed(&mut shape, false).visit_map(map)?;
        Ok(shape)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Shape, E> {
        Ok(Shape::default())
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Shape, E> {
        Ok(Shape::default())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Shape, E> {
        Ok(Shape::default())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Shape, E> {
        Ok(Shape::default())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Shape, E> {
        Ok(Shape::default())
    }
    fn visit_unit<E: de::Error>(self) -> Result<Shape, E> {
        Ok(Shape::default())
    }
}

fn detect_document(bytes: &[u8]) -> Option<Format> {
    let shape = lines::parse_document(bytes, |b| {
        let mut de = serde_json::Deserializer::from_slice(b);
        let shape = de.deserialize_any(ShapeVisitor)?;
        de.end()?;
        Ok(shape)
    })
    .ok()?;
    if shape.is_array {
        if shape.has("haystack_sessions") {
            return Some(Format::Longmemeval);
        }
        let conv = &shape.conversation_keys;
        if shape.has("conversation")
            && conv.iter().any(|k| k == "speaker_a")
            && conv.iter().any(|k| k.starts_with("session_"))
        {
            return Some(Format::Locomo);
        }
        return export_shape(&shape);
    }
    if shape.has("sessionId")
        && shape.has("messages")
        && (shape.has("projectHash") || shape.has("startTime"))
    {
        return Some(Format::Gemini);
    }
    if shape.has("session_id") && shape.has("messages") {
        return Some(Format::Hermes);
    }
    export_shape(&shape)
}

/// Chat-app exports, by the keys of a conversation (the document, or its first element) or,
/// for Slack, of a message.
fn export_shape(shape: &Shape) -> Option<Format> {
    if shape.has("mapping") {
        return Some(Format::Chatgpt);
    }
    if shape.has("chat_messages") {
        return Some(Format::ClaudeAi);
    }
    if shape.is_array && shape.has("ts") && shape.has("type") && !shape.has("role") {
        return Some(Format::Slack);
    }
    None
}

fn path_hint(path: &Path) -> Option<Format> {
    let name = path.file_name()?.to_string_lossy();
    if name.starts_with("rollout-") && (name.ends_with(".jsonl") || name.ends_with(".jsonl.zst")) {
        return Some(Format::Codex);
    }
    let parent = path
        .parent()
        .and_then(Path::file_name)
        .map(|p| p.to_string_lossy().into_owned());
    if name.starts_with("agent-")
        && name.ends_with(".jsonl")
        && parent.as_deref() == Some("subagents")
    {
        return Some(Format::ClaudeCode);
    }
    if name.starts_with("session-") && parent.as_deref() == Some("chats") {
        return Some(Format::Gemini);
    }
    None
}

/// Recognise the format of `bytes` (the content of `path`).
pub(crate) fn detect(bytes: &[u8], path: &Path) -> Option<Format> {
    detect_settled(bytes, path).0
}

/// [`detect`], and whether the answer is settled: it came from JSONL lines that bytes
/// appended to the file later cannot change.
pub(crate) fn detect_settled(bytes: &[u8], path: &Path) -> (Option<Format>, bool) {
    let body = &bytes[lines::bom_len(bytes)..];
    let Some(first) = body.iter().copied().find(|b| !b.is_ascii_whitespace()) else {
        return (None, false);
    };
    let (found, settled) = match first {
        b'[' => (detect_document(bytes), false),
        b'{' => {
            let (values, settled) = lines::sample_values(bytes, SAMPLE_LINES);
            match detect_lines(&values) {
                Some(f) => (Some(f), settled),
                // Else maybe a pretty-printed JSON document (legacy Gemini session).
                None => (detect_document(bytes), false),
            }
        }
        _ => (None, false),
    };
    match found {
        Some(f) => (Some(f), settled),
        None if first == b'{' => (path_hint(path), false),
        None => (None, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Role;
    use serde_json::json;

    fn jsonl(records: &[Value]) -> Vec<u8> {
        records
            .iter()
            .map(|r| format!("{r}\n"))
            .collect::<String>()
            .into_bytes()
    }

    /// A session in the design's episodic format: tool records without `content`.
    fn episodic() -> Vec<u8> {
        jsonl(&[
            json!({"role": "user", "content": "Why does the exporter crash on empty batches?", "timestamp": "2026-03-01T10:00:00Z"}),
            json!({"role": "tool_call", "name": "Bash", "input": {"command": "pytest tests/test_exporter.py -q"}, "timestamp": "2026-03-01T10:00:05Z"}),
            json!({"role": "tool_result", "output": "1 failed: IndexError in exporter.flush", "timestamp": "2026-03-01T10:00:09Z"}),
            json!({"role": "assistant", "tool_call": {"name": "Edit", "input": {"file_path": "exporter.py"}}, "timestamp": "2026-03-01T10:00:15Z"}),
            json!({"role": "assistant", "content": "flush() read batch[0] of an empty batch; it returns early now.", "timestamp": "2026-03-01T10:00:20Z"}),
        ])
    }

    #[test]
    fn episodic_tool_records_without_content_are_generic() {
        let bytes = episodic();
        assert_eq!(
            detect(&bytes, Path::new("/x/episode.jsonl")),
            Some(Format::Generic)
        );
        let parsed = crate::parse::parse_bytes(&bytes, Path::new("/x/episode.jsonl"), None);
        assert_eq!(parsed.format, Some(Format::Generic));
        assert!(parsed.skipped.is_empty(), "{:?}", parsed.skipped);
        let [session] = parsed.sessions.as_slice() else {
            panic!("one session expected, got {}", parsed.sessions.len())
        };
        let roles: Vec<Role> = session.turns.iter().map(|t| t.role).collect();
        assert_eq!(roles, [Role::User, Role::Assistant]);
        let answer = &session.turns[1];
        assert_eq!(
            answer.text,
            "[tool Bash] pytest tests/test_exporter.py -q\n[result] 1 failed: IndexError in exporter.flush\n\
             [tool Edit] exporter.py\nflush() read batch[0] of an empty batch; it returns early now."
        );
        assert_eq!(answer.files, ["exporter.py"]);
    }

    #[test]
    fn a_contentless_record_needs_a_tool_and_its_arguments_or_output() {
        let user = json!({"role": "user", "content": "hi"});
        for (record, generic) in [
            (
                json!({"role": "tool_call", "name": "Read", "input": {"path": "a.md"}}),
                true,
            ),
            (
                json!({"role": "function_call", "tool_name": "Read", "arguments": "{}"}),
                true,
            ),
            (json!({"role": "tool", "result": "ok"}), true),
            // Nothing to index: a call naming no tool, or no arguments; a result with no output.
            (
                json!({"role": "tool_call", "input": {"path": "a.md"}}),
                false,
            ),
            (json!({"role": "tool_call", "name": "Read"}), false),
            (json!({"role": "tool_result", "name": "Read"}), false),
            // Only tool records go without content.
            (
                json!({"role": "assistant", "name": "Read", "input": {}}),
                false,
            ),
            (json!({"role": "user", "output": "x"}), false),
        ] {
            let found = detect(
                &jsonl(&[user.clone(), record.clone()]),
                Path::new("/x/s.jsonl"),
            );
            assert_eq!(found == Some(Format::Generic), generic, "{record}");
        }
    }
}
