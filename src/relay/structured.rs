//! Output schemas in model requests: how a harness asked for a structured answer, and a
//! bounded instance of the schema for the replay model to answer with.
//!
//! A request carries a schema in one of these ways ([`Way`]), looked for in this order:
//!
//! | way | where | seen from |
//! |---|---|---|
//! | `text.format` | Responses `text.format` = `{type: "json_schema", schema}` | `codex exec --output-schema` |
//! | `response_format` | Chat `response_format` = `{type: "json_schema", json_schema: {schema}}` | OpenAI SDK clients |
//! | `output_format` | Anthropic `output_format` or `output_config.format` = `{type: "json_schema", schema}` | Anthropic structured outputs |
//! | `tool` | a tool the request forces with `tool_choice`, or else a tool named `StructuredOutput` (case, `_` and `-` ignored), whose input schema is the schema | `claude -p --json-schema` |
//!
//! For the tool way the answer is a call of that tool with the instance as its input, once
//! per user turn: a request whose conversation already called the tool since the latest
//! user text is answered as if no schema were asked (the harness got its structured output
//! and asks for the turn's close). For the other ways the answer is the instance as JSON text.
//!
//! The instance generator reads the keywords of the project's safety profile that shape a
//! value: `type`, `properties`, `required`, `enum`, `const`, `items`, `prefixItems`,
//! `minItems`, `maxItems`, `minLength`, `maxLength`, `minimum`, `maximum`,
//! `exclusiveMinimum`, `exclusiveMaximum`, `anyOf`, `oneOf` (the first branch), `allOf`
//! (merged) and `$ref` to a JSON Pointer in the same document (`#/$defs/…`). Every string
//! is the nonce when its length bounds allow it. It ignores `pattern` and `format`. Its work
//! is bounded: at most [`MAX_DEPTH`] levels, and past [`FULL_NODES`] values objects get only
//! their required members and arrays only their minimum length (the safety profile already
//! refuses `$ref` cycles, so every reference chain ends).

use serde_json::{json, Map, Value};

/// How the schema reached the model, as the relay's record names it.
pub type Way = &'static str;

pub const TEXT_FORMAT: Way = "text.format";
pub const RESPONSE_FORMAT: Way = "response_format";
pub const OUTPUT_FORMAT: Way = "output_format";
pub const TOOL: Way = "tool";

/// The deepest level the generator fills in; below it a value is `null`.
pub const MAX_DEPTH: usize = 24;
/// Values after which objects get only required members and arrays their minimum length.
pub const FULL_NODES: usize = 2_000;
/// The most elements of one array.
const MAX_ITEMS: u64 = 16;
/// The most `$ref` hops one node resolves through.
const MAX_HOPS: usize = 64;

/// A schema found in a request.
#[derive(Clone, Debug, PartialEq)]
pub struct Structured {
    pub way: Way,
    /// The schema, the root of its own `$ref`s.
    pub schema: Value,
    /// The tool to call, for the tool way.
    pub tool: Option<String>,
    /// The tool way only: the conversation already called the tool since the latest user text.
    pub answered: bool,
}

/// A `format` member that is `{type: "json_schema", …}`.
fn json_schema(format: Option<&Value>) -> Option<&Value> {
    format.filter(|f| f.get("type").and_then(Value::as_str) == Some("json_schema"))
}

/// The schema a request body asks the answer to follow, if any.
pub fn detect(body: &Value) -> Option<Structured> {
    let text_way = |way: Way, schema: Option<&Value>| schema.filter(|s| s.is_object() || s.is_boolean()).map(|s| Structured { way, schema: s.clone(), tool: None, answered: false });
    if let Some(format) = json_schema(body.pointer("/text/format")) {
        if let Some(found) = text_way(TEXT_FORMAT, format.get("schema")) {
            return Some(found);
        }
    }
    if let Some(format) = json_schema(body.get("response_format")) {
        if let Some(found) = text_way(RESPONSE_FORMAT, format.pointer("/json_schema/schema")) {
            return Some(found);
        }
    }
    for at in ["/output_format", "/output_config/format"] {
        if let Some(format) = json_schema(body.pointer(at)) {
            if let Some(found) = text_way(OUTPUT_FORMAT, format.get("schema")) {
                return Some(found);
            }
        }
    }
    let tools = body.get("tools").and_then(Value::as_array)?;
    let forced = forced_tool(body.get("tool_choice"));
    let named = |tool: &Value| tool_name(tool).map(str::to_owned);
    let chosen = match forced {
        Some(name) => tools.iter().find(|t| tool_name(t) == Some(name.as_str())),
        None => tools.iter().find(|t| tool_name(t).is_some_and(|n| normalized(n) == "structuredoutput")),
    }?;
    let name = named(chosen)?;
    let schema = tool_schema(chosen)?.clone();
    let answered = already_called(body, &name);
    Some(Structured { way: TOOL, schema, tool: Some(name), answered })
}

