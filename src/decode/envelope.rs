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
//! A typed ACP message (nearly all the traffic) is first read another way:
//! [`Parts::read_direct`] reads the whole message with `exact::direct_tree`, which walks
//! the bytes itself, and takes the parts from that tree. Every body of such a message is
//! wanted whole anyway, and the walk costs about what serde_json's `IgnoredAny` costs to
//! skip the text, where the seeds below cost nearly twice that. Whatever it does not
//! take (an `error` member, a body no table wants whole, anything unusual in the text)
//! is read by the seeds, as before.
//!
//! The seeds' visitor methods are `#[inline(always)]`: together they are one parser, and
//! whether LLVM inlined them into serde_json's map access on its own changed with
//! unrelated code elsewhere in the crate (the benchmark moved by 7%, 6% more instructions).

use std::borrow::Cow;
use std::fmt;

use bumpalo::collections::Vec as ArenaVec;
use bumpalo::Bump;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::skip::{non_objects_read_as, number_key, Id, IdKey, RawAt, Skip, Version};
use super::tables::META_NAMESPACE;
use crate::exact::{
    direct_tree, number_member, raw_value_tree, unexpected_number, with_number_member, Json, JsonNumber, Members, Str, Tree, NUMBER_TOKEN,
    RAW_VALUE_TOKEN,
};
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
    /// `result` of the response with this id.
    fn result(&self, id: &[u8]) -> bool;
    /// Every body, whatever its method or id: the caller wants the message's whole tree.
    fn whole(&self) -> bool {
        false
    }
}

/// The members JSON-RPC 2.0 allows, as far as the policy reads them. Strings borrow the
/// message, or the arena when they had escapes; nothing here owns memory. `M` is what
/// the decoder knows of the method (`Trees::Method`).
pub struct Parts<'a, M> {
    /// Present, and whether it is the string `"2.0"`.
    pub jsonrpc: Option<bool>,
    pub id: Option<IdKey>,
    pub method: Option<&'a str>,
    /// The method of that name, when the decoder knows it.
    pub known: Option<M>,
    pub params: Body<'a>,
    pub result: Body<'a>,
    pub error: Option<ErrorMember<'a>>,
    /// The whole message, when [`Parts::read_direct`] read it.
    pub whole: Option<Json<'a>>,
}

