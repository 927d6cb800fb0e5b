//! The JSON-RPC envelope, read in one pass without building a tree of the whole message:
//! names borrow the input, the `_meta` members of our namespace are parsed into the
//! borrowed trees their checks read, and every member no table asks about is skipped.
//!
//! The pass writes into a [`Parts`] that the decoder owns on its stack (seeds, not
//! returned values: moving the parts of a message around cost more than reading them).
//! When the table of the method already read asks for typed params, or the request a
//! response answers asks for a typed result, that body is parsed into a tree in the same
//! pass; only a message that names its method after its params (or its id after its
//! result) is parsed a second time.
//!
//! The seeds' visitor methods are `#[inline(always)]`: together they are one parser, and
//! whether LLVM inlined them into serde_json's map access on its own changed with
//! unrelated code elsewhere in the crate (the benchmark moved by 7%, 6% more instructions).

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use bumpalo::collections::Vec as ArenaVec;
use bumpalo::Bump;
use serde_json::value::RawValue;

use super::tables::META_NAMESPACE;
use crate::exact::{raw_value_tree, Json, Members, Str, Tree, RAW_VALUE_TOKEN};

/// serde_json's recursion limit, which every parse here runs under: the containers the
/// pass reads or skips are counted by serde_json itself, the members kept as raw text by
/// [`RawAt`]. ACP messages nest a handful of levels; a hostile line must not cost stack.
pub const MAX_DEPTH: usize = 128;

/// The visitor methods of a value that only objects carry parts of: a scalar or an array
/// is skipped and reads as empty.
macro_rules! non_objects_read_as {
    ($empty:expr, $ty:ty) => {
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<$ty, A::Error> {
            while seq.next_element_seed(Skip)?.is_some() {}
            Ok($empty)
        }
        fn visit_bool<E>(self, _: bool) -> Result<$ty, E> {
            Ok($empty)
        }
        fn visit_i64<E>(self, _: i64) -> Result<$ty, E> {
            Ok($empty)
        }
        fn visit_u64<E>(self, _: u64) -> Result<$ty, E> {
            Ok($empty)
        }
        fn visit_f64<E>(self, _: f64) -> Result<$ty, E> {
            Ok($empty)
        }
        fn visit_str<E>(self, _: &str) -> Result<$ty, E> {
            Ok($empty)
        }
        fn visit_unit<E>(self) -> Result<$ty, E> {
            Ok($empty)
        }
    };
}

/// How deep a message may nest: serde_json's recursion limit rejects a value whose
/// containers nest [`MAX_DEPTH`] deep, so any consumer parsing an accepted message with
/// serde_json's defaults can parse it.
const MAX_NESTING: usize = MAX_DEPTH - 1;

/// Skips a value the policy does not look into, checking it as `serde_json::Value` would:
/// strings are unescaped (so a lone surrogate is an error), numbers must fit an `f64`,
/// and containers go through serde_json's recursive path, so its recursion limit counts
/// them. serde's `IgnoredAny` checks none of that: its iterative path accepts what a
/// consumer parsing the message would then reject.
pub struct Skip;

impl<'de> DeserializeSeed<'de> for Skip {
    type Value = ();
    #[inline]
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Skip {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        // Keys through `Skip` too: `IgnoredAny` would not check their escapes.
        while map.next_key_seed(Skip)?.is_some() {
            map.next_value_seed(Skip)?;
        }
        Ok(())
    }
    non_objects_read_as!((), ());
}

/// Reads `jsonrpc`: whether it is the string `"2.0"` (any other value is skipped).
struct Version;