fn normalized(name: &str) -> String {
    name.chars().filter(|c| *c != '_' && *c != '-').flat_map(char::to_lowercase).collect()
}

/// A tool's name in any of the three dialects (`{name}`, `{function: {name}}`).
fn tool_name(tool: &Value) -> Option<&str> {
    tool.get("name").or_else(|| tool.pointer("/function/name")).and_then(Value::as_str)
}

/// A tool's input schema: `input_schema` (Anthropic), `parameters` (Responses),
/// `function.parameters` (Chat).
fn tool_schema(tool: &Value) -> Option<&Value> {
    tool.get("input_schema").or_else(|| tool.get("parameters")).or_else(|| tool.pointer("/function/parameters")).filter(|s| s.is_object())
}

/// The tool a `tool_choice` forces: Anthropic `{type: "tool", name}`, Chat
/// `{type: "function", function: {name}}`, Responses `{type: "function", name}`.
fn forced_tool(choice: Option<&Value>) -> Option<String> {
    let choice = choice?;
    match choice.get("type").and_then(Value::as_str) {
        Some("tool" | "function") => tool_name(choice).map(str::to_owned),
        _ => None,
    }
}

/// Whether an assistant turn called `name` after the latest user message holding text.
fn already_called(body: &Value, name: &str) -> bool {
    let mut called = false;
    if let Some(messages) = body.get("messages").and_then(Value::as_array) {
        for message in messages {
            match message.get("role").and_then(Value::as_str) {
                Some("user") if user_text(message.get("content")) => called = false,
                Some("assistant") => {
                    let blocks = message.get("content").and_then(Value::as_array).into_iter().flatten();
                    let anthropic = blocks.filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_use")).any(|b| tool_name(b) == Some(name));
                    let chat = message.get("tool_calls").and_then(Value::as_array).into_iter().flatten().any(|c| tool_name(c) == Some(name));
                    called |= anthropic || chat;
                }
                _ => {}
            }
        }
    }
    if let Some(items) = body.get("input").and_then(Value::as_array) {
        for item in items {
            let kind = item.get("type").and_then(Value::as_str);
            if matches!(kind, Some("message") | None) && item.get("role").and_then(Value::as_str) == Some("user") {
                called = false;
            } else if kind == Some("function_call") && tool_name(item) == Some(name) {
                called = true;
            }
        }
    }
    called
}

/// Whether a user message's content holds text (not only tool results).
fn user_text(content: Option<&Value>) -> bool {
    match content {
        Some(Value::String(_)) => true,
        Some(Value::Array(blocks)) => blocks.iter().any(|b| b.get("type").and_then(Value::as_str) == Some("text")),
        _ => false,
    }
}

/// A bounded instance of `schema` (a document: `$ref`s resolve against it) whose strings
/// are `nonce` where their bounds allow.
pub fn instance(schema: &Value, nonce: &str) -> Value {
    let mut generator = Generator { document: schema, nonce, nodes: 0 };
    generator.value(schema, 0)
}

struct Generator<'d> {
    document: &'d Value,
    nonce: &'d str,
    nodes: usize,
}