/// A response's `error` member: its text, as the envelope pass keeps it, or its tree, as
/// the direct reader took it (only a well-formed error object: the others are left to
/// the envelope pass, whose errors name what is wrong).
#[derive(Clone, Copy)]
pub enum ErrorMember<'a> {
    Raw(&'a RawValue),
    Tree { code: i64, message: &'a str },
}

impl<'a> ErrorMember<'a> {
    /// The error object's `code` and `message`.
    pub fn object(&self) -> Result<ErrorObject<'a>, serde_json::Error> {
        match *self {
            ErrorMember::Raw(raw) => serde_json::from_str::<ErrorObject>(raw.get()),
            ErrorMember::Tree { code, message } => Ok(ErrorObject { code, message: Cow::Borrowed(message) }),
        }
    }

    /// The error as the direct reader can take it: an object whose `code` is an integer
    /// an `i64` holds and whose `message` is a string, as [`ErrorObject`] reads them.
    fn from_tree(value: &Json<'a>) -> Option<ErrorMember<'a>> {
        let code = match value.get("code")? {
            Json::Number(JsonNumber::UInt(u)) => i64::try_from(*u).ok()?,
            Json::Number(JsonNumber::Int(i)) => *i,
            _ => return None,
        };
        let message = value.get("message")?.as_str()?;
        Some(ErrorMember::Tree { code, message })
    }
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
            whole: None,
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

impl<'a, M: Copy> Parts<'a, M> {
    /// Fills these parts from the whole message read by [`direct_tree`], as [`Parts::read`]
    /// would fill them, and answers `true`; or answers `false` (the parts are then partly
    /// filled: start again with `read`) when the envelope pass reads the message
    /// differently from its tree: a body no table asks for whole (its members are skipped,
    /// `protocolVersion` kept as text), an `error` that is not a well-formed error object
    /// (its text kept, for the envelope pass's error), an unknown or repeated member
    /// (errors worded by serde_json), or text the direct reader leaves to serde_json. Typed
    /// ACP messages, nearly all the traffic, take this path: one walk of the bytes instead
    /// of serde's visitors.
    ///
    /// Inlined into the decoder's one caller: out of line (it grew with the `error` member
    /// and the whole tree) it cost the real SDK turn about 2% more instructions.
    #[inline]
    pub fn read_direct<T: Trees<Method = M>>(&mut self, text: &'a str, arena: &'a Bump, trees: &T) -> bool {
        let Some(tree @ Json::Object(members)) = direct_tree(text, arena) else { return false };
        // In document order, as the envelope pass meets them: whether a body is wanted
        // whole depends on the method or id read before it.
        for (key, value) in members {
            // Tested in the order members come on the wire, each test a length and a word:
            // a `match` became a jump table on the length, an indirect branch whose target
            // changed with every member.
            let key = *key;
            if key == "jsonrpc" {
                self.jsonrpc = Some(value.as_str() == Some("2.0"));
            } else if key == "id" {
                match id_key(value) {
                    Some(id) => self.id = Some(id),
                    None => return false,
                }
            } else if key == "method" {
                let Json::String(name) = value else { return false };
                self.method = Some(name);
                self.known = trees.method(name);
            } else if key == "params" {
                let wanted = trees.whole() || self.known.is_some_and(|m| trees.params(m));
                if !self.params.read_tree(value, wanted, arena) {
                    return false;
                }
            } else if key == "result" {
                let wanted = trees.whole() || self.id.as_ref().is_some_and(|id| trees.result(id));
                if !self.result.read_tree(value, wanted, arena) {
                    return false;
                }
            } else if key == "error" && self.error.is_none() {
                match ErrorMember::from_tree(value) {
                    Some(error) => self.error = Some(error),
                    None => return false,
                }
            } else {
                return false;
            }
        }
        self.whole = Some(tree);
        true
    }
}

/// The id's key as [`Id`] reads it from the same value, or `None` where it errs.
fn id_key(value: &Json<'_>) -> Option<IdKey> {
    type E = serde_json::Error;
    match value {
        Json::String(s) => Id.visit_str::<E>(s).ok(),
        Json::Null => Id.visit_unit::<E>().ok(),
        Json::Number(n) => number_key::<E>(*n).ok(),
        _ => None,
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
        let mut first = true;
        while let Some(key) = map.next_key_seed(Str(arena))? {
            if std::mem::take(&mut first) && key == NUMBER_TOKEN {
                return Err(with_number_member(&mut map, |n| unexpected_number(n, &"a JSON-RPC message"))?);
            }
            match key {
                "jsonrpc" => once(&mut parts.jsonrpc, map.next_value_seed(Version)?, "jsonrpc")?,
                "id" => once(&mut parts.id, map.next_value_seed(Id)?, "id")?,
                "method" => {
                    let name = map.next_value_seed(Str(arena))?;
                    once(&mut parts.method, name, "method")?;
                    parts.known = self.trees.method(name);
                }
                "params" => {
                    mark(&mut parts.params.present, "params")?;
                    let tree = self.trees.whole() || parts.known.is_some_and(|m| self.trees.params(m));
                    map.next_value_seed(BodySeed { body: &mut parts.params, arena, tree })?;
                }
                "result" => {
                    mark(&mut parts.result.present, "result")?;
                    let tree = self.trees.whole() || parts.id.as_ref().is_some_and(|id| self.trees.result(id));
                    map.next_value_seed(BodySeed { body: &mut parts.result, arena, tree })?;
                }
                "error" => once(&mut parts.error, ErrorMember::Raw(map.next_value_seed(RawAt(1))?), "error")?,
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

impl<'a> Body<'a> {
    /// When the body was read whole (its method has a typed check), the parts the policy
    /// reads are taken from the tree: the update member, its `_meta`, the stop reason.
    pub fn complete_from_tree(&mut self, arena: &'a Bump) {
        // One pass over the members (a tree's keys are unique), not a search per part.
        let Some(Json::Object(members)) = &self.tree else { return };
        let members: &'a [(&'a str, Json<'a>)] = members;
        for (key, value) in members {
            match *key {
                "update" => self.update_from_tree(value, arena),
                "stopReason" if self.stop_reason.is_none() => self.stop_reason = value.as_str(),
                _ => {}
            }
        }
    }

    fn update_from_tree(&mut self, update: &Json<'a>, arena: &'a Bump) {
        self.update.present = true;
        self.update.is_object = update.is_object();
        let Json::Object(members) = update else { return };
        for (key, value) in *members {
            match *key {
                "sessionUpdate" => self.update.session_update = value.as_str(),
                "_meta" => {
                    if let Json::Object(meta) = value {
                        self.update.meta = Some(Meta(arena.alloc_slice_fill_iter(meta.iter().map(|(k, v)| (*k, Some(v.clone()))))));
                    }
                }
                _ => {}
            }
        }
    }

    /// This body from its tree, as [`BodySeed`] reads it: whole when `wanted`, else only
    /// the parts the policy reads. `false` where the envelope pass must decide.
    #[inline]
    fn read_tree(&mut self, value: &Json<'a>, wanted: bool, arena: &'a Bump) -> bool {
        if wanted {
            self.whole(value, arena)
        } else {
            self.unwanted(value, arena)
        }
    }

    /// A body no table wants whole (another vendor's extension method, the answer to a
    /// request the decoder does not know), as [`BodySeed`] reads it without a tree: its
    /// `_meta`, keeping only the `checkfu.*` members' values. Leaving these bodies to the
    /// envelope pass read each such message twice, 3% of the real SDK turn for its two
    /// extension notifications. `false` where `BodySeed` errs, and for the members it
    /// reads with checks of their own (the update member, the stop reason and the
    /// protocol version), which stay the envelope pass's.
    fn unwanted(&mut self, value: &Json<'a>, arena: &'a Bump) -> bool {
        self.present = true;
        let Json::Object(members) = value else { return true };
        for (key, value) in *members {
            match *key {
                "_meta" => match value {
                    Json::Object(meta) => {
                        let kept = |(k, v): &(&'a str, Json<'a>)| (*k, k.starts_with(META_NAMESPACE).then(|| v.clone()));
                        self.meta = Some(Meta(arena.alloc_slice_fill_iter(meta.iter().map(kept))));
                    }
                    Json::Null => self.meta = Some(Meta::default()),
                    _ => return false,
                },
                "update" | "stopReason" | "protocolVersion" => return false,
                _ => {}
            }
        }
        true
    }

    /// This body read whole from its tree, as [`TreeBody`] reads it: `_meta` kept as
    /// well, and a `null` one read as no members. `false` where `TreeBody` errs (a
    /// `_meta` that is neither an object nor `null`).
    fn whole(&mut self, value: &Json<'a>, arena: &'a Bump) -> bool {
        self.present = true;
        let mut tree = value.clone();
        if let Json::Object(members) = value {
            match value.get("_meta") {
                None => {}
                Some(Json::Object(meta)) => {
                    self.meta = Some(Meta(arena.alloc_slice_fill_iter(meta.iter().map(|(k, v)| (*k, Some(v.clone()))))));
                }
                Some(Json::Null) => {
                    self.meta = Some(Meta::default());
                    let empty = |(k, v): &(&'a str, Json<'a>)| (*k, if *k == "_meta" { Json::Object(&[]) } else { v.clone() });
                    tree = Json::Object(arena.alloc_slice_fill_iter(members.iter().map(empty)));
                }
                Some(_) => return false,
            }
        }
        self.tree = Some(tree);
        true
    }

    /// `protocolVersion` as written, from the raw member or the tree.
    pub fn protocol_version_text(&self) -> Option<String> {
        if let Some(raw) = self.protocol_version {
            return Some(raw.get().to_string());
        }
        match self.tree.as_ref()?.get("protocolVersion")? {
            Json::Number(n) => Some(n.to_string()),
            other => Some(format!("{other:?}")),
        }
    }
}

struct BodySeed<'p, 'a> {
    body: &'p mut Body<'a>,
    arena: &'a Bump,
    /// Build `tree` as well (then only `meta` of the parts is read while parsing; the
    /// update member and the stop reason are taken from the tree afterwards, by
    /// `Body::complete_from_tree`).
    tree: bool,
}

impl<'de: 'a, 'a> DeserializeSeed<'de> for BodySeed<'_, 'a> {
    type Value = ();
    #[inline(always)]
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        if self.tree {
            let body = self.body;
            body.tree = Some(deserializer.deserialize_any(TreeBody { meta: &mut body.meta, arena: self.arena })?);
            Ok(())
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
        let mut first = true;
        while let Some(key) = map.next_key_seed(Str(arena))? {
            if std::mem::take(&mut first) && key == NUMBER_TOKEN {
                // A number body, as serde_json with `arbitrary_precision` hands it over.
                return with_number_member(&mut map, |_| ());
            }
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

/// A body read whole as a tree, its `_meta` also read into `meta`. Only an object differs
/// from what [`Tree`] builds; anything else is the value it is, for the check to judge.
struct TreeBody<'p, 'a> {
    meta: &'p mut Option<Meta<'a>>,
    arena: &'a Bump,
}

impl<'de: 'a, 'a> Visitor<'de> for TreeBody<'_, 'a> {
    type Value = Json<'a>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json<'a>, A::Error> {
        let arena = self.arena;
        let mut members = Members::new_in(arena);
        let mut first = true;
        while let Some(key) = map.next_key_seed(Str(arena))? {
            let at_first = std::mem::take(&mut first);
            if at_first && key == RAW_VALUE_TOKEN {
                // As `Tree` reads it, so the tree is the one a second parse builds.
                return raw_value_tree(&mut map, arena);
            }
            if at_first && key == NUMBER_TOKEN {
                return number_member(&mut map, arena).map(Json::Number);
            }
            if key == "_meta" {
                // Every member kept, so the tree holds `_meta` whole for the check.
                let meta = map.next_value_seed(MetaSeed { arena, keep_all: true })?;
                let value = meta.to_json(arena);
                once(self.meta, meta, "_meta")?;
                members.insert(key, value);
            } else {
                members.insert(key, map.next_value_seed(Tree(arena))?);
            }
        }
        Ok(Json::Object(members.into_slice()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Json<'a>, A::Error> {
        Tree(self.arena).visit_seq(seq)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Json<'a>, E> {
        Tree(self.arena).visit_bool(v)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Json<'a>, E> {
        Tree(self.arena).visit_i64(v)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Json<'a>, E> {
        Tree(self.arena).visit_u64(v)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Json<'a>, E> {
        Tree(self.arena).visit_f64(v)
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Json<'a>, E> {
        Tree(self.arena).visit_borrowed_str(v)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Json<'a>, E> {
        Tree(self.arena).visit_str(v)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Json<'a>, E> {
        Tree(self.arena).visit_unit()
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
        let mut first = true;
        while let Some(key) = map.next_key_seed(Str(arena))? {
            if std::mem::take(&mut first) && key == NUMBER_TOKEN {
                // A number member, as serde_json with `arbitrary_precision` hands it over.
                member.is_object = false;
                return with_number_member(&mut map, |_| ());
            }
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
            if members.is_empty() && key == NUMBER_TOKEN {
                return Err(with_number_member(&mut map, |n| unexpected_number(n, &"a `_meta` object"))?);
            }
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
        fn result(&self, _: &[u8]) -> bool {
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
        fn result(&self, _: &[u8]) -> bool {
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

    /// What the decoder reads of a body, for comparing two ways of reading it.
    fn body_summary(body: &Body<'_>) -> String {
        let update = &body.update;
        format!(
            "{} {:?} {:?} {} {} {:?} {:?} {:?} {:?}",
            body.present,
            body.tree,
            body.meta.map(|m| m.0),
            update.present,
            update.is_object,
            update.session_update,
            update.meta.map(|m| m.0),
            body.stop_reason,
            body.protocol_version.map(RawValue::get),
        )
    }

    fn summary(p: &Parts<'_, ()>) -> String {
        let bodies = format!("{} / {}", body_summary(&p.params), body_summary(&p.result));
        // The error as the decoder reads it: the direct reader keeps its tree, the
        // envelope pass its text.
        let error = p.error.map(|e| e.object().map(|o| (o.code, o.message.into_owned())).map_err(|e| e.to_string()));
        format!("{:?} {:?} {:?} {:?} {bodies} {:?}", p.jsonrpc, p.id, p.method, p.known, error)
    }

    /// Wherever the direct reader takes a message, it fills the parts the envelope pass
    /// fills: on the recorded SDK traffic, valid and invalid, and on every single-byte
    /// mutation of its messages into a character that matters to JSON; with every body
    /// wanted whole, and with none (another vendor's extension, an unknown request's answer).
    #[test]
    fn direct_reading_fills_the_parts_the_envelope_pass_fills() {
        direct_reading_agrees(&AllTrees, "every body wanted");
        direct_reading_agrees(&NoTrees, "no body wanted");
    }

    fn direct_reading_agrees<T: Trees<Method = ()>>(trees: &T, case: &str) {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/sdk-traffic");
        let mut messages = Vec::new();
        // The files of the v1 traffic (its `v2/` directory holds v2's).
        for entry in std::fs::read_dir(dir).expect("traffic").flatten().filter(|e| e.path().is_file()) {
            let text = std::fs::read_to_string(entry.path()).expect("readable");
            for line in text.lines().filter(|l| !l.trim().is_empty()) {
                let record: serde_json::Value = serde_json::from_str(line).expect("record");
                messages.push(record.get("message").unwrap_or(&record).to_string());
            }
        }
        for text in [
            r#"{"jsonrpc":"2.0","id":-3,"method":"m","params":{"_meta":null,"a":[1.0,-0,"\u00e9"]}}"#,
            r#"{"jsonrpc":"2.0","id":1.0,"method":"m","params":{"_meta":{"checkfu.x":{"y":1},"v.z":[]}}}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"m","params":{"_meta":1}}"#,
            r#"{"jsonrpc":"2.0","id":"a\u0062","result":{"_meta":null,"stopReason":"end_turn"}}"#,
            r#"{"jsonrpc":[2],"id":null,"result":[{"update":{"sessionUpdate":"plan"}}]}"#,
            r#"{"result":7,"id":18446744073709551615}"#,
            r#"{"jsonrpc":"2.0","method":"_v/x","params":{"_meta":{"v.a":[1],"checkfu.b":{"c":2}},"k":{"update":1}}}"#,
            r#"{"jsonrpc":"2.0","method":"_v/x","params":{"update":{"sessionUpdate":"plan"},"stopReason":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":2,"result":{"protocolVersion":1,"_meta":"no"}}"#,
        ] {
            messages.push(text.to_string());
        }
        messages.sort();
        messages.dedup();
        let (mut taken, mut total) = (0, 0);
        for message in &messages {
            let mut variants = vec![message.clone()];
            // Each ASCII byte replaced (every third, to keep the test quick).
            for i in (0..message.len()).step_by(3).filter(|&i| message.as_bytes()[i].is_ascii()) {
                for with in ["\"", "\\", ",", "}", "]", "1", "-", " ", "u", ".5", "null", "{}"] {
                    variants.push(format!("{}{with}{}", &message[..i], &message[i + 1..]));
                }
            }
            for text in &variants {
                total += 1;
                let arena = Bump::new();
                let mut direct = Parts::default();
                if !direct.read_direct(text, &arena, trees) {
                    continue;
                }
                taken += 1;
                let read = read(text, trees).unwrap_or_else(|e| panic!("{case}: taken directly but refused by the pass ({e}): {text}"));
                assert_eq!(summary(&direct), summary(&read), "{case}: {text}");
            }
        }
        assert!(taken > messages.len() && taken < total, "{case}: {taken} of {total} taken directly");
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
