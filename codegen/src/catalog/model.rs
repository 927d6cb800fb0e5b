//! The catalog model: the typed shape of `catalog/catalog.toml`.
//!
//! One model serves three purposes: it is what the TOML deserializes into (with spans, so
//! diagnostics can point into the file), what `schemars` derives the editor schema from,
//! and what the canonical JSON form (and so the catalog's sha256) is computed over.
//! Names are plain strings here; `validate` resolves them and reports unknown ones.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::spanned::Spanned;

/// The enums the runtime shares (its tables name them), defined below both in
/// `checkfu-wire-vocab`.
pub use checkfu_wire_vocab::{Direction, Mode, Side, SlotClass};

/// A name or value as written in the catalog, with its location.
pub type Name = Spanned<String>;

/// Axis name → value, as written in an envelope or a ceiling. Rendering order comes from
/// the axis list, not from this map.
pub type AxisValues = BTreeMap<Name, Name>;

/// The whole catalog file.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Catalog {
    /// Revision identities: compatibility literals, bumped on any change of meaning.
    pub revisions: Revisions,
    /// Capability axes, each with a vocabulary ordered weakest to strongest.
    pub axes: Vec<Axis>,
    /// Runner drivers and their server-owned envelopes per retention mode.
    pub drivers: Vec<Driver>,
    /// Lanes that own their envelope without a Runner driver (the connected runtime).
    #[serde(default)]
    pub lanes: Vec<Lane>,
    /// The `checkfu.capabilities` declaration slot: admitted upgrades and mechanism members.
    pub declaration: Declaration,
    /// Harness entries, in the order the tables show them.
    pub harnesses: Vec<Harness>,
    /// The extension slots: `_meta` keys and extension methods.
    pub slots: Vec<Slot>,
    /// The RunnerObservation vocabulary.
    pub observations: Observations,
    /// Observation members only a declared axis may emit.
    #[serde(default)]
    pub gated_emissions: Vec<GatedEmission>,
    /// The conformance grammar's checks.
    pub conformance: Vec<ConformanceCheck>,
    /// The ACP v1 base grammar the decoder keeps closed.
    pub acp: Acp,
    /// The official ACP v2 schema, compiled and decoded beside v1.
    pub acp_v2: AcpV2,
    /// Extension method families read from input schemas.
    #[serde(default)]
    pub method_sources: Vec<MethodSource>,
    /// Closed vocabularies of the harness fields the support snapshot publishes.
    pub vocabularies: Vocabularies,
    /// Pairs of published values the reference page's rows hold together.
    #[serde(default)]
    pub pairings: Vec<Pairing>,
    /// The grammar of gateway request paths.
    pub gateway: Gateway,
    /// Model wire dialects with their gateway request paths.
    pub dialects: Vec<Dialect>,
    /// Reviewed model providers.
    pub providers: Vec<Provider>,
    /// What a provider without a reviewed entry accepts.
    pub unlisted_provider: UnlistedProvider,
    /// Where the golden wire vectors and their schema live.
    pub golden: Golden,
    /// The steps the ACP lane's local diagnostic reports, in report order.
    pub acp_steps: Vec<AcpStep>,
    /// The steps the probe reports in either lane, after the lane's own.
    pub run_steps: Vec<RunStep>,
    /// The `oneshot-v1` lane: its protocol, driver, what a declaration may declare, the
    /// steps its probe reports and the stream events' observations.
    pub oneshot: Oneshot,
    /// The requirements of ACP a client can observe, and what judges each in a probe run.
    #[serde(default)]
    pub requirements: Vec<Requirement>,
}

/// The tiers of a requirement, as ACP's test kit (`acp-tck`) names them, in their order: a
/// verdict is conformant only with no mandatory requirement failed or untested and no
/// capability requirement failed.
pub const TIERS: [&str; 4] = ["mandatory", "capability", "advisory", "informational"];

/// The tier whose requirements a capability gates: only they name one.
pub const CAPABILITY_TIER: &str = "capability";

/// A behavioural requirement of ACP (or of Checkfu's extensions) that a client can observe.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Requirement {
    /// `ACP-<AREA>-<NNN>` (the test kit's id where it is the same requirement) or
    /// `CHECKFU-<AREA>-<NNN>` for one only a governed run can judge.
    pub id: Name,
    /// One of [`TIERS`].
    pub tier: Name,
    /// The `agentCapabilities` path that gates it (`inferred:<what>` when the agent offers it
    /// elsewhere than in `agentCapabilities`); only a `capability` requirement has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capability: Option<Name>,
    /// Where the ACP docs or schema (or this project's contract) say it: file and line or
    /// anchor.
    pub citation: Name,
    /// What it asks, in this project's words.
    pub text: String,
    /// Judged by this step of the probe's report (an `[[acp_steps]]` or `[[run_steps]]` name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<Name>,
    /// Judged by this conformance check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<Name>,
    /// Judged on the wire as the probe's session reads it (a breach of this id fails it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wire: Option<Spanned<bool>>,
}

