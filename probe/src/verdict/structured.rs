//! Whether a declared `structured_output` is served: the session carried an output schema,
//! the relay answered the first request for it with a value that breaks it, and the harness
//! must still end the turn with a value that validates.
//!
//! What a harness cannot make up is what the relay saw and served. The relay records whether
//! a request asked for exactly the session's schema, and how (`schema_exact`, and the way:
//! a dialect's response-format field, or a tool); it records the broken answer it served
//! (`structured_broken`) and the digest of every instance it served. So the mechanism is
//! judged by the record, and the final value by the output held against the schema and
//! those digests: a value the harness made up validates, yet was never served.

use serde_json::Value;

use crate::relay::Call;

/// The response-format ways of the relay's record: a dialect's own field for a schema.
const NATIVE_WAYS: &[&str] =
    &[crate::relay::structured::TEXT_FORMAT, crate::relay::structured::RESPONSE_FORMAT, crate::relay::structured::OUTPUT_FORMAT];

/// The most bytes of a turn's output that are searched for JSON values.
pub const MAX_OUTPUT: usize = 256 * 1024;
/// The most places in the output a JSON value is tried from.
const MAX_STARTS: usize = 512;

/// The declared mechanism.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mechanism {
    /// The schema goes to the model in the dialect's response-format field; the final value
    /// is validated at the adapter boundary.
    ResponseFormat,
    /// A parent-only tool takes the final value; a submission is validated before anything
    /// of it is emitted.
    SubmitTool,
}

impl Mechanism {
    /// The mechanism a declared value names (`None`: a value the catalog lacks, which the
    /// decoder refused before any step).
    pub fn of(value: &str) -> Option<Mechanism> {
        match value {
            "response_format" => Some(Mechanism::ResponseFormat),
            "submit_tool" => Some(Mechanism::SubmitTool),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Mechanism::ResponseFormat => "response_format",
            Mechanism::SubmitTool => "submit_tool",
        }
    }
}

/// Why a declared structured output failed, named after what the record or the output lacks.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StructuredMiss {
    #[error(
        "declared `structured_output: {mechanism}`, and no model call of the turn asked for a structured answer ({calls} served): the harness never passed `checkfu.output_schema` to its model"
    )]
    SchemaNotSent { mechanism: &'static str, calls: usize },
    #[error(
        "declared `structured_output: {mechanism}`, and the schema the model was asked for (as `{way}`) is not exactly the session's `checkfu.output_schema`"
    )]
    NotExact { mechanism: &'static str, way: String },
    #[error(
        "declared `structured_output: response_format`, and the schema reached the model only as a tool, never in the dialect's native response-format field"
    )]
    NotNative,
    #[error(
        "declared `structured_output: submit_tool`, and no call offered a tool whose input schema is exactly `checkfu.output_schema` (the schema reached the model as `{way}`)"
    )]
    NoSubmitTool { way: String },
    #[error(
        "declared `structured_output: submit_tool`, and the submit tool was offered to {calls} call(s) outside the conversation the turn's prompt started (a subagent's or a side call's: its nonce is nowhere in them): it is not the parent's alone"
    )]
    NotParentOnly { calls: usize },
    #[error("the relay never served the broken first answer it held for the turn: no request asked for the schema while one was due")]
    BrokenNotServed,
    #[error(
        "declared `structured_output: submit_tool`, and the model's broken submission reached the output: an invalid submission must be rejected before anything of it is emitted"
    )]
    BrokenShown,
    #[error(
        "declared `structured_output: {mechanism}`, and the final value is the model's broken first answer, emitted unvalidated: {errors}"
    )]
    BrokenEmitted { mechanism: &'static str, errors: String },
    #[error("the turn emitted no final value: its output holds no JSON value ({shown:?})")]
    NoFinalValue { shown: String },
    #[error("the final value breaks the output schema: {errors}")]
    Invalid { errors: String },
    #[error("the final value validates, but it is not a value the relay served: the harness made it up or changed it")]
    MadeUp,
}

