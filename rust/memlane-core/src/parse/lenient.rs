//! Lenient serde building blocks for the typed (hot-path) parsers.
//!
//! Transcript schemas drift between tool versions: a field that is a string today may be a
//! number, an object or `null` tomorrow. With plain derived structs such a drift fails the
//! whole line and loses the turn; these wrappers read a value of the wrong JSON type as
//! "absent" instead. Unknown fields are skipped by serde's `IgnoredAny` without allocating,
//! which is what makes typed parsing faster than building a `serde_json::Value` per line.
//!
//! The content types are deliberately not recursive ([`Content`] → [`Block`] →
//! [`InnerContent`] → [`InnerBlock`]): deeper nesting is skipped by `IgnoredAny`, so a
//! hostile, deeply nested line cannot grow our own stack frames beyond two levels.

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use super::clean;

fn drain_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

fn drain_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Implements the listed scalar `visit_*` methods of a visitor as "absent" (`Default`).
/// `all` = every scalar; `bool` = all but booleans; `unit` = only null and bytes.
macro_rules! absent_scalars {
    (all) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        absent_scalars!(bool);
    };
    (bool) => {
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        absent_scalars!(unit);
    };
    (unit) => {
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
    };
}

/// A string field; any other JSON type reads as `None`.
#[derive(Debug, Default, Clone)]
pub(crate) struct LStr<'a>(pub Option<Cow<'a, str>>);

impl<'a> LStr<'a> {
    /// The string when present and not empty.
    pub fn get(&self) -> Option<&str> {
        self.0.as_deref().filter(|s| !s.is_empty())
    }