impl<'de> DeserializeSeed<'de> for Version {
    type Value = bool;
    #[inline]
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Version {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_str<E>(self, v: &str) -> Result<bool, E> {
        Ok(v == "2.0")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<bool, A::Error> {
        Skip.visit_map(map).map(|()| false)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<bool, A::Error> {
        Skip.visit_seq(seq).map(|()| false)
    }
    fn visit_bool<E>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_i64<E>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_u64<E>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_f64<E>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_unit<E>(self) -> Result<bool, E> {
        Ok(false)
    }
}

/// Marks an error raised by this module that is bad JSON, not a bad envelope (serde
/// classes every error a visitor raises as data).
pub const NOT_JSON: &str = "not JSON: ";

/// Reads a member whose text the decoder keeps (`id`, `error`, `protocolVersion`).
/// serde_json reads a raw value on its iterative path, which counts no depth and checks
/// no escapes or number ranges, so the text is measured here against what is left of the
/// limit below the `level` containers around it, and then checked as [`Skip`] checks. Values shorter than twice that budget cannot reach it,
/// and neither can values with fewer brackets; only the rest are scanned.
pub struct RawAt(pub usize);

impl<'de> DeserializeSeed<'de> for RawAt {
    type Value = &'de RawValue;
    #[inline]
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<&'de RawValue, D::Error> {
        let raw = <&RawValue>::deserialize(deserializer)?;
        let budget = MAX_NESTING.saturating_sub(self.0);
        if !nests_within(raw.get().as_bytes(), budget) {
            return Err(de::Error::custom(format_args!("recursion limit exceeded: nested deeper than {MAX_NESTING} levels")));
        }
        // A raw value is read on the same lax path as `IgnoredAny`; read its (short) text
        // again as `Skip` does, so that an id like `1e400` is refused here as `Value`
        // would refuse it downstream.
        let mut text = serde_json::Deserializer::from_str(raw.get());
        Skip.deserialize(&mut text).map_err(|e| {
            // The error is reported at the message's position (serde_json adds it), not
            // at the position inside this member's text, and is marked as bad JSON.
            let message = e.to_string();
            let bare = message.strip_suffix(&format!(" at line {} column {}", e.line(), e.column())).unwrap_or(&message);
            de::Error::custom(format_args!("{NOT_JSON}{bare}"))
        })?;
        Ok(raw)
    }
}

/// Whether the containers of `json`, a valid JSON text, nest at most `budget` deep.
#[inline]
fn nests_within(json: &[u8], budget: usize) -> bool {
    // Every container takes two bytes: a value this short cannot nest that deep.
    json.len() / 2 <= budget || nests_within_long(json, budget)
}

#[cold]
fn nests_within_long(json: &[u8], budget: usize) -> bool {
    // Every level takes an opening bracket.
    if memchr::memchr2_iter(b'[', b'{', json).nth(budget).is_none() {
        return true;
    }
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &byte in json {
        match (in_string, escaped, byte) {
            (true, true, _) => escaped = false,
            (true, false, b'\\') => escaped = true,
            (_, _, b'"') => in_string = !in_string,
            (false, _, b'[' | b'{') => {
                depth += 1;
                if depth > budget {
                    return false;
                }
            }
            (false, _, b']' | b'}') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    true
}

/// Stores the first occurrence of a member; a second one is an envelope error.
fn once<T, E: de::Error>(slot: &mut Option<T>, value: T, name: &'static str) -> Result<(), E> {
    if slot.is_some() {
        return Err(E::duplicate_field(name));
    }
    *slot = Some(value);
    Ok(())
}

/// Marks a member present; a second one is an envelope error.
fn mark<E: de::Error>(present: &mut bool, name: &'static str) -> Result<(), E> {
    if std::mem::replace(present, true) {
        return Err(E::duplicate_field(name));
    }
    Ok(())
}

/// Which bodies the decoder wants as whole trees, asked while the envelope is read.
pub trait Trees {
    /// What the decoder knows of a method, looked up once, when its name is read.
    type Method: Copy;
    /// The method of that name, if the decoder knows it.
    fn method(&self, name: &str) -> Option<Self::Method>;
    /// `params` of a request or notification of `method`.
    fn params(&self, method: Self::Method) -> bool;
    /// `result` of the response with this id (its raw JSON text).
    fn result(&self, id: &str) -> bool;
}

/// The members JSON-RPC 2.0 allows, as far as the policy reads them. Strings borrow the
/// message, or the arena when they had escapes; nothing here owns memory. `M` is what
/// the decoder knows of the method (`Trees::Method`).
pub struct Parts<'a, M> {
    /// Present, and whether it is the string `"2.0"`.
    pub jsonrpc: Option<bool>,
    pub id: Option<&'a RawValue>,
    pub method: Option<&'a str>,
    /// The method of that name, when the decoder knows it.
    pub known: Option<M>,
    pub params: Body<'a>,
    pub result: Body<'a>,
    pub error: Option<&'a RawValue>,
}

const FIELDS: &[&str] = &["jsonrpc", "id", "method", "params", "result", "error"];

impl<'a, M> Default for Parts<'a, M> {
    fn default() -> Self {
        Parts {
            jsonrpc: None,
            id: None,
            method: None,
            known: None,
            params: Body::default(),
            result: Body::default(),
            error: None,
        }
    }
}

impl<'a, M: Copy> Parts<'a, M> {
    /// Reads `text`, a JSON object, into these parts, building trees in `arena`. Anything
    /// but the six JSON-RPC members is an envelope error.
    pub fn read<T: Trees<Method = M>>(&mut self, text: &'a str, arena: &'a Bump, trees: &T) -> Result<(), serde_json::Error> {
        let mut de = serde_json::Deserializer::from_str(text);
        de.deserialize_map(EnvelopeSeed { parts: self, arena, trees })?;
        de.end()
    }
}

struct EnvelopeSeed<'p, 'a, 't, T: Trees> {
    parts: &'p mut Parts<'a, T::Method>,
    arena: &'a Bump,
    trees: &'t T,
}

impl<'de: 'a, 'a, T: Trees> Visitor<'de> for EnvelopeSeed<'_, 'a, '_, T> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON-RPC message")
    }