/// What a step judges: the calls of the structured turn and of the turn before it (whose
/// subagents may have been offered the submit tool), the turn's output, the schema and the
/// broken value the relay held.
pub struct Turn<'a> {
    pub calls: &'a [Call],
    pub earlier: &'a [Call],
    pub output: &'a str,
    pub validator: &'a jsonschema::Validator,
    pub broken: &'a Value,
}

/// Judges a declared `mechanism` over `turn`: the mechanism first (the record), then the
/// final value (the output).
pub fn judge(mechanism: Mechanism, turn: &Turn<'_>) -> Result<(), StructuredMiss> {
    let m = mechanism.name();
    let asked: Vec<&Call> = turn.calls.iter().filter(|c| c.structured_output.is_some()).collect();
    let Some(first) = asked.first() else { return Err(StructuredMiss::SchemaNotSent { mechanism: m, calls: turn.calls.len() }) };
    let way = |c: &Call| c.structured_output.unwrap_or_default().to_owned();
    let exact = |c: &&Call| c.schema_exact == Some(true);
    match mechanism {
        Mechanism::ResponseFormat => {
            let native: Vec<&Call> =
                asked.iter().copied().filter(|c| c.structured_output.is_some_and(|w| NATIVE_WAYS.contains(&w))).collect();
            if !native.iter().any(exact) {
                return Err(match native.first() {
                    None => StructuredMiss::NotNative,
                    Some(call) => StructuredMiss::NotExact { mechanism: m, way: way(call) },
                });
            }
        }
        Mechanism::SubmitTool => {
            let tool = crate::relay::structured::TOOL;
            if !asked.iter().any(|c| c.structured_output == Some(tool) && exact(c)) {
                return Err(StructuredMiss::NoSubmitTool { way: way(first) });
            }
            // A call whose request holds the turn's nonce nowhere is not of the conversation the
            // prompt started: a subagent's, or a side call's.
            let elsewhere =
                turn.calls.iter().chain(turn.earlier).filter(|c| c.structured_output == Some(tool) && exact(c) && !c.nonce_anywhere);
            let count = elsewhere.count();
            if count > 0 {
                return Err(StructuredMiss::NotParentOnly { calls: count });
            }
        }
    }
    if !turn.calls.iter().any(|c| c.structured_broken) {
        return Err(StructuredMiss::BrokenNotServed);
    }
    let values = json_values(turn.output);
    if mechanism == Mechanism::SubmitTool && values.iter().any(|v| v == turn.broken) {
        return Err(StructuredMiss::BrokenShown);
    }
    let Some(last) = final_value(turn.output, values) else {
        return Err(StructuredMiss::NoFinalValue { shown: checkfu_wire::text::head(turn.output.trim(), 120).to_owned() });
    };
    let errors = schema_errors(turn.validator, &last);
    if last == *turn.broken {
        return Err(StructuredMiss::BrokenEmitted { mechanism: m, errors });
    }
    if !errors.is_empty() {
        return Err(StructuredMiss::Invalid { errors });
    }
    let digest = crate::relay::digest(&last);
    if turn.calls.iter().any(|c| c.structured_digest.as_deref() == Some(digest.as_str())) {
        Ok(())
    } else {
        Err(StructuredMiss::MadeUp)
    }
}

/// The first few ways `value` breaks the schema, `;`-joined (empty: it validates).
pub fn schema_errors(validator: &jsonschema::Validator, value: &Value) -> String {
    let errors: Vec<String> = validator.iter_errors(value).take(5).map(|e| format!("{} at `{}`", e, e.instance_path())).collect();
    errors.join("; ")
}