/// A step of the ACP lane's local diagnostic.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AcpStep {
    pub name: Name,
    /// The declaration member the step exercises; without it the step is skipped, saying so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared: Option<Name>,
    /// When the step passes.
    pub pass: String,
}

/// A step the probe reports in either lane, only when it is given what the step names.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunStep {
    pub name: Name,
    /// The probe option the step needs (without it, it is not reported).
    pub given: Name,
    /// When the step passes.
    pub pass: String,
}

/// The golden wire vectors.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Golden {
    /// The schema file, under `schemas/`, whose `vectors` items name the vector kinds.
    pub schema: Name,
    /// The golden document, relative to the project root.
    pub vectors: Name,
}

/// The compatibility identities the catalog and its projections carry.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Revisions {
    pub protocol: Name,
    /// Pins the official ACP schema `[acp] schema` names: replacing that file means
    /// bumping this literal.
    pub acp_schema: Name,
    /// Pins the official ACP v2 schema `[acp_v2] schema` names, as `acp_schema` pins v1's.
    pub acp_v2_schema: Name,
    pub wire_protocol_version: Spanned<u32>,
    pub driver: Name,
    pub extension_vectors: Name,
    pub support: Name,
    pub experience: Name,
    pub conformance: Name,
    pub conformance_case_set: Name,
    pub evidence_identity: Name,
    pub evidence_manifest: Name,
    pub readiness: Name,
    /// The one-shot release protocol (`[oneshot] protocol` names it).
    pub oneshot_protocol: Name,
    /// The one-shot driver (`[oneshot] driver`): pins the authoring schema and the lane.
    pub oneshot_driver: Name,
    /// The normalized stream schema (`[oneshot] stream_schema`).
    pub oneshot_stream: Name,
    /// The golden process exchanges and author-kit vectors (`[oneshot] exchanges`).
    pub oneshot_exchanges: Name,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Axis {
    pub name: Name,
    /// Ordered weakest → strongest.
    pub values: Vec<Name>,
    /// The value that means "undeclared": an entry may omit the axis, tables print `—`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub absent: Option<Name>,
    /// False for an axis only declaration admission can raise; envelopes never carry it.
    #[serde(default = "yes")]
    pub in_envelope: bool,
}

fn yes() -> bool {
    true
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Driver {
    pub name: Name,
    pub protocol: Name,
    pub envelopes: Vec<Envelope>,
}

/// One server envelope row: a driver's ceiling under one retention mode.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Envelope {
    pub retention: Name,
    pub axes: AxisValues,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Lane {
    /// Shown as the entry's execution lane.
    pub name: Name,
    /// The entry mode this lane serves.
    pub mode: Spanned<Mode>,
    pub envelope: AxisValues,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Declaration {
    /// The slot that carries the declaration.
    pub slot: Name,
    pub upgrades: Vec<Upgrade>,
    pub mechanisms: Vec<Mechanism>,
}

/// A declaration member that lifts one axis exactly one step above the envelope.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Upgrade {
    pub member: Name,
    pub value: Name,
    pub axis: Name,
    pub from: Name,
    pub to: Name,
    /// The conformance case whose signed pass a catalog ceiling needs to show the upgrade.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<Name>,
    /// What proves the declared value in a probe run: an ACP step or a conformance check.
    /// The run's realized set holds the value only when it passed.
    pub proof: Proof,
}

/// The step of a probe run that exercises a declared value, and what fails it.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Proof {
    /// An `[[acp_steps]]` name or a `[[conformance]]` check.
    pub step: Name,
    /// What a harness that declares the value and does not serve it does, that fails it.
    pub fails: String,
}