    #[inline(always)]
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let (parts, arena) = (self.parts, self.arena);
        while let Some(key) = map.next_key_seed(Str(arena))? {
            match key {
                "jsonrpc" => once(&mut parts.jsonrpc, map.next_value_seed(Version)?, "jsonrpc")?,
                "id" => once(&mut parts.id, map.next_value_seed(RawAt(1))?, "id")?,
                "method" => {
                    let name = map.next_value_seed(Str(arena))?;
                    once(&mut parts.method, name, "method")?;
                    parts.known = self.trees.method(name);
                }
                "params" => {
                    mark(&mut parts.params.present, "params")?;
                    let tree = parts.known.is_some_and(|m| self.trees.params(m));
                    map.next_value_seed(BodySeed { body: &mut parts.params, arena, tree })?;
                }
                "result" => {
                    mark(&mut parts.result.present, "result")?;
                    let tree = parts.id.is_some_and(|id| self.trees.result(id.get()));
                    map.next_value_seed(BodySeed { body: &mut parts.result, arena, tree })?;
                }
                "error" => once(&mut parts.error, map.next_value_seed(RawAt(1))?, "error")?,
                other => return Err(de::Error::unknown_field(other, FIELDS)),
            }
        }
        Ok(())
    }
}

/// The parts of `params` or `result` the policy reads. Any JSON value is accepted: a
/// non-object simply has none of these parts.
#[derive(Default)]
pub struct Body<'a> {
    pub present: bool,
    pub meta: Option<Meta<'a>>,
    pub update: Member<'a>,
    pub stop_reason: Option<&'a str>,
    pub protocol_version: Option<&'a RawValue>,
    /// The whole body, when a table asked for it before the body was read.
    pub tree: Option<Json<'a>>,
}

struct BodySeed<'p, 'a> {
    body: &'p mut Body<'a>,
    arena: &'a Bump,
    /// Build `tree` as well (then only `meta` of the parts is read: the bodies with
    /// typed checks belong to extension methods, whose other parts no rule reads).
    tree: bool,
}