/// A value that breaks the schema, for the relay's first structured answer: the first of a
/// few candidates the validator refuses, objects first (a submit tool's input is one). An
/// instance of the schema with each member's type changed, then the empty object, then
/// values of the other types. `None`: the schema admits every candidate (`true`, `{}`).
pub fn broken_value(schema: &Value, validator: &jsonschema::Validator) -> Option<Value> {
    let mut candidates = Vec::new();
    if let Ok(Value::Object(members)) = crate::relay::structured::instance(schema, "broken") {
        let changed = members.into_iter().map(|(name, value)| (name, other_type(&value))).collect();
        candidates.push(Value::Object(changed));
    }
    candidates.push(Value::Object(serde_json::Map::new()));
    candidates.push(serde_json::json!({"broken": 0}));
    candidates.extend([Value::String(String::from("broken")), Value::Null, Value::Array(Vec::new()), serde_json::json!(0)]);
    candidates.into_iter().find(|c| !validator.is_valid(c))
}

/// A value of another JSON type than `value`'s.
fn other_type(value: &Value) -> Value {
    match value {
        Value::String(_) => serde_json::json!(0),
        _ => Value::String(String::from("broken")),
    }
}

/// The final value of an output: the whole of it when it is one JSON value, else the last
/// JSON value in it.
fn final_value(output: &str, mut values: Vec<Value>) -> Option<Value> {
    let trimmed = output.trim();
    if let Ok(whole) = serde_json::from_str::<Value>(checkfu_wire::text::head(trimmed, MAX_OUTPUT)) {
        return Some(whole);
    }
    values.pop()
}