impl Generator<'_> {
    /// The node with its `$ref` chain resolved and its `allOf` members merged in.
    fn flat(&self, schema: &Value, depth: usize) -> Map<String, Value> {
        let mut node = schema;
        let mut out = Map::new();
        for _ in 0..MAX_HOPS {
            let Some(object) = node.as_object() else { break };
            for (k, v) in object {
                if k != "$ref" {
                    merge_keyword(&mut out, k, v);
                }
            }
            match object.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix('#')) {
                Some(pointer) => match self.document.pointer(&unescape(pointer)) {
                    Some(target) => node = target,
                    None => break,
                },
                None => break,
            }
        }
        if depth < MAX_DEPTH {
            if let Some(Value::Array(members)) = out.remove("allOf") {
                for member in &members {
                    for (k, v) in self.flat(member, depth + 1) {
                        merge_keyword(&mut out, &k, &v);
                    }
                }
            }
        }
        out
    }

    fn value(&mut self, schema: &Value, depth: usize) -> Value {
        self.nodes += 1;
        if depth > MAX_DEPTH {
            return Value::Null;
        }
        match schema {
            Value::Bool(true) => return json!(self.nonce),
            Value::Bool(false) => return Value::Null,
            _ => {}
        }
        let mut flat = self.flat(schema, depth);
        if let Some(c) = flat.get("const") {
            return c.clone();
        }
        if let Some(first) = flat.get("enum").and_then(Value::as_array).and_then(|v| v.first()) {
            return first.clone();
        }
        for key in ["oneOf", "anyOf"] {
            if let Some(Value::Array(branches)) = flat.remove(key) {
                if let Some(branch) = branches.first() {
                    let mut merged = flat.clone();
                    for (k, v) in self.flat(branch, depth + 1) {
                        merge_keyword(&mut merged, &k, &v);
                    }
                    return self.value(&Value::Object(merged), depth + 1);
                }
            }
        }
        match kind(&flat) {
            "string" => self.string(&flat),
            "integer" => number(&flat, true),
            "number" => number(&flat, false),
            "boolean" => json!(true),
            "null" => Value::Null,
            "array" => self.array(&flat, depth),
            "object" => self.object(&flat, depth),
            _ => json!(self.nonce),
        }
    }

    fn full(&self) -> bool {
        self.nodes <= FULL_NODES
    }

    fn string(&self, flat: &Map<String, Value>) -> Value {
        let min = flat.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
        let max = flat.get("maxLength").and_then(Value::as_u64).map(|m| m as usize).unwrap_or(usize::MAX);
        let mut text: String = self.nonce.chars().take(max).collect();
        let length = text.chars().count();
        if length < min {
            text.extend(std::iter::repeat_n('x', min.min(65_536) - length));
        }
        Value::String(text)
    }

    fn array(&mut self, flat: &Map<String, Value>, depth: usize) -> Value {
        let min = flat.get("minItems").and_then(Value::as_u64).unwrap_or(0);
        let max = flat.get("maxItems").and_then(Value::as_u64).unwrap_or(u64::MAX);
        let prefix = flat.get("prefixItems").and_then(Value::as_array).cloned().unwrap_or_default();
        let wanted = if self.full() { min.max(1) } else { min };
        let count = wanted.min(max).min(MAX_ITEMS.max(min.min(1_024))) as usize;
        let items = flat.get("items").cloned();
        let mut out = Vec::with_capacity(count);
        for i in 0..count {
            let element = match (prefix.get(i), &items) {
                (Some(schema), _) => schema.clone(),
                (None, Some(Value::Bool(false))) => break,
                (None, Some(schema)) => schema.clone(),
                (None, None) => Value::Bool(true),
            };
            out.push(self.value(&element, depth + 1));
        }
        Value::Array(out)
    }

    fn object(&mut self, flat: &Map<String, Value>, depth: usize) -> Value {
        let properties = flat.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
        let required: Vec<String> = flat.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(|r| r.as_str().map(str::to_owned)).collect();
        let mut out = Map::new();
        for (name, schema) in &properties {
            if required.contains(name) || self.full() {
                let value = self.value(schema, depth + 1);
                out.insert(name.clone(), value);
            }
        }
        // A required member without a property schema takes whatever else the object allows.
        for name in required {
            if !out.contains_key(&name) {
                let extra = flat.get("additionalProperties").cloned().unwrap_or(Value::Bool(true));
                let value = self.value(&extra, depth + 1);
                out.insert(name, value);
            }
        }
        Value::Object(out)
    }
}

