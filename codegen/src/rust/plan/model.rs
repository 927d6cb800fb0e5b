//! The plan's data: what the analysis decided and every emitter reads. The decoder tables'
//! rows (slots, methods, golden vectors, each naming the generated definitions it checks),
//! the definitions the schema types must hoist to name them (`Pins`), and the ACP grammar
//! of the pinned schema. Analysis fills it (`decoder`, `grammar`, `annotated`); nothing
//! here emits.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalog::model::{Direction, Side, SlotClass};
use crate::schema::normalize::ANNOTATIONS;
use crate::schema::SchemaSet;

/// Schema file → raw JSON Pointer → the definition name to hoist that node under.
pub type Pins = BTreeMap<String, BTreeMap<String, String>>;

/// A generated definition: the module of its schema file and its type name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Def {
    pub module: String,
    pub name: String,
}

/// Where a slot rides (shared with the runtime, which reads the tables written here).
pub use checkfu_wire_vocab::Part;

pub struct SlotPlan {
    pub key: String,
    pub method: Option<String>,
    pub part: Part,
    pub direction: Direction,
    pub class: SlotClass,
    pub payload: Def,
    pub result: Option<Def>,
    pub safety_profile: bool,
    pub requires: Option<(String, String)>,
    /// Where ACP v2 carries the slot: the catalog's `carrier_v2`, else v1's carrier, in
    /// either case a method of v2's grammar.
    pub v2: Carrier,
}

/// A slot's carrier: the ACP method whose message carries it (`None` for an extension
/// method) and the part of that message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Carrier {
    pub method: Option<String>,
    pub part: Part,
}

pub struct MethodPlan {
    pub name: String,
    pub source: String,
    pub side: Side,
    pub notification: bool,
    pub params: Option<Def>,
    pub result: Option<Def>,
    /// For families whose root schema is the whole message.
    pub envelope: Option<Def>,
}

pub struct VectorPlan {
    pub name: String,
    pub direction: String,
    pub wire: Def,
}

#[derive(Default)]
pub struct Plan {
    /// The namespace of the `_meta` slot keys (`checkfu.`): what the decoder judges.
    pub namespace: String,
    pub pins: Pins,
    pub slots: Vec<SlotPlan>,
    pub methods: Vec<MethodPlan>,
    /// The closed part of the pinned ACP schema's grammar.
    pub grammar: Grammar,
    /// The ACP grammar the protocol literal promises, for the revisions lock to record.
    pub floor: Grammar,
    /// The catalog's optional-fidelity `sessionUpdate` kinds (`[acp]
    /// optional_fidelity_updates`), each a kind of `grammar`. Kept apart from the grammar:
    /// it is Checkfu's decision about the schema, not part of what the literal promises.
    pub fidelity_updates: Vec<String>,
    pub vectors: Vec<VectorPlan>,
    pub warnings: Vec<String>,
    /// ACP v2, decoded beside v1 (`[acp_v2]`).
    pub v2: PlanV2,
}

/// ACP v2's share of the plan: its grammar, its methods (v2's own `initialize`,
/// `session/prompt`, …, with the v2 schema's definitions) and its optional-fidelity kinds.
/// The slots are v1's rows (each with its v2 carrier, `SlotPlan::v2`) and the extension
/// methods are v1's: they ride both.
#[derive(Default)]
pub struct PlanV2 {
    pub grammar: GrammarV2,
    pub methods: Vec<MethodPlan>,
    pub fidelity_updates: Vec<String>,
}

impl Plan {
    /// The definition for `file#pointer`: an existing definition when the node is one or
    /// refers to one, else a pinned hoist under `wanted`.
    pub(crate) fn entry(&mut self, schemas: &SchemaSet, reference: &str, wanted: &str) -> Result<Def, String> {
        let (file, pointer) = reference.split_once('#').unwrap_or((reference, ""));
        // Read by the one pointer reader (`SchemaSet::resolve`), which refuses what RFC 6901
        // refuses, as every other reference the generator follows.
        let node = schemas.resolve(reference)?;
        let document = schemas.files.get(file).ok_or_else(|| format!("no schema file `{file}`"))?;
        let (module, root) = crate::rust::names::names(file);
        let definitions = crate::schema::normalize::definition_names(&root, document);
        let name = if let Some(name) = definitions.get(pointer) {
            name.clone()
        } else if let Some(name) = referenced_def(node).and_then(|target| definitions.get(&target)) {
            name.clone()
        } else {
            self.pins.entry(file.to_string()).or_default().insert(pointer.to_string(), wanted.to_string());
            wanted.to_string()
        };
        Ok(Def { module, name })
    }
}