/// A declaration member that is recorded but promotes nothing.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Mechanism {
    pub member: Name,
    pub values: Vec<Name>,
    /// What proves a declared value in a probe run; none while the probe has no step that
    /// exercises it (the value is then reported as not exercised, and never realized).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proof: Option<Proof>,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Harness {
    pub name: Name,
    pub mode: Spanned<Mode>,
    /// Whether Checkfu can adopt an artifact today (shown as Supply and Availability).
    pub supply: Name,
    pub adoption: Name,
    /// Absent for entries that are not released over a protocol (shown `—`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_protocol: Option<Name>,
    /// The Runner driver of a packaged entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<Name>,
    /// The lane of a connected entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lane: Option<Name>,
    pub model_lane: Name,
    pub mcp_delivery: Name,
    /// Conformance cases with exact-adapter signed evidence for the default artifact.
    #[serde(default)]
    pub evidence: Vec<Name>,
    pub tuple_support: Name,
    /// What the harness declares in `checkfu.capabilities`: member → value.
    #[serde(default)]
    pub declares: BTreeMap<Name, Name>,
    /// Model wire dialects the harness binary speaks. Omitted means undeclared; a written
    /// list must name at least one dialect (the span tells the two apart).
    #[serde(default)]
    pub dialects: Spanned<Vec<Name>>,
    pub ceiling: AxisValues,
}

impl Harness {
    /// The value of a published field by its catalog key, `None` for any other key.
    pub fn published(&self, field: &str) -> Option<&Name> {
        match field {
            "supply" => Some(&self.supply),
            "adoption" => Some(&self.adoption),
            "model_lane" => Some(&self.model_lane),
            "mcp_delivery" => Some(&self.mcp_delivery),
            "tuple_support" => Some(&self.tuple_support),
            _ => None,
        }
    }
}

/// The closed vocabulary of each single-valued harness field the support snapshot publishes.
/// Catalog evidence is a list whose vocabulary is the conformance checks' names.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Vocabularies {
    pub supply: Spanned<Vec<Name>>,
    pub adoption: Spanned<Vec<Name>>,
    pub model_lane: Spanned<Vec<Name>>,
    pub mcp_delivery: Spanned<Vec<Name>>,
    pub tuple_support: Spanned<Vec<Name>>,
}

impl Vocabularies {
    /// Field key and vocabulary, in the order the support table shows the fields.
    pub fn fields(&self) -> [(&'static str, &Spanned<Vec<Name>>); 5] {
        [
            ("supply", &self.supply),
            ("adoption", &self.adoption),
            ("model_lane", &self.model_lane),
            ("mcp_delivery", &self.mcp_delivery),
            ("tuple_support", &self.tuple_support),
        ]
    }

    pub fn of(&self, field: &str) -> Option<&[Name]> {
        self.fields().into_iter().find(|(f, _)| *f == field).map(|(_, v)| v.as_slice())
    }
}

/// A rule over every entry: the value of `field` decides the value `with` must hold.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Pairing {
    /// A published field (a key of `vocabularies`).
    pub field: Name,
    /// Another published field, or `ceiling.<axis>` for a value of the entry's ceiling.
    pub with: Name,
    /// Each value of `field` → the one value `with` must then hold. Every value of the
    /// field's vocabulary needs a pair, so a new value cannot slip past the rule.
    pub pairs: BTreeMap<Name, Name>,
}

/// What a gateway request path may contain besides literal segments.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Gateway {
    /// Names a whole path segment may stand for, written `{name}`.
    pub placeholders: Vec<Name>,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Slot {
    pub key: Name,
    pub carrier: Name,
    /// Where ACP v2 carries the slot, when it is not `carrier`: v2 moved some carriers
    /// (its prompt is answered with a receipt, and the turn ends with an idle
    /// `state_update`, a `session/update` member). Absent, v2 carries it as v1 does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carrier_v2: Option<Name>,
    pub direction: Spanned<Direction>,
    pub class: Spanned<SlotClass>,
    pub payload: String,
    pub status: Name,
    /// The payload schema: `file#/json/pointer`, the file relative to `schemas/`. For an
    /// extension method, the schema of its params.
    pub schema: Name,
    /// For an extension method, the schema of its result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_schema: Option<Name>,
    /// The payload is an author-supplied JSON Schema that must also pass the safety profile.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub safety_profile: bool,
    /// Another slot whose value this one requires in the same message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requires: Option<SlotRequirement>,
}

/// A cross-field rule: the slot is legal only when `slot` carries `value`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SlotRequirement {
    pub slot: Name,
    pub value: Name,
}