/// Merges one keyword into a flattened node: `properties` and `required` combine, the first
/// writer of anything else wins.
fn merge_keyword(out: &mut Map<String, Value>, key: &str, value: &Value) {
    match (key, out.get_mut(key), value) {
        ("properties", Some(Value::Object(have)), Value::Object(more)) => {
            for (k, v) in more {
                have.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        ("required", Some(Value::Array(have)), Value::Array(more)) => {
            for v in more {
                if !have.contains(v) {
                    have.push(v.clone());
                }
            }
        }
        (_, Some(_), _) => {}
        (_, None, _) => {
            out.insert(key.to_owned(), value.clone());
        }
    }
}

/// A JSON Pointer from a `$ref` fragment, `%`-decoded (`~` escapes stay for `pointer`).
fn unescape(pointer: &str) -> String {
    let bytes = pointer.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            if let Some(byte) = pointer.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(byte);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| pointer.to_owned())
}

/// The type to generate: the first non-null one named, or the one the keywords imply.
fn kind(flat: &Map<String, Value>) -> &'static str {
    const TYPES: [&str; 7] = ["string", "integer", "number", "boolean", "null", "array", "object"];
    let named: Vec<&str> = match flat.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if let Some(t) = named.iter().find(|t| **t != "null").or(named.first()) {
        return TYPES.iter().find(|k| *k == t).copied().unwrap_or("string");
    }
    if flat.contains_key("properties") || flat.contains_key("required") || flat.contains_key("additionalProperties") {
        "object"
    } else if flat.contains_key("items") || flat.contains_key("prefixItems") || flat.contains_key("minItems") {
        "array"
    } else if flat.contains_key("minimum") || flat.contains_key("maximum") || flat.contains_key("exclusiveMinimum") || flat.contains_key("exclusiveMaximum") {
        "number"
    } else {
        "string"
    }
}

/// A number inside the bounds: the lower bound when there is one, else 0 or the upper bound.
fn number(flat: &Map<String, Value>, integer: bool) -> Value {
    let bound = |k: &str| flat.get(k).and_then(Value::as_f64);
    let (min, max) = (bound("minimum"), bound("maximum"));
    let (xmin, xmax) = (bound("exclusiveMinimum"), bound("exclusiveMaximum"));
    let low = match (min, xmin) {
        (Some(a), Some(b)) => Some(if b >= a { Bound::Open(b) } else { Bound::Closed(a) }),
        (Some(a), None) => Some(Bound::Closed(a)),
        (None, Some(b)) => Some(Bound::Open(b)),
        (None, None) => None,
    };
    let high = match (max, xmax) {
        (Some(a), Some(b)) => Some(if b <= a { Bound::Open(b) } else { Bound::Closed(a) }),
        (Some(a), None) => Some(Bound::Closed(a)),
        (None, Some(b)) => Some(Bound::Open(b)),
        (None, None) => None,
    };
    let pick = match (low, high) {
        (Some(low), _) => low.above(integer),
        (None, Some(high)) if high.value() < 0.0 || (high.open() && high.value() <= 0.0) => high.below(integer),
        _ => 0.0,
    };
    // A whole number is written as an integer, which `integer` and `number` both accept.
    if pick.fract() == 0.0 && pick.abs() < 9.0e15 {
        json!(pick as i64)
    } else {
        json!(pick)
    }
}

#[derive(Clone, Copy)]
enum Bound {
    Closed(f64),
    Open(f64),
}

impl Bound {
    fn value(self) -> f64 {
        match self {
            Bound::Closed(v) | Bound::Open(v) => v,
        }
    }

    fn open(self) -> bool {
        matches!(self, Bound::Open(_))
    }

    /// The least value at or above a lower bound.
    fn above(self, integer: bool) -> f64 {
        match (self, integer) {
            (Bound::Closed(v), true) => v.ceil(),
            (Bound::Open(v), true) => v.floor() + 1.0,
            (Bound::Closed(v), false) => v,
            (Bound::Open(v), false) => if v.fract() == 0.0 { v + 1.0 } else { v.ceil() },
        }
    }