impl<'de: 'a, 'a> DeserializeSeed<'de> for BodySeed<'_, 'a> {
    type Value = ();
    #[inline(always)]
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        if self.tree {
            deserializer.deserialize_any(TreeBody { body: self.body, arena: self.arena })
        } else {
            deserializer.deserialize_any(self)
        }
    }
}

impl<'de: 'a, 'a> Visitor<'de> for BodySeed<'_, 'a> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    #[inline(always)]
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let (body, arena) = (self.body, self.arena);
        while let Some(key) = map.next_key_seed(Str(arena))? {
            match key {
                "_meta" => once(&mut body.meta, map.next_value_seed(MetaSeed { arena, keep_all: false })?, "_meta")?,
                "update" => {
                    mark(&mut body.update.present, "update")?;
                    map.next_value_seed(MemberSeed { member: &mut body.update, arena })?;
                }
                "stopReason" => once(&mut body.stop_reason, map.next_value_seed(Str(arena))?, "stopReason")?,
                "protocolVersion" => once(&mut body.protocol_version, map.next_value_seed(RawAt(2))?, "protocolVersion")?,
                _ => map.next_value_seed(Skip)?,
            }
        }
        Ok(())
    }

    non_objects_read_as!((), ());
}

/// A body read whole into `tree`, its `_meta` also read into `meta`.
struct TreeBody<'p, 'a> {
    body: &'p mut Body<'a>,
    arena: &'a Bump,
}

impl<'de: 'a, 'a> Visitor<'de> for TreeBody<'_, 'a> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let (body, arena) = (self.body, self.arena);
        let mut members = Members::new_in(arena);
        let mut first = true;
        while let Some(key) = map.next_key_seed(Str(arena))? {
            if std::mem::take(&mut first) && key == RAW_VALUE_TOKEN {
                // As `Tree` reads it, so the tree is the one a second parse builds.
                body.tree = Some(raw_value_tree(&mut map, arena)?);
                return Ok(());
            }
            if key == "_meta" {
                // Every member kept, so the tree holds `_meta` whole for the check.
                let meta = map.next_value_seed(MetaSeed { arena, keep_all: true })?;
                let value = meta.to_json(arena);
                once(&mut body.meta, meta, "_meta")?;
                members.insert(key, value);
            } else {
                members.insert(key, map.next_value_seed(Tree(arena))?);
            }
        }
        body.tree = Some(Json::Object(members.into_slice()));
        Ok(())
    }

    // Anything but an object is kept as the value it is, for the check to reject or accept.
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        self.body.tree = Some(Tree(self.arena).visit_seq(seq)?);
        Ok(())
    }
    fn visit_bool<E>(self, v: bool) -> Result<(), E> {
        self.body.tree = Some(Json::Bool(v));
        Ok(())
    }
    fn visit_i64<E>(self, v: i64) -> Result<(), E> {
        self.body.tree = Some(Json::Number(v.into()));
        Ok(())
    }
    fn visit_u64<E>(self, v: u64) -> Result<(), E> {
        self.body.tree = Some(Json::Number(v.into()));
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        self.body.tree = Some(Tree(self.arena).visit_f64(v)?);
        Ok(())
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<(), E> {
        self.body.tree = Some(Json::String(v));
        Ok(())
    }
    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        self.body.tree = Some(Json::String(self.arena.alloc_str(v)));
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        self.body.tree = Some(Json::Null);
        Ok(())
    }
}

/// A session update member: its kind and its `_meta`, nothing else read.
#[derive(Default)]
pub struct Member<'a> {
    pub present: bool,
    pub is_object: bool,
    pub meta: Option<Meta<'a>>,
    pub session_update: Option<&'a str>,
}

struct MemberSeed<'p, 'a> {
    member: &'p mut Member<'a>,
    arena: &'a Bump,
}