    /// Owned copy of [`LStr::get`].
    pub fn owned(&self) -> Option<String> {
        self.get().map(str::to_owned)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for LStr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = LStr<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(LStr(Some(Cow::Borrowed(v))))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(LStr(Some(Cow::Owned(v.to_owned()))))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(LStr(Some(Cow::Owned(v))))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                LStr::deserialize(d)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                drain_seq(seq)?;
                Ok(LStr(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                drain_map(map)?;
                Ok(LStr(None))
            }
            absent_scalars!(all);
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// A boolean field; anything but `true` reads as `false`.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct LBool(pub bool);

impl<'de> Deserialize<'de> for LBool {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LBool;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<LBool, E> {
                Ok(LBool(v))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<LBool, E> {
                Ok(LBool(false))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<LBool, D::Error> {
                LBool::deserialize(d)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<LBool, A::Error> {
                drain_seq(seq)?;
                Ok(LBool(false))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<LBool, A::Error> {
                drain_map(map)?;
                Ok(LBool(false))
            }
            absent_scalars!(bool);
        }
        d.deserialize_any(V)
    }
}

/// A timestamp field: ISO-8601 / RFC 3339 string, or epoch seconds / milliseconds (number or
/// numeric string), converted to ms since the epoch while parsing.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct LTs(pub Option<i64>);

impl<'de> Deserialize<'de> for LTs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LTs;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a timestamp")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<LTs, E> {
                Ok(LTs(clean::parse_ts_str(v)))
            }
            #[allow(clippy::cast_precision_loss)]
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<LTs, E> {
                Ok(LTs(clean::epoch_to_ms(v as f64)))
            }
            #[allow(clippy::cast_precision_loss)]
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<LTs, E> {
                Ok(LTs(clean::epoch_to_ms(v as f64)))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<LTs, E> {
                Ok(LTs(clean::epoch_to_ms(v)))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<LTs, D::Error> {
                LTs::deserialize(d)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<LTs, A::Error> {
                drain_seq(seq)?;
                Ok(LTs(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<LTs, A::Error> {
                drain_map(map)?;
                Ok(LTs(None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<LTs, E> {
                Ok(LTs(None))
            }
            absent_scalars!(unit);
        }
        d.deserialize_any(V)
    }
}

/// An object field parsed as `T` (whose own fields should be lenient); any other JSON type
/// reads as `None`.
#[derive(Debug, Clone)]
pub(crate) struct Obj<T>(pub Option<T>);

impl<T> Default for Obj<T> {
    fn default() -> Self {
        Obj(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Obj<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Obj<T>, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map)).map(|t| Obj(Some(t)))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Obj<T>, D::Error> {
                Obj::deserialize(d)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Obj<T>, A::Error> {
                drain_seq(seq)?;
                Ok(Obj(None))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Obj<T>, E> {
                Ok(Obj(None))
            }
            absent_scalars!(all);
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// An array field whose elements are read leniently as `T`; any other JSON type reads as empty.
#[derive(Debug, Clone)]
pub(crate) struct LVec<T>(pub Vec<T>);

impl<T> Default for LVec<T> {
    fn default() -> Self {
        LVec(Vec::new())
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for LVec<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = LVec<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<LVec<T>, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
                while let Some(x) = seq.next_element::<T>()? {
                    out.push(x);
                }
                Ok(LVec(out))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<LVec<T>, D::Error> {
                LVec::deserialize(d)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<LVec<T>, A::Error> {
                drain_map(map)?;
                Ok(LVec(Vec::new()))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<LVec<T>, E> {
                Ok(LVec(Vec::new()))
            }
            absent_scalars!(all);
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// Message content: a plain string, an array of blocks, or a single block object.
#[derive(Debug, Default, Clone)]
pub(crate) enum Content<'a> {
    /// Missing or of an unusable type.
    #[default]
    None,
    /// `"content": "text"`.
    Text(Cow<'a, str>),
    /// `"content": [{…}, …]` (a lone object is read as one block).
    Blocks(Vec<Block<'a>>),
}

/// One content block (Anthropic Messages-API, Codex `input_text`/`output_text`, …).
#[derive(Debug, Default, Clone, serde::Deserialize)]
#[serde(default)]
pub(crate) struct Block<'a> {
    #[serde(rename = "type", borrow)]
    pub kind: LStr<'a>,
    #[serde(borrow)]
    pub text: LStr<'a>,
    #[serde(borrow)]
    pub name: LStr<'a>,
    #[serde(borrow)]
    pub id: LStr<'a>,
    /// Tool input (Anthropic `tool_use.input`): small, kept as a value to summarise it.
    pub input: serde_json::Value,
    /// Nested tool-result content (one level only, see module docs).
    #[serde(borrow)]
    pub content: InnerContent<'a>,
    pub is_error: LBool,
}

/// Content nested inside a [`Block`] (tool results): string or array of [`InnerBlock`]s.
#[derive(Debug, Default, Clone)]
pub(crate) enum InnerContent<'a> {
    /// Missing or unusable.
    #[default]
    None,
    /// A plain string.
    Text(Cow<'a, str>),
    /// Text/image parts.
    Blocks(Vec<InnerBlock<'a>>),
}

/// A part inside tool-result content: only its type and text matter.
#[derive(Debug, Default, Clone, serde::Deserialize)]
#[serde(default)]
pub(crate) struct InnerBlock<'a> {
    #[serde(rename = "type", borrow)]
    pub kind: LStr<'a>,
    #[serde(borrow)]
    pub text: LStr<'a>,
}

/// A block that may also be written as a bare string inside an array.
#[derive(Default)]
struct BlockOrStr<'a>(Option<Block<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for BlockOrStr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = BlockOrStr<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a content block")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                Block::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(|b| BlockOrStr(Some(b)))
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(BlockOrStr(Some(text_block(Cow::Borrowed(v)))))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(BlockOrStr(Some(text_block(Cow::Owned(v.to_owned())))))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(BlockOrStr(Some(text_block(Cow::Owned(v)))))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                BlockOrStr::deserialize(d)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                drain_seq(seq)?;
                Ok(BlockOrStr(None))
            }
            absent_scalars!(all);
        }
        d.deserialize_any(V(PhantomData))
    }
}

fn text_block(text: Cow<'_, str>) -> Block<'_> {
    Block {
        kind: LStr(Some(Cow::Borrowed("text"))),
        text: LStr(Some(text)),
        ..Block::default()
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Content<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Content<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("message content")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Content::Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Content::Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Content::Text(Cow::Owned(v)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(b) = seq.next_element::<BlockOrStr<'a>>()? {
                    if let Some(b) = b.0 {
                        out.push(b);
                    }
                }
                Ok(Content::Blocks(out))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                Block::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(|b| Content::Blocks(vec![b]))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                Content::deserialize(d)
            }
            absent_scalars!(all);
        }
        d.deserialize_any(V(PhantomData))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for InnerContent<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = InnerContent<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("tool result content")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(InnerContent::Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(InnerContent::Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(InnerContent::Text(Cow::Owned(v)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(b) = seq.next_element::<InnerPart<'a>>()? {
                    if let Some(b) = b.0 {
                        out.push(b);
                    }
                }
                Ok(InnerContent::Blocks(out))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                InnerBlock::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(|b| InnerContent::Blocks(vec![b]))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                InnerContent::deserialize(d)
            }
            absent_scalars!(all);
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// An [`InnerBlock`] that may be a bare string or of an unusable type inside an array.
#[derive(Default)]
struct InnerPart<'a>(Option<InnerBlock<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for InnerPart<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = InnerPart<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a content part")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                InnerBlock::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(|b| InnerPart(Some(b)))
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(InnerPart(Some(InnerBlock {
                    kind: LStr(None),
                    text: LStr(Some(Cow::Borrowed(v))),
                })))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(InnerPart(Some(InnerBlock {
                    kind: LStr(None),
                    text: LStr(Some(Cow::Owned(v.to_owned()))),
                })))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(InnerPart(Some(InnerBlock {
                    kind: LStr(None),
                    text: LStr(Some(Cow::Owned(v))),
                })))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                InnerPart::deserialize(d)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                drain_seq(seq)?;
                Ok(InnerPart(None))
            }
            absent_scalars!(all);
        }
        d.deserialize_any(V(PhantomData))
    }
}

impl InnerContent<'_> {
    /// Plain text of a tool result: text parts joined by newlines, images as `[image]`.
    pub fn render(&self) -> String {
        match self {
            InnerContent::None => String::new(),
            InnerContent::Text(t) => t.to_string(),
            InnerContent::Blocks(parts) => {
                let mut out = String::new();
                for p in parts {
                    let piece = match p.kind.get() {
                        Some(k) if clean::is_image_kind(k) => Some(clean::IMAGE),
                        _ => p.text.get(),
                    };
                    if let Some(piece) = piece {
                        if !out.is_empty() {
                            out.push('\n');
                        }
                        out.push_str(piece);
                    }
                }
                out
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Default)]
    #[serde(default)]
    struct Probe<'a> {
        #[serde(borrow)]
        s: LStr<'a>,
        b: LBool,
        t: LTs,
        #[serde(borrow)]
        c: Content<'a>,
        o: Obj<Box<Probe<'a>>>,
        v: LVec<LBool>,
    }

    #[test]
    fn wrong_types_read_as_absent() {
        let p: Probe = serde_json::from_str(r#"{"s":"x","b":true,"t":"1970-01-01T00:00:02Z","c":"hi","o":{"b":false},"v":[true,1,false]}"#).unwrap();
        assert_eq!((p.s.get(), p.b.0, p.t.0), (Some("x"), true, Some(2000)));
        assert!(matches!(p.c, Content::Text(ref t) if t == "hi"));
        assert!(p.o.0.is_some_and(|o| !o.b.0));
        assert_eq!(
            p.v.0.iter().map(|b| b.0).collect::<Vec<_>>(),
            [true, false, false]
        );
        let p: Probe = serde_json::from_str(
            r#"{"s":{"a":[1]},"b":"true","t":[1],"c":7,"o":"str","v":{"k":1}}"#,
        )
        .unwrap();
        assert_eq!((p.s.get(), p.b.0, p.t.0), (None, false, None));
        assert!(matches!(p.c, Content::None));
        assert!(p.o.0.is_none() && p.v.0.is_empty());
        let p: Probe = serde_json::from_str(r#"{"t":1700000000,"c":[{"type":"text","text":"a"},"b",3,{"type":"tool_result","content":[{"type":"image"},"c"]}]}"#).unwrap();
        assert_eq!(p.t.0, Some(1_700_000_000_000));
        let Content::Blocks(blocks) = p.c else {
            panic!()
        };
        assert_eq!(blocks.len(), 3);
        assert_eq!(blocks[1].text.get(), Some("b"));
        assert_eq!(blocks[2].content.render(), "[image]\nc");
    }
}