    /// The greatest value at or below an upper bound.
    fn below(self, integer: bool) -> f64 {
        match (self, integer) {
            (Bound::Closed(v), true) => v.floor(),
            (Bound::Open(v), true) => v.ceil() - 1.0,
            (Bound::Closed(v), false) => v,
            (Bound::Open(v), false) => if v.fract() == 0.0 { v - 1.0 } else { v.floor() },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONCE: &str = "cf-0123456789abcdef";

    fn valid(schema: &Value, instance: &Value) -> bool {
        jsonschema::validator_for(schema).expect("a schema").is_valid(instance)
    }

    #[test]
    fn finds_the_schema_in_each_way() {
        let schema = json!({"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]});
        let codex = json!({"model": "m", "input": [], "text": {"verbosity": "low", "format": {"type": "json_schema", "strict": true, "schema": schema, "name": "codex_output_schema"}}});
        assert_eq!(detect(&codex).map(|s| (s.way, s.schema)), Some((TEXT_FORMAT, schema.clone())));
        let chat = json!({"messages": [], "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}});
        assert_eq!(detect(&chat).map(|s| s.way), Some(RESPONSE_FORMAT));
        let anthropic = json!({"messages": [], "output_config": {"effort": "medium", "format": {"type": "json_schema", "schema": schema}}});
        assert_eq!(detect(&anthropic).map(|s| s.way), Some(OUTPUT_FORMAT));
        let claude = json!({"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}], "tools": [
            {"name": "Bash", "input_schema": {"type": "object"}},
            {"name": "StructuredOutput", "description": "…", "input_schema": schema},
        ]});
        let found = detect(&claude).expect("the tool way");
        assert_eq!((found.way, found.tool.as_deref(), found.answered, &found.schema), (TOOL, Some("StructuredOutput"), false, &schema));
        let forced = json!({"messages": [], "tools": [{"type": "function", "function": {"name": "submit", "parameters": schema}}], "tool_choice": {"type": "function", "function": {"name": "submit"}}});
        assert_eq!(detect(&forced).and_then(|s| s.tool), Some("submit".to_owned()));
        let plain = json!({"messages": [], "tools": [{"name": "Read", "input_schema": {"type": "object"}}], "output_config": {"effort": "low"}, "text": {"format": {"type": "text"}}});
        assert_eq!(detect(&plain), None);
    }

    #[test]
    fn a_tool_already_called_since_the_user_spoke_is_answered() {
        let tools = json!([{"name": "StructuredOutput", "input_schema": {"type": "object"}}]);
        let after = json!({"tools": tools, "messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "StructuredOutput", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]},
        ]});
        assert!(detect(&after).expect("found").answered);
        let next_turn = json!({"tools": tools, "messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "StructuredOutput", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]},
            {"role": "user", "content": [{"type": "text", "text": "again"}]},
        ]});
        assert!(!detect(&next_turn).expect("found").answered);
        let responses = json!({"tools": [{"type": "function", "name": "StructuredOutput", "parameters": {"type": "object"}}], "input": [
            {"type": "message", "role": "user", "content": "q"}, {"type": "function_call", "name": "StructuredOutput", "call_id": "c", "arguments": "{}"},
        ]});
        assert!(detect(&responses).expect("found").answered);
    }

    #[test]
    fn instances_validate_and_carry_the_nonce() {
        let schemas = [
            json!({"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"], "additionalProperties": false}),
            json!({"type": "object", "properties": {
                "n": {"type": "integer", "minimum": 3, "maximum": 9}, "x": {"type": "number", "exclusiveMinimum": 2.5},
                "neg": {"type": "integer", "maximum": -4}, "flag": {"type": "boolean"}, "none": {"type": "null"},
                "tags": {"type": "array", "items": {"type": "string", "maxLength": 5}, "minItems": 2, "maxItems": 3},
                "kind": {"enum": ["a", "b"]}, "fixed": {"const": 7}, "long": {"type": "string", "minLength": 40},
                "either": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
                "one": {"oneOf": [{"$ref": "#/$defs/item"}, {"type": "null"}]},
                "maybe": {"type": ["null", "string"]},
            }, "required": ["n", "x", "neg", "tags", "kind", "fixed", "long", "one"], "additionalProperties": false,
               "$defs": {"item": {"type": "object", "properties": {"id": {"type": "string", "minLength": 1}}, "required": ["id"], "additionalProperties": false}}}),
            json!({"allOf": [{"properties": {"a": {"type": "string"}}, "required": ["a"]}, {"properties": {"b": {"type": "integer", "minimum": 1}}, "required": ["b"]}]}),
            json!({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "items": false, "minItems": 2}),
            json!(true),
        ];
        for schema in &schemas {
            let value = instance(schema, NONCE);
            assert!(valid(schema, &value), "{value} does not validate against {schema}");
            assert!(value.to_string().contains(NONCE), "{value} has no nonce");
        }
        assert_eq!(instance(&schemas[0], NONCE), json!({"answer": NONCE}));
    }

    #[test]
    fn the_work_is_bounded() {
        // Each level refers to the next twice: 2^20 nodes if expanded in full.
        let mut defs = Map::new();
        for i in 0..20 {
            let next = format!("#/$defs/d{}", i + 1);
            defs.insert(format!("d{i}"), json!({"type": "object", "properties": {"l": {"$ref": next}, "r": {"$ref": next}}, "required": ["l"]}));
        }
        defs.insert("d20".into(), json!({"type": "string"}));
        let schema = json!({"$ref": "#/$defs/d0", "$defs": defs});
        let started = std::time::Instant::now();
        let value = instance(&schema, NONCE);
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
        assert!(valid(&schema, &value));
        assert!(value.to_string().len() < 1_000_000);
    }
}