impl<'de: 'a, 'a> DeserializeSeed<'de> for MemberSeed<'_, 'a> {
    type Value = ();
    #[inline(always)]
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de: 'a, 'a> Visitor<'de> for MemberSeed<'_, 'a> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a session update member")
    }
    #[inline(always)]
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let (member, arena) = (self.member, self.arena);
        member.is_object = true;
        while let Some(key) = map.next_key_seed(Str(arena))? {
            match key {
                "_meta" => once(&mut member.meta, map.next_value_seed(MetaSeed { arena, keep_all: false })?, "_meta")?,
                "sessionUpdate" => once(&mut member.session_update, map.next_value_seed(Str(arena))?, "sessionUpdate")?,
                _ => map.next_value_seed(Skip)?,
            }
        }
        Ok(())
    }
    non_objects_read_as!((), ());
}

/// The members of a `_meta` object, read in the same pass as the envelope: the value of
/// every `checkfu.*` member is parsed into the tree its generated check reads; other
/// namespaces' members are skipped (they are not ours to judge) unless the whole body is
/// wanted as a tree. A repeated key is an envelope error: which of two values a consumer
/// would act on is not something to leave to its JSON library.
#[derive(Clone, Copy, Default)]
pub struct Meta<'a>(pub &'a [(&'a str, Option<Json<'a>>)]);

impl<'a> Meta<'a> {
    /// The `_meta` object as a tree (members skipped while reading are `null`).
    fn to_json(self, arena: &'a Bump) -> Json<'a> {
        Json::Object(arena.alloc_slice_fill_iter(self.0.iter().map(|(k, v)| (*k, v.clone().unwrap_or(Json::Null)))))
    }
}

struct MetaSeed<'a> {
    arena: &'a Bump,
    keep_all: bool,
}

impl<'de: 'a, 'a> DeserializeSeed<'de> for MetaSeed<'a> {
    type Value = Meta<'a>;
    #[inline(always)]
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Meta<'a>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de: 'a, 'a> Visitor<'de> for MetaSeed<'a> {
    type Value = Meta<'a>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a `_meta` object")
    }
    #[inline(always)]
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Meta<'a>, A::Error> {
        let arena = self.arena;
        let mut members = ArenaVec::new_in(arena);
        while let Some(key) = map.next_key_seed(Str(arena))? {
            if members.iter().any(|(k, _)| *k == key) {
                return Err(de::Error::custom(format_args!("duplicate `_meta` member `{key}`")));
            }
            let value = if self.keep_all || key.starts_with(META_NAMESPACE) {
                Some(map.next_value_seed(Tree(arena))?)
            } else {
                map.next_value_seed(Skip)?;
                None
            };
            members.push((key, value));
        }
        Ok(Meta(members.into_bump_slice()))
    }
    fn visit_unit<E>(self) -> Result<Meta<'a>, E> {
        Ok(Meta::default())
    }
}

/// The JSON-RPC error object.
#[derive(Deserialize)]
pub struct ErrorObject<'a> {
    pub code: i64,
    #[serde(borrow)]
    pub message: Cow<'a, str>,
}

#[cfg(test)]
mod tests {
    use super::*;

    struct NoTrees;
    impl Trees for NoTrees {
        type Method = ();
        fn method(&self, _: &str) -> Option<()> {
            Some(())
        }
        fn params(&self, (): ()) -> bool {
            false
        }
        fn result(&self, _: &str) -> bool {
            false
        }
    }

    struct AllTrees;
    impl Trees for AllTrees {
        type Method = ();
        fn method(&self, _: &str) -> Option<()> {
            Some(())
        }
        fn params(&self, (): ()) -> bool {
            true
        }
        fn result(&self, _: &str) -> bool {
            true
        }
    }

