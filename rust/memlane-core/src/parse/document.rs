//! Whole-file JSON documents (chat-app exports, legacy session files): the top-level array is
//! streamed one element at a time, so a `conversations.json` of hundreds of MB is never held
//! as a `serde_json::Value` tree next to its bytes — only the element being rendered is.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::model::{ParsedFile, Session};

use super::lines;

/// Hands each top-level array element (or the top-level object itself) to `F`.
struct Items<'f, F>(&'f mut F);

impl<'de, F: FnMut(Value)> Visitor<'de> for Items<'_, F> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON array or object")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(v) = seq.next_element::<Value>()? {
            (self.0)(v);
        }
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        (self.0)(Value::deserialize(de::value::MapAccessDeserializer::new(
            map,
        ))?);
        Ok(())
    }
}

fn run<S>(
    body: &[u8],
    state: &mut impl FnMut() -> S,
    take: &impl Fn(&mut S, Value),
) -> (S, Result<(), serde_json::Error>) {
    let mut s = state();
    let result = {
        let mut feed = |v: Value| take(&mut s, v);
        let mut de = serde_json::Deserializer::from_slice(body);
        de.deserialize_any(Items(&mut feed)).and_then(|()| de.end())
    };
    (s, result)
}

/// Feed every element of the document's top-level array (or the top-level object itself) to
/// `take`, on a state made by `state`, and return that state.
///
/// The document is whole-file: `complete_bytes` is its length, and it is never resumed. When
/// serde_json rejects the text, a repaired copy (invalid UTF-8, lone surrogate escapes; see
/// [`lines::repair`]) is streamed again from a fresh state. A document that still fails
/// keeps the elements read before the error and counts one `invalid_json` (`invalid_record`
/// when the top level is not an array or object).
pub(crate) fn stream<S>(
    bytes: &[u8],
    out: &mut ParsedFile,
    mut state: impl FnMut() -> S,
    take: impl Fn(&mut S, Value),
) -> S {
    out.complete_bytes = bytes.len() as u64;
    let body = &bytes[lines::bom_len(bytes)..];
    let (s, result) = run(body, &mut state, &take);
    let Err(e) = result else { return s };
    let (s, result) = match lines::repair(body).filter(|_| !e.is_data()) {
        Some(fixed) => run(&fixed, &mut state, &take),
        None => (s, Err(e)),
    };
    if let Err(e) = result {
        out.skip(if e.is_data() {
            "invalid_record"
        } else {
            "invalid_json"
        });
    }
    s
}

/// Parse a chat-app export (an array of conversations, or one): `conversation` turns each
/// element into a session, or counts it as malformed.
pub(crate) fn conversations(
    bytes: &[u8],
    out: &mut ParsedFile,
    conversation: fn(Value, &mut Vec<Session>, &mut u64),
) {
    let (sessions, bad) = stream(
        bytes,
        out,
        || (Vec::new(), 0u64),
        |(sessions, bad), v| conversation(v, sessions, bad),
    );
    out.sessions.extend(sessions);
    if bad > 0 {
        *out.skipped
            .entry("malformed_conversation".into())
            .or_insert(0) += bad;
    }
}