/// The JSON objects and arrays in `text`, in order: each read from a `{` or `[` up to where
/// it ends, the next looked for after it. Bounded: the first [`MAX_OUTPUT`] bytes, and at
/// most [`MAX_STARTS`] places tried.
pub fn json_values(text: &str) -> Vec<Value> {
    let text = checkfu_wire::text::head(text, MAX_OUTPUT);
    let mut values = Vec::new();
    let mut at = 0;
    for _ in 0..MAX_STARTS {
        let Some(offset) = text[at..].find(['{', '[']) else { break };
        let start = at + offset;
        let mut stream = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
        match stream.next() {
            Some(Ok(value)) => {
                values.push(value);
                at = start + stream.byte_offset();
            }
            _ => at = start + 1,
        }
        if at >= text.len() {
            break;
        }
    }
    values
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"], "additionalProperties": false})
    }

    fn call(way: Option<&'static str>, exact: bool, broken: bool, served: Option<&Value>) -> Call {
        let mut call = blank();
        call.structured_output = way;
        call.schema_exact = way.map(|_| exact);
        call.structured_broken = broken;
        call.structured_digest = served.map(crate::relay::digest);
        call.nonce_in_request = true;
        call.nonce_anywhere = true;
        call
    }

    /// A served call of the structured turn, nothing structured about it yet.
    fn blank() -> Call {
        let mut call = crate::verdict::tests::served(2, 0, None, None);
        (call.nonce_in_request, call.nonce_anywhere) = (false, false);
        call
    }

    fn judged(mechanism: Mechanism, calls: &[Call], output: &str) -> Result<(), StructuredMiss> {
        let validator = jsonschema::validator_for(&schema()).expect("schema");
        let broken = broken_value(&schema(), &validator).expect("a broken value");
        judge(mechanism, &Turn { calls, earlier: &[], output, validator: &validator, broken: &broken })
    }

    #[test]
    fn the_probes_own_schema_is_safe_served_and_breakable() {
        let schema = crate::plane::probe_output_schema();
        assert!(crate::plane::safe_output_schema(&schema).is_ok());
        let validator = jsonschema::validator_for(&schema).expect("schema");
        let served = crate::relay::structured::instance(&schema, "cfr-0000000000000001").expect("an instance");
        assert!(validator.is_valid(&served), "{served}");
        let broken = broken_value(&schema, &validator).expect("a broken value");
        assert!(broken.is_object() && !validator.is_valid(&broken), "{broken}");
    }

    #[test]
    fn the_broken_value_breaks_the_schema_and_is_an_object() {
        let validator = jsonschema::validator_for(&schema()).expect("schema");
        let broken = broken_value(&schema(), &validator).expect("a broken value");
        assert!(broken.is_object() && !validator.is_valid(&broken), "{broken}");
        assert_eq!(broken_value(&json!(true), &jsonschema::validator_for(&json!(true)).expect("true")), None);
    }

    #[test]
    fn a_repaired_answer_that_was_served_passes_either_mechanism() {
        let good = json!({"answer": "cfr-1"});
        let rf = [call(Some("response_format"), true, true, None), call(Some("response_format"), true, false, Some(&good))];
        assert_eq!(judged(Mechanism::ResponseFormat, &rf, r#"{"answer": "cfr-1"} Done."#), Ok(()));
        let tool = [call(Some("tool"), true, true, None), call(Some("tool"), true, false, Some(&good))];
        assert_eq!(judged(Mechanism::SubmitTool, &tool, r#"{"answer":"cfr-1"}"#), Ok(()));
    }

    #[test]
    fn each_way_of_not_serving_it_is_named() {
        let good = json!({"answer": "cfr-1"});
        let plain = [blank()];
        assert!(matches!(judged(Mechanism::ResponseFormat, &plain, r#"{"text": "x"}"#), Err(StructuredMiss::SchemaNotSent { .. })));
        let tool_only = [call(Some("tool"), true, true, None)];
        assert_eq!(judged(Mechanism::ResponseFormat, &tool_only, ""), Err(StructuredMiss::NotNative));
        let other = [call(Some("response_format"), false, false, Some(&good))];
        assert!(matches!(judged(Mechanism::ResponseFormat, &other, ""), Err(StructuredMiss::NotExact { .. })));
        let native = [call(Some("response_format"), true, true, None)];
        assert!(matches!(judged(Mechanism::SubmitTool, &native, ""), Err(StructuredMiss::NoSubmitTool { .. })));
        let mut subagent = call(Some("tool"), true, false, None);
        subagent.nonce_in_request = false;
        subagent.nonce_anywhere = false;
        let mut steered = call(Some("tool"), true, false, Some(&good));
        steered.nonce_in_request = false;
        let followed = [call(Some("tool"), true, true, None), steered];
        assert_eq!(judged(Mechanism::SubmitTool, &followed, r#"{"answer":"cfr-1"}"#), Ok(()), "a steered parent call is the parent's");
        let offered = [call(Some("tool"), true, true, None), subagent];
        assert_eq!(judged(Mechanism::SubmitTool, &offered, ""), Err(StructuredMiss::NotParentOnly { calls: 1 }));
    }

    #[test]
    fn the_broken_answer_emitted_or_a_made_up_value_fails() {
        let validator = jsonschema::validator_for(&schema()).expect("schema");
        let broken = broken_value(&schema(), &validator).expect("a broken value");
        let good = json!({"answer": "cfr-1"});
        let rf = [call(Some("response_format"), true, true, None), call(Some("response_format"), true, false, Some(&good))];
        let emitted = judged(Mechanism::ResponseFormat, &rf[..1], &broken.to_string()).unwrap_err();
        assert!(matches!(emitted, StructuredMiss::BrokenEmitted { .. }), "{emitted}");
        let tool = [call(Some("tool"), true, true, None), call(Some("tool"), true, false, Some(&good))];
        let shown = format!("rejected? {broken} then {good}");
        assert_eq!(judged(Mechanism::SubmitTool, &tool, &shown), Err(StructuredMiss::BrokenShown));
        assert_eq!(judged(Mechanism::ResponseFormat, &rf, r#"{"answer": "mine"}"#), Err(StructuredMiss::MadeUp));
        assert!(matches!(judged(Mechanism::ResponseFormat, &rf, r#"{"answer": 3}"#), Err(StructuredMiss::Invalid { .. })));
        assert!(matches!(judged(Mechanism::ResponseFormat, &rf, "no JSON here"), Err(StructuredMiss::NoFinalValue { .. })));
    }

    #[test]
    fn json_values_are_found_in_prose_and_bounded() {
        assert_eq!(json_values(r#"a {"x": [1]} b [2] {broken"#), vec![json!({"x": [1]}), json!([2])]);
        let hostile = "{\"a\":".repeat(100_000);
        assert!(json_values(&hostile).is_empty());
    }
}
