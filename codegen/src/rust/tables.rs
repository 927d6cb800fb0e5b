//! `catalog_tables.rs`: the catalog as `const` tables for the runtime consumers
//! (declaration admission, the conformance checker, the decode policy), so no axis, value,
//! slot, gated member or one-shot step is ever typed by hand in runtime code.
//!
//! The types these constants use are defined in the runtime crate (`src/catalog.rs`); the
//! generated file is included into that module. The model plane's facts (the `Dialect`
//! enum, gateway routes, reachability) are written by [`routes`] from `catalog::routes`; the
//! enums of every other kind of name (checks, one-shot steps, protocols, revision identities,
//! drivers, retention modes) by [`names`].

pub(super) mod names;
mod routes;

use proc_macro2::TokenStream;
use quote::quote;

use crate::catalog::model::{AxisValues, Catalog, Direction, Mode, SlotClass, TIERS};
use crate::catalog::routes::Routes;
use crate::catalog::Compiled;

fn pairs(values: &AxisValues, order: &[&str]) -> TokenStream {
    // Axis order, not map order: the admitted set must serialize in the envelope's order.
    let items = order.iter().filter_map(|axis| {
        let (k, v) = values.iter().find(|(k, _)| k.as_str() == *axis)?;
        let (k, v) = (k.as_str(), v.as_str());
        Some(quote! { (#k, #v) })
    });
    quote! { &[#(#items),*] }
}

fn opt(value: Option<&str>) -> TokenStream {
    match value {
        Some(v) => quote! { Some(#v) },
        None => quote! { None },
    }
}

fn strs<'a>(items: impl Iterator<Item = &'a str>) -> TokenStream {
    let items: Vec<_> = items.collect();
    quote! { &[#(#items),*] }
}

pub fn generate(compiled: &Compiled) -> TokenStream {
    let c = &compiled.catalog;
    let order: Vec<&str> = c.axes.iter().map(|a| a.name.as_str()).collect();

    let axes = c.axes.iter().map(|a| {
        let name = a.name.as_str();
        let values = strs(a.values.iter().map(|v| v.as_str()));
        let absent = opt(a.absent.as_ref().map(|v| v.as_str()));
        let in_envelope = a.in_envelope;
        quote! { Axis { name: #name, values: #values, absent: #absent, in_envelope: #in_envelope } }
    });
    let driver_names: Vec<&str> = c.drivers.iter().map(|d| d.name.as_str()).collect();
    let mut retention_names: Vec<&str> = Vec::new();
    for e in c.drivers.iter().flat_map(|d| &d.envelopes) {
        if !retention_names.contains(&e.retention.as_str()) {
            retention_names.push(e.retention.as_str());
        }
    }
    let envelopes = c.drivers.iter().flat_map(|d| {
        let order = &order;
        let retention_names = &retention_names;
        d.envelopes.iter().map(move |e| {
            let driver = d.name.as_str();
            let retention = names::path("Retention", retention_names, e.retention.as_str());
            let values = pairs(&e.axes, order);
            quote! { Envelope { owner: #driver, retention: Some(#retention), values: #values } }
        })
    });
    let lanes = c.lanes.iter().map(|l| {
        let name = l.name.as_str();
        let values = pairs(&l.envelope, &order);
        quote! { Envelope { owner: #name, retention: None, values: #values } }
    });
    let upgrades = c.declaration.upgrades.iter().map(|u| {
        let (member, value, axis) = (u.member.as_str(), u.value.as_str(), u.axis.as_str());
        let (from, to) = (u.from.as_str(), u.to.as_str());
        let evidence = opt(u.evidence.as_ref().map(|e| e.as_str()));
        let proof = u.proof.step.as_str();
        quote! { Upgrade { member: #member, value: #value, axis: #axis, from: #from, to: #to, evidence: #evidence, proof: #proof } }
    });
    let mechanisms = c.declaration.mechanisms.iter().map(|m| {
        let member = m.member.as_str();
        let values = strs(m.values.iter().map(|v| v.as_str()));
        let proof = opt(m.proof.as_ref().map(|p| p.step.as_str()));
        quote! { Mechanism { member: #member, values: #values, proof: #proof } }
    });
    let slots = c.slots.iter().map(|s| {
        let (key, carrier, schema) = (s.key.as_str(), s.carrier.as_str(), s.schema.as_str());
        let direction = match s.direction.value {
            Direction::HarnessToClient => quote! { Direction::HarnessToClient },
            Direction::ClientToHarness => quote! { Direction::ClientToHarness },
        };
        let class = match s.class.value {
            SlotClass::Declaration => quote! { SlotClass::Declaration },
            SlotClass::Fidelity => quote! { SlotClass::Fidelity },
            SlotClass::Authority => quote! { SlotClass::Authority },
            SlotClass::Method => quote! { SlotClass::Method },
        };
        quote! { Slot { key: #key, carrier: #carrier, direction: #direction, class: #class, schema: #schema } }
    });
    let gated = c.gated_emissions.iter().map(|g| {
        let (axis, value) = (g.axis.as_str(), g.value.as_str());
        let members = strs(g.members.iter().map(|m| m.as_str()));
        quote! { GatedEmission { axis: #axis, value: #value, members: #members } }
    });
    let check_names: Vec<&str> = c.conformance.iter().map(|k| k.name.as_str()).collect();
    let checks = c.conformance.iter().map(|k| {
        let check = names::path("Check", &check_names, k.name.as_str());
        let (tristate, opt_in) = (k.tristate, k.opt_in);
        quote! { ConformanceCheck { check: #check, tristate: #tristate, opt_in: #opt_in } }
    });
    let harnesses = c.harnesses.iter().map(|h| {
        let name = h.name.as_str();
        let mode = match h.mode.value {
            Mode::Packaged => quote! { Mode::Packaged },
            Mode::Connected => quote! { Mode::Connected },
        };
        let driver = match h.driver.as_ref().and_then(|d| names::path("Driver", &driver_names, d.as_str())) {
            Some(driver) => quote! { Some(#driver) },
            None => quote! { None },
        };
        let lane = opt(h.lane.as_ref().map(|l| l.as_str()));
        let declares = h.declares.iter().map(|(m, v)| {
            let (m, v) = (m.as_str(), v.as_str());
            quote! { (#m, #v) }
        });
        let ceiling = pairs(&h.ceiling, &order);
        let dialects = routes::dialects(h.dialects.iter().map(|d| d.as_str()));
        let evidence = strs(h.evidence.iter().map(|e| e.as_str()));
        let (supply, adoption) = (h.supply.as_str(), h.adoption.as_str());
        quote! {
            Harness {
                name: #name, mode: #mode, driver: #driver, lane: #lane,
                declares: &[#(#declares),*], ceiling: #ceiling, dialects: #dialects, evidence: #evidence,
                supply: #supply, adoption: #adoption,
            }
        }
    });
    let providers = c.providers.iter().map(|p| {
        let name = p.name.as_str();
        let accepts = routes::dialects(p.accepts.iter().map(|d| d.as_str()));
        let priced = p.priced;
        quote! { Provider { name: #name, accepts: #accepts, priced: #priced } }
    });
    let unlisted = routes::dialects(c.unlisted_provider.accepts.iter().map(|d| d.as_str()));
    let model_plane = routes::generate(&Routes::new(c));
    let observations = strs(c.observations.kinds.iter().map(|o| o.as_str()));
    let r = &c.revisions;
    let revisions = [
        ("protocol", r.protocol.as_str()),
        ("driver", r.driver.as_str()),
        ("extension_vectors", r.extension_vectors.as_str()),
        ("support", r.support.as_str()),
        ("experience", r.experience.as_str()),
        ("conformance", r.conformance.as_str()),
        ("conformance_case_set", r.conformance_case_set.as_str()),
        ("evidence_identity", r.evidence_identity.as_str()),
        ("evidence_manifest", r.evidence_manifest.as_str()),
        ("readiness", r.readiness.as_str()),
        ("oneshot_protocol", r.oneshot_protocol.as_str()),
        ("oneshot_driver", r.oneshot_driver.as_str()),
        ("oneshot_stream", r.oneshot_stream.as_str()),
        ("oneshot_exchanges", r.oneshot_exchanges.as_str()),
    ];
    let revision_names: Vec<&str> = revisions.iter().map(|(k, _)| *k).collect();
    let revision_variants = names::variants(&revision_names);
    let revision_literals = revisions.iter().map(|(_, v)| *v);
    let revision_enum = names::named_enum(
        "Revision",
        " A revision identity of the catalog, by its key (`protocol`, `driver`, …).",
        &revision_names,
        quote! {
            /// The identity's literal (`protocol` → `acp-v1`).
            pub const fn literal(self) -> &'static str {
                match self {
                    #(Revision::#revision_variants => #revision_literals,)*
                }
            }
        },
    );
    let protocol_enum = names::named_enum(
        "Protocol",
        " A release protocol of the catalog: the ACP driver's and the one-shot lane's.",
        &[r.protocol.as_str(), c.oneshot.protocol.as_str()],
        quote! {},
    );
    let check_enum = names::named_enum("Check", " A check of the conformance grammar.", &check_names, quote! {});
    let driver_enum = names::named_enum("Driver", " A driver of the catalog.", &driver_names, quote! {});
    let retention_enum = names::named_enum("Retention", " A retention mode of a driver's envelopes.", &retention_names, quote! {});
    let wire_version = r.wire_protocol_version.value;
    let lane = &c.oneshot;
    let (oneshot_protocol, oneshot_driver) = (lane.protocol.as_str(), lane.driver.as_str());
    let oneshot_stream = r.oneshot_stream.as_str();
    let oneshot_declares = lane.declares_in_decoder_order().into_iter().map(|(member, values)| {
        let (member, values) = (member.as_str(), strs(values.iter().map(|v| v.as_str())));
        quote! { OneshotMember { member: #member, values: #values } }
    });
    // One name enum for every step: the ACP lane's in its order, then the steps of either
    // lane and the one-shot lane's that the ACP lane does not have.
    let mut step_names: Vec<&str> = c.acp_steps.iter().map(|s| s.name.as_str()).collect();
    for step in c.run_steps.iter().map(|s| &s.name).chain(lane.steps.iter().map(|s| &s.name)) {
        if !step_names.contains(&step.as_str()) {
            step_names.push(step.as_str());
        }
    }
    let step_enum = names::named_enum("StepName", " A step the probe reports, in either lane.", &step_names, quote! {});
    let acp_steps = c.acp_steps.iter().map(|s| names::path("StepName", &step_names, s.name.as_str()));
    let run_steps = c.run_steps.iter().map(|s| names::path("StepName", &step_names, s.name.as_str()));
    let oneshot_steps = lane.steps.iter().map(|s| {
        let name = names::path("StepName", &step_names, s.name.as_str());
        let declared = opt(s.declared.as_ref().map(|d| d.as_str()));
        let given = opt(s.given.as_ref().map(|g| g.as_str()));
        quote! { OneshotStep { step: #name, declared: #declared, given: #given } }
    });
    let oneshot_events = lane.events.iter().map(|e| {
        let kind = e.kind.as_str();
        let observation = opt(e.observation.as_ref().map(|o| o.as_str()));
        let fails_turn = e.fails_turn;
        quote! { OneshotEvent { kind: #kind, observation: #observation, fails_turn: #fails_turn } }
    });
    let (tier_enum, requirement_enum) = requirements(c, &step_names, &check_names);
    let sha = compiled.sha256.as_str();

    quote! {
        /// Hex sha256 of the catalog's canonical form.
        pub const CATALOG_SHA256: &str = #sha;
        /// ACP wire protocol version the driver speaks.
        pub const WIRE_PROTOCOL_VERSION: u32 = #wire_version;
        #revision_enum
        #protocol_enum
        #driver_enum
        #retention_enum
        #check_enum
        #step_enum
        #tier_enum
        #requirement_enum
        /// Capability axes, vocabularies weakest → strongest.
        pub const AXES: &[Axis] = &[#(#axes),*];
        /// Server-owned envelopes per driver and retention mode.
        pub const ENVELOPES: &[Envelope] = &[#(#envelopes),*];
        /// Envelopes owned by a lane rather than a driver.
        pub const LANE_ENVELOPES: &[Envelope] = &[#(#lanes),*];
        /// The declaration upgrades admission may apply.
        pub const UPGRADES: &[Upgrade] = &[#(#upgrades),*];
        /// Declaration members that are recorded and promote nothing.
        pub const MECHANISMS: &[Mechanism] = &[#(#mechanisms),*];
        /// The extension slots and their decode policy class.
        pub const SLOTS: &[Slot] = &[#(#slots),*];
        /// The RunnerObservation vocabulary.
        pub const OBSERVATIONS: &[&str] = #observations;
        /// Observation members only a declared axis may emit.
        pub const GATED_EMISSIONS: &[GatedEmission] = &[#(#gated),*];
        /// The conformance grammar's checks.
        pub const CONFORMANCE_CHECKS: &[ConformanceCheck] = &[#(#checks),*];
        /// Harness entries.
        pub const HARNESSES: &[Harness] = &[#(#harnesses),*];
        #model_plane
        /// Reviewed providers.
        pub const PROVIDERS: &[Provider] = &[#(#providers),*];
        /// What an unlisted provider accepts.
        pub const UNLISTED_PROVIDER_ACCEPTS: &[Dialect] = #unlisted;
        /// The one-shot release protocol.
        pub const ONESHOT_PROTOCOL: &str = #oneshot_protocol;
        /// The one-shot driver.
        pub const ONESHOT_DRIVER: &str = #oneshot_driver;
        /// The normalized stream's revision literal.
        pub const ONESHOT_STREAM: &str = #oneshot_stream;
        /// Each closed member of a one-shot declaration with the values it admits.
        pub const ONESHOT_DECLARES: &[OneshotMember] = &[#(#oneshot_declares),*];
        /// The steps the ACP lane's probe reports, in report order.
        pub const ACP_STEPS: &[StepName] = &[#(#acp_steps),*];
        /// The steps the probe reports in either lane, after the lane's own, when given what
        /// they name.
        pub const RUN_STEPS: &[StepName] = &[#(#run_steps),*];
        /// The steps the one-shot probe reports, in report order.
        pub const ONESHOT_STEPS: &[OneshotStep] = &[#(#oneshot_steps),*];
        /// Normalized stream event kind → the observation it becomes.
        pub const ONESHOT_EVENTS: &[OneshotEvent] = &[#(#oneshot_events),*];
    }
}

/// The `Tier` enum, and the `Requirement` enum with each requirement's facts: its id, tier,
/// gate, citation, text and judge (a step and a check named by their enums, so a requirement
/// whose judge the catalog renamed does not compile).
fn requirements(c: &Catalog, step_names: &[&str], check_names: &[&str]) -> (TokenStream, TokenStream) {
    let tier_enum = names::named_enum("Tier", " A requirement's tier, as ACP's test kit names them.", &TIERS, quote! {});
    let ids: Vec<&str> = c.requirements.iter().map(|r| r.id.as_str()).collect();
    let variants = names::variants(&ids);
    let tiers = c.requirements.iter().map(|r| names::path("Tier", &TIERS, r.tier.as_str()));
    let capabilities = c.requirements.iter().map(|r| opt(r.capability.as_ref().map(|g| g.as_str())));
    let citations = c.requirements.iter().map(|r| r.citation.as_str());
    let texts = c.requirements.iter().map(|r| r.text.as_str());
    let judges = c.requirements.iter().map(|r| match (&r.step, &r.check) {
        (Some(step), _) => {
            let step = names::path("StepName", step_names, step.as_str());
            quote! { Judge::Step(#step) }
        }
        (None, Some(check)) => {
            let check = names::path("Check", check_names, check.as_str());
            quote! { Judge::Check(#check) }
        }
        (None, None) => quote! { Judge::Wire },
    });
    let (v1, v2, v3, v4, v5) = (variants.iter(), variants.iter(), variants.iter(), variants.iter(), variants.iter());
    let requirement_enum = names::named_enum(
        "Requirement",
        " A requirement of the registry, by its id (`ACP-…` as ACP's test kit gives it, `CHECKFU-…` the probe's own).",
        &ids,
        quote! {
            /// The id, as both reports spell it.
            pub const fn id(self) -> &'static str {
                self.name()
            }
            pub const fn tier(self) -> Tier {
                match self {
                    #(Requirement::#v1 => #tiers,)*
                }
            }
            /// The `agentCapabilities` path (or `inferred:…` gate) of a `capability` requirement.
            pub const fn capability(self) -> Option<&'static str> {
                match self {
                    #(Requirement::#v2 => #capabilities,)*
                }
            }
            /// Where the ACP docs or schema (or this project's docs) say it.
            pub const fn citation(self) -> &'static str {
                match self {
                    #(Requirement::#v3 => #citations,)*
                }
            }
            /// What it asks.
            pub const fn text(self) -> &'static str {
                match self {
                    #(Requirement::#v4 => #texts,)*
                }
            }
            /// What decides it in a probe run.
            pub const fn judge(self) -> Judge {
                match self {
                    #(Requirement::#v5 => #judges,)*
                }
            }
        },
    );
    (tier_enum, requirement_enum)
}