    fn read<'a, T: Trees<Method = ()>>(text: &'a str, trees: &T) -> Result<Parts<'a, ()>, serde_json::Error> {
        // Each test reads a few small messages; leaking their arenas keeps the cases short.
        let arena: &'a Bump = Box::leak(Box::new(Bump::new()));
        let mut parts = Parts::default();
        parts.read(text, arena, trees).map(|()| parts)
    }

    #[test]
    fn null_results_stay_present_and_bodies_read_their_parts() {
        let p = read(r#"{"jsonrpc":"2.0","id":1,"result":null}"#, &NoTrees).expect("parses");
        assert!(p.result.present && p.result.meta.is_none());
        assert!(p.error.is_none());
        let p = read(
            r#"{"jsonrpc":"2.0","method":"m","params":{"x":[1,{"y":2}],"update":{"sessionUpdate":"plan","_meta":{"k":1}}}}"#,
            &NoTrees,
        )
        .expect("parses");
        let update = p.params.update;
        assert!(update.present && update.is_object);
        assert_eq!(update.session_update, Some("plan"));
        assert_eq!(update.meta.map(|m| m.0.len()), Some(1));
    }

    #[test]
    fn duplicate_parts_and_unknown_members_are_errors() {
        for text in [
            r#"{"params":{"_meta":{},"_meta":{}}}"#,
            r#"{"params":{"_meta":{"a":1,"a":2}}}"#,
            r#"{"params":{},"params":{}}"#,
            r#"{"params":{"update":{},"update":{}}}"#,
            r#"{"id":1,"id":2}"#,
            r#"{"jsonrpc":"2.0","extra":1}"#,
        ] {
            assert!(read(text, &NoTrees).is_err(), "{text}");
        }
        let p = read(r#"{"params":{"_meta":{"vendor.x":{"deep":[1]},"checkfu.turn":{"a":"b"}}}}"#, &NoTrees).expect("parses");
        let meta = p.params.meta.expect("meta");
        assert!(meta.0[0].1.is_none(), "other namespaces are skipped");
        assert!(meta.0[1].1.as_ref().is_some_and(Json::is_object), "checkfu members are parsed");
    }

    /// The scan agrees with serde_json's own count, strings with brackets and escapes
    /// included, on both sides of the limit.
    #[test]
    fn nesting_is_measured_as_serde_json_counts_it() {
        for inner in ["1", r#""]]}}""#, r#""\\""#, r#""\"[[""#, r#"{"[":"\\["}"#] {
            for depth in 120..=130 {
                let text = format!("{}{inner}{}", "[".repeat(depth), "]".repeat(depth));
                let nested = if inner.starts_with('{') { depth + 1 } else { depth };
                assert_eq!(nests_within(text.as_bytes(), MAX_NESTING), nested <= MAX_NESTING, "{depth} {inner}");
                let parses = serde_json::from_str::<serde_json::Value>(&text).is_ok();
                assert_eq!(parses, nested <= MAX_NESTING, "{depth} {inner}");
            }
        }
    }

    /// A body read as a tree is the tree serde_json would build for it, `_meta` included.
    #[test]
    fn wanted_bodies_are_whole_trees_after_the_method_or_id() {
        let text = r#"{"method":"m","id":7,"params":{"a":[1,"x"],"a":2,"_meta":{"vendor.x":1,"checkfu.y":{"z":null}}},"result":[true]}"#;
        let p = read(text, &AllTrees).expect("parses");
        let arena = Bump::new();
        let params = Json::parse(r#"{"a":2,"_meta":{"vendor.x":1,"checkfu.y":{"z":null}}}"#, &arena).expect("json");
        assert_eq!(p.params.tree, Some(params));
        assert_eq!(p.params.meta.map(|m| m.0.len()), Some(2));
        assert_eq!(p.result.tree, Json::parse("[true]", &arena).ok());
        // Named after the body: not known in time, so no tree (the decoder parses again).
        let p = read(r#"{"params":{"a":1},"method":"m","result":2,"id":1}"#, &AllTrees).expect("parses");
        assert!(p.params.tree.is_none() && p.result.tree.is_none());
        assert!(read(r#"{"method":"m","params":{"_meta":{"a":1,"a":1}}}"#, &AllTrees).is_err());
    }
}