/// The pointer of the definition a node stands for, when it is `{"$ref": "#/$defs/X"}` or
/// `{"allOf": [{"$ref": …}]}` plus annotations.
fn referenced_def(node: &Value) -> Option<String> {
    let object = node.as_object()?;
    let asserts = |k: &String| !ANNOTATIONS.contains(&k.as_str());
    let reference = match object.keys().filter(|k| asserts(k)).collect::<Vec<_>>().as_slice() {
        [k] if *k == "$ref" => object.get("$ref")?.as_str()?.to_string(),
        [k] if *k == "allOf" => match object.get("allOf")?.as_array()?.as_slice() {
            [only] if only.as_object()?.len() == 1 => only.get("$ref")?.as_str()?.to_string(),
            _ => return None,
        },
        _ => return None,
    };
    crate::schema::normalize::ref_target(&reference).ok()
}

/// The closed part of the ACP grammar: the protocol version, the methods that carry the
/// closed vocabularies, those vocabularies, and every method with its side. The pinned
/// schema's is read whole; the floor a protocol literal promises is one recorded in the
/// revisions lock, so its field names and shape are part of that literal's pinned content:
/// keep them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grammar {
    /// `revisions.wire_protocol_version`, checked against the schema's range for it.
    pub protocol_version: u32,
    /// The method whose response carries `protocolVersion`.
    pub version_method: String,
    /// The notification whose `params.update` is a session update member.
    pub update_method: String,
    /// The method whose response carries `stopReason`.
    pub prompt_method: String,
    pub session_update_kinds: Vec<String>,
    pub stop_reasons: Vec<String>,
    pub methods: Vec<GrammarMethod>,
}

/// ACP v2's grammar, read from its pinned schema: the version method and version, the
/// update method and the `sessionUpdate` kinds the schema names (it admits others: its
/// enumerations are open), and every method with its side.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct GrammarV2 {
    pub protocol_version: u32,
    pub version_method: String,
    pub update_method: String,
    pub session_update_kinds: Vec<String>,
    pub methods: Vec<GrammarMethod>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrammarMethod {
    pub name: String,
    pub side: Side,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub notification: bool,
}

/// How a method is named in the grammar's diagnostics: `a notification` / `a request`.
pub fn kind(notification: bool) -> &'static str {
    if notification {
        "a notification"
    } else {
        "a request"
    }
}

/// The side that handles a method, as the grammar projection and diagnostics write it.
pub fn side(s: Side) -> &'static str {
    match s {
        Side::Agent => "agent",
        Side::Client => "client",
        Side::Protocol => "protocol",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A slot's or a method's reference is read by the one pointer reader, as every other
    /// reference the generator follows: `~2` is no escape (RFC 6901), even where a key
    /// spelled with it exists (serde_json's lookup took it as that key).
    #[test]
    fn a_reference_is_read_by_rfc_6901() {
        let document = serde_json::json!({"$defs": {"a~2b": {"type": "string"}, "a~b": {"type": "integer"}}});
        let schemas = SchemaSet { files: [("x.json".to_string(), document)].into(), texts: Default::default() };
        let mut plan = Plan::default();
        let refused = plan.entry(&schemas, "x.json#/$defs/a~2b", "Wanted").expect_err("refused");
        assert!(refused.contains("is not a JSON Pointer"), "{refused}");
        assert_eq!(plan.entry(&schemas, "x.json#/$defs/a~0b", "Wanted").map(|d| d.name), Ok("AB".to_string()));
    }
}