/// What Checkfu decides about ACP. The grammar itself (methods and sides, params and result
/// definitions, `sessionUpdate` kinds, stop reasons) is the pinned schema's, read whole; the
/// protocol version is `revisions.wire_protocol_version`; and the part of the grammar that
/// `acp-v1` promises (its floor) is recorded in the revisions lock when the protocol literal
/// is first pinned. Nothing here transcribes the schema.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Acp {
    /// The official ACP JSON Schema under `schemas/`, checked in unmodified.
    pub schema: Name,
    /// The `sessionUpdate` kinds that carry only optional fidelity (usage, commands, mode,
    /// session info): a harness-to-client update of one of these kinds that fails its schema
    /// is ignored with a diagnostic instead of rejected. Each must be a kind of the pinned
    /// schema; every other kind (content: message and thought chunks, tool calls, plan)
    /// stays fail-closed.
    #[serde(default)]
    pub optional_fidelity_updates: Vec<Name>,
}

/// ACP v2 beside v1: the official v2 JSON Schema, read whole as `[acp]` reads v1's.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AcpV2 {
    /// The official ACP v2 JSON Schema under `schemas/`, checked in unmodified.
    pub schema: Name,
    /// The protocol version a v2 stream's `initialize` answer must carry; the schema bounds it.
    pub protocol_version: Spanned<u32>,
    /// As `[acp] optional_fidelity_updates`, for v2's `sessionUpdate` kinds: each must be a
    /// kind the pinned v2 schema names.
    #[serde(default)]
    pub optional_fidelity_updates: Vec<Name>,
}

/// A family of extension methods described by an input schema.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MethodSource {
    pub name: Name,
    /// The schema file under `schemas/`.
    pub schema: Name,
    pub style: Spanned<SourceStyle>,
    /// Prepended to `x-method` annotations to form the wire name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<Name>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SourceStyle {
    /// Definitions annotated with `x-method` and `x-side`.
    Annotations,
    /// A root `method` enum with one `<Method>Params` definition per method.
    MethodEnum,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Observations {
    /// Observation kinds; members are named `observation.<kind>`.
    pub kinds: Vec<Name>,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GatedEmission {
    pub axis: Name,
    pub value: Name,
    /// `observation.<kind>` members.
    pub members: Vec<Name>,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConformanceCheck {
    pub name: Name,
    pub requirement: String,
    /// May report `skip`.
    #[serde(default)]
    pub tristate: bool,
    /// Reports `skip` unless the trace opts in.
    #[serde(default)]
    pub opt_in: bool,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Dialect {
    pub name: Name,
    pub gateway_path: Name,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Provider {
    pub name: Name,
    pub accepts: Vec<Name>,
    /// A priced provider can serve production traffic; a declared dialect needs one.
    pub priced: bool,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UnlistedProvider {
    pub accepts: Vec<Name>,
}

/// The `oneshot-v1` lane as data. What a declaration may hold is the release decoder's
/// (`checkfu_wire_vocab::oneshot::Declaration`); this table restates its closed values so
/// that the docs and the runtime read them here, and validation holds the two equal.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Oneshot {
    /// The protocol literal, `revisions.oneshot_protocol`.
    pub protocol: Name,
    /// The driver literal, `revisions.oneshot_driver`.
    pub driver: Name,
    /// The normalized stream schema, under `schemas/`.
    pub stream_schema: Name,
    /// The directory of the golden process exchanges, relative to the project root.
    pub exchanges: Name,
    /// Each closed-valued member of the declaration → every value it admits.
    pub declares: Spanned<BTreeMap<Name, Spanned<Vec<Name>>>>,
    /// The steps the one-shot probe reports, in report order.
    pub steps: Vec<OneshotStep>,
    /// Each normalized stream event kind and the observation it becomes.
    pub events: Vec<OneshotEvent>,
}

impl Oneshot {
    /// `declares` in the release decoder's field order (the map keeps only key order).
    pub fn declares_in_decoder_order(&self) -> Vec<(&Name, &Spanned<Vec<Name>>)> {
        let order = crate::oneshot::members(&crate::oneshot::authoring_schema());
        let mut members: Vec<_> = self.declares.iter().collect();
        members.sort_by_key(|(m, _)| order.position(m.as_str()));
        members
    }
}

/// A step of the one-shot probe's report.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OneshotStep {
    pub name: Name,
    /// The declaration member the step needs; without it the step is omitted, not skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared: Option<Name>,
    /// The probe option the step needs besides the declaration (omitted without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub given: Option<Name>,
    /// When the step passes.
    pub pass: String,
}

/// What one normalized stream event kind means to the conformance grammar.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OneshotEvent {
    /// The event's `type` in the stream schema.
    pub kind: Name,
    /// The observation kind it becomes; omitted for an event that becomes none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation: Option<Name>,
    /// The event fails the turn whatever follows (its observation is a failed terminal).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fails_turn: bool,
}
