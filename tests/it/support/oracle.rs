//! The differential harness: instances generated from a raw schema, judged by the
//! `jsonschema` crate on that raw schema, and compared with what the generated code says.
//! Where the generated code runs (compiled into this crate, or in a crate built by
//! `compile`) is the caller's business: it turns cases into verdicts.

use serde_json::{json, Value};

use super::instances::{same, Generator, FULL_WORK};

/// One instance for one definition, with the oracle's verdict.
pub struct Case {
    pub def: String,
    pub instance: Value,
    pub expected: bool,
}

/// What the generated code said about a case.
pub struct Verdict {
    /// The generated check accepted it.
    pub checked: bool,
    /// Decoding into the generated type and encoding again: the JSON, or why not.
    pub roundtrip: Result<Value, String>,
}

#[derive(Default, Debug)]
pub struct Tally {
    pub accepted: usize,
    pub rejected: usize,
}

/// The URI under which the raw document is registered with the oracle: hierarchical, so a
/// root `$id` that is a relative reference (compose-spec's `compose_spec.json`) resolves
/// against it, where a `urn:` base makes the oracle refuse the document. Never fetched.
const DOCUMENT: &str = "https://checkfu.invalid/document.json";

/// A JSON Pointer as a URI fragment: RFC 3986 leaves `/` and `~` alone and wants the
/// rest of the non-unreserved bytes percent-encoded.
fn fragment(pointer: &str) -> String {
    let mut out = String::new();
    for byte in pointer.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/!$&'()*+,;=:@".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Valid-looking instances and single mutations for each definition (`(name, origin)`),
/// with the oracle's verdict; `budget` caps the mutations of one instance.
pub fn cases(document: &Value, definitions: &[(String, String)], budget: usize) -> Vec<Case> {
    bounded_cases(document, definitions, budget, FULL_WORK)
}

/// [`cases`], with each definition's instances filled in fully for at most `work` calls
/// of the generator (see [`FULL_WORK`]).
pub fn bounded_cases(document: &Value, definitions: &[(String, String)], budget: usize, work: usize) -> Vec<Case> {
    let generator = Generator::new(document, work);
    let registry = jsonschema::Registry::new()
        .add(DOCUMENT, document.clone())
        .and_then(|r| r.prepare())
        .expect("jsonschema registers the raw document");
    let mut out = Vec::new();
    for (name, origin) in definitions {
        let Some(target) = document.pointer(origin) else { continue };
        let oracle = oracle(document, &registry, name, origin);
        generator.start();
        let mut instances = generator.valid(target, 0);
        let mut mutated = Vec::new();
        for instance in &instances {
            generator.mutations(target, instance, 0, &mut mutated, budget);
        }
        instances.extend(mutated);
        for instance in instances {
            let expected = oracle.is_valid(&instance);
            out.push(Case { def: name.clone(), instance, expected });
        }
    }
    out
}

/// The oracle for the definition `name` at `origin` in `document`: the root directly, any
/// other node through a reference into the registered document, so that its own references
/// resolve as they do in the input. `format` is an annotation in every draft the compiler
/// reads (draft-04 to -07 only allow asserting it, and the compiler does not), so the
/// oracle must not assert it.
fn oracle(document: &Value, registry: &jsonschema::Registry, name: &str, origin: &str) -> jsonschema::Validator {
    let oracle = if origin.is_empty() {
        jsonschema::options().should_validate_formats(false).build(document)
    } else {
        jsonschema::options()
            .should_validate_formats(false)
            .with_registry(registry)
            .build(&json!({"$ref": format!("{DOCUMENT}#{}", fragment(origin))}))
    };
    oracle.unwrap_or_else(|e| panic!("jsonschema compiles {name} at {origin}: {e}"))
}

/// Given instances (real documents, say) of the document's root definition `root`, with
/// the oracle's verdict.
pub fn judged(document: &Value, root: &str, instances: Vec<Value>) -> Vec<Case> {
    let registry = jsonschema::Registry::new().prepare().expect("an empty registry");
    let oracle = oracle(document, &registry, root, "");
    instances.into_iter().map(|instance| Case { def: root.to_string(), expected: oracle.is_valid(&instance), instance }).collect()
}

/// Compares verdicts with the oracle: accept/reject must agree, and an accepted instance
/// must decode and re-encode to equal JSON.
pub fn compare(cases: &[Case], verdicts: &[Verdict]) -> (Tally, Vec<String>) {
    let mut tally = Tally::default();
    let mut disagreements = Vec::new();
    for (case, verdict) in cases.iter().zip(verdicts) {
        let instance = &case.instance;
        match (case.expected, verdict.checked, &verdict.roundtrip) {
            (true, true, Ok(encoded)) => {
                tally.accepted += 1;
                if !same(encoded, instance) {
                    disagreements.push(format!("{} re-encodes differently:\n  in:  {instance}\n  out: {encoded}", case.def));
                }
            }
            (false, false, Err(_)) => tally.rejected += 1,
            (expected, checked, decoded) => disagreements.push(format!(
                "{}: jsonschema says {}, check says {}, decode says {:?}\n  instance: {instance}",
                case.def,
                if expected { "valid" } else { "invalid" },
                if checked { "valid" } else { "invalid" },
                decoded.as_ref().map(|_| "ok"),
            )),
        }
    }
    if verdicts.len() != cases.len() {
        disagreements.push(format!("{} cases but {} verdicts", cases.len(), verdicts.len()));
    }
    (tally, disagreements)
}
