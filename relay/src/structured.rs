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
//! | `tool` | once the probe names the session's schema (`Relay::expect_schema`): a tool whose input schema is exactly it, whatever its name ([`exact_tool`]) | an ACP harness's submit tool |
//!
//! For the tool way the answer is a call of that tool with the instance as its input, once
//! per user turn: a request whose conversation already called the tool since the latest
//! user text is answered as if no schema were asked (the harness got its structured output
//! and asks for the turn's close). For the other ways the answer is the instance as JSON text.
//!
//! The instance generator reads the keywords of the project's safety profile that shape a
//! value: `type`, `properties`, `required`, `enum`, `const`, `items`, `prefixItems`,
//! `minItems`, `maxItems`, `minLength`, `maxLength`, `minimum`, `maximum`,
//! `exclusiveMinimum`, `exclusiveMaximum`, `anyOf`, `oneOf` (the first branch that can be
//! built), `allOf` (merged) and `$ref` to a JSON Pointer in the same document (`#/$defs/…`).
//! Every string is the call's reply token when its length bounds allow it. It ignores
//! `pattern` and `format`.
//!
//! A schema arrives from the harness, so the work is bounded whatever it says: at most
//! [`MAX_VALUES`] values and [`MAX_BYTES`] bytes in the instance, [`MAX_WORK`] keywords
//! copied while flattening, [`MAX_DEPTH`] levels. A `$ref` that re-enters a schema already
//! being built is a cycle: an optional member or alternative that runs into one is left
//! out, a required one makes the instance impossible. Past a budget, or with no finite
//! instance, [`instance`] answers `Err` and the relay refuses the call.

use serde_json::{json, Map, Value};

/// How the schema reached the model, as the relay's record names it.
pub type Way = &'static str;

pub const TEXT_FORMAT: Way = "text.format";
pub const RESPONSE_FORMAT: Way = "response_format";
pub const OUTPUT_FORMAT: Way = "output_format";
pub const TOOL: Way = "tool";

/// The deepest level the generator fills in.
pub const MAX_DEPTH: usize = 24;
/// Values after which objects get only required members and arrays their minimum length.
pub const FULL_NODES: usize = 2_000;
/// The most values one instance may hold.
pub const MAX_VALUES: usize = 20_000;
/// The most bytes of strings and member names one instance may hold.
pub const MAX_BYTES: usize = 1024 * 1024;
/// The most keywords copied or merged while flattening `$ref`, `allOf` and `anyOf`.
pub const MAX_WORK: usize = 1_000_000;
/// The most elements an array gets beyond its `minItems`.
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
    /// The tool way only: how many times it did (a submission the harness rejected is
    /// followed by another, so a relay that served a broken one counts past it).
    pub submissions: usize,
}

/// A `format` member that is `{type: "json_schema", …}`.
fn json_schema(format: Option<&Value>) -> Option<&Value> {
    format.filter(|f| f.get("type").and_then(Value::as_str) == Some("json_schema"))
}

/// The schema a request body asks the answer to follow, if any.
pub fn detect(body: &Value) -> Option<Structured> {
    let text_way = |way: Way, schema: Option<&Value>| {
        schema.filter(|s| s.is_object() || s.is_boolean()).map(|s| Structured {
            way,
            schema: s.clone(),
            tool: None,
            answered: false,
            submissions: 0,
        })
    };
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
    Some(submit_tool(body, name, schema))
}

/// The tool way for the tool `name` whose input schema is `schema`, with the calls the
/// conversation already made of it.
fn submit_tool(body: &Value, name: String, schema: Value) -> Structured {
    let submissions = calls_since_user(body, &name);
    Structured { way: TOOL, schema, tool: Some(name), answered: submissions > 0, submissions }
}

/// A tool offered in the request whose input schema is exactly `schema`: a harness's own
/// submit tool, whatever it names it and whether or not it forces it. The relay looks for
/// one when it was told the schema the session carries ([`super::Relay::expect_schema`]).
pub fn exact_tool(body: &Value, schema: &Value) -> Option<Structured> {
    let tools = body.get("tools").and_then(Value::as_array)?;
    let tool = tools.iter().find(|t| tool_schema(t) == Some(schema))?;
    Some(submit_tool(body, tool_name(tool)?.to_owned(), schema.clone()))
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

/// How many times assistant turns called `name` after the latest user message holding text.
fn calls_since_user(body: &Value, name: &str) -> usize {
    let mut called = 0usize;
    if let Some(messages) = body.get("messages").and_then(Value::as_array) {
        for message in messages {
            match message.get("role").and_then(Value::as_str) {
                Some("user") if user_text(message.get("content")) => called = 0,
                Some("assistant") => {
                    let blocks = message.get("content").and_then(Value::as_array).into_iter().flatten();
                    let anthropic =
                        blocks.filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_use")).filter(|b| tool_name(b) == Some(name));
                    let chat =
                        message.get("tool_calls").and_then(Value::as_array).into_iter().flatten().filter(|c| tool_name(c) == Some(name));
                    called = called.saturating_add(anthropic.count() + chat.count());
                }
                _ => {}
            }
        }
    }
    if let Some(items) = body.get("input").and_then(Value::as_array) {
        for item in items {
            let kind = item.get("type").and_then(Value::as_str);
            if matches!(kind, Some("message") | None) && item.get("role").and_then(Value::as_str) == Some("user") {
                called = 0;
            } else if kind == Some("function_call") && tool_name(item) == Some(name) {
                called = called.saturating_add(1);
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

/// Why no instance was built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Miss {
    /// This part of the schema has no finite instance here (a `$ref` cycle, or deeper than
    /// [`MAX_DEPTH`]): an optional member or another alternative may do without it.
    #[error("{0}")]
    Impossible(String),
    /// A budget is spent: the whole instance is refused.
    #[error("{0}")]
    Budget(String),
}

/// A bounded instance of `schema` (a document: `$ref`s resolve against it) whose strings
/// are `text` where their bounds allow. `Err` says why none was built: a budget spent, or
/// no finite instance.
pub fn instance(schema: &Value, text: &str) -> Result<Value, Miss> {
    let mut generator = Generator { document: schema, text, values: 0, bytes: 0, work: 0, building: Vec::new() };
    generator.value(schema, 0)
}

struct Generator<'d> {
    document: &'d Value,
    text: &'d str,
    values: usize,
    bytes: usize,
    work: usize,
    /// The `$ref` targets being built, outermost first (by address in the document).
    building: Vec<usize>,
}

impl Generator<'_> {
    fn spend(&mut self, work: usize) -> Result<(), Miss> {
        self.work += work;
        if self.work > MAX_WORK {
            return Err(Miss::Budget(format!("the output schema takes more than {MAX_WORK} keyword copies to flatten")));
        }
        Ok(())
    }

    fn add_bytes(&mut self, bytes: usize) -> Result<(), Miss> {
        self.bytes += bytes;
        if self.bytes > MAX_BYTES {
            return Err(Miss::Budget(format!("an instance of the output schema is larger than {MAX_BYTES} bytes")));
        }
        Ok(())
    }

    /// The node with its `$ref` chain resolved and its `allOf` members merged in; the
    /// targets it entered are pushed on `building` (the caller pops them).
    fn flat(&mut self, schema: &Value, depth: usize, entered: &mut usize) -> Result<Map<String, Value>, Miss> {
        let mut node = schema;
        let mut out = Map::new();
        for _ in 0..MAX_HOPS {
            let Some(object) = node.as_object() else { break };
            self.spend(object.len())?;
            for (k, v) in object {
                if k != "$ref" {
                    self.merge(&mut out, k, v)?;
                }
            }
            let Some(reference) = object.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix('#')) else { break };
            let Some(target) = self.document.pointer(&unescape(reference)) else { break };
            let address = target as *const Value as usize;
            if self.building.contains(&address) {
                return Err(Miss::Impossible(format!("`$ref` #{reference} is a cycle through required members: no finite instance")));
            }
            self.building.push(address);
            *entered += 1;
            node = target;
        }
        if let Some(Value::Array(members)) = out.remove("allOf") {
            if depth >= MAX_DEPTH {
                return Err(Miss::Impossible(format!("the output schema nests deeper than {MAX_DEPTH} levels")));
            }
            for member in &members {
                for (k, v) in self.flat(member, depth + 1, entered)? {
                    self.merge(&mut out, &k, &v)?;
                }
            }
        }
        Ok(out)
    }

    fn merge(&mut self, out: &mut Map<String, Value>, key: &str, value: &Value) -> Result<(), Miss> {
        let size = match value {
            Value::Object(map) => map.len(),
            Value::Array(items) => items.len(),
            _ => 1,
        };
        self.spend(size)?;
        merge_keyword(out, key, value);
        Ok(())
    }

    fn value(&mut self, schema: &Value, depth: usize) -> Result<Value, Miss> {
        let mark = self.building.len();
        let built = self.value_within(schema, depth);
        self.building.truncate(mark);
        built
    }

    fn value_within(&mut self, schema: &Value, depth: usize) -> Result<Value, Miss> {
        self.values += 1;
        if self.values > MAX_VALUES {
            return Err(Miss::Budget(format!("an instance of the output schema holds more than {MAX_VALUES} values")));
        }
        if depth > MAX_DEPTH {
            return Err(Miss::Impossible(format!("the output schema nests deeper than {MAX_DEPTH} levels")));
        }
        match schema {
            Value::Bool(true) => return self.string(&Map::new()),
            Value::Bool(false) => return Err(Miss::Impossible(String::from("the schema `false` has no instance"))),
            _ => {}
        }
        let mut entered = 0;
        let mut flat = self.flat(schema, depth, &mut entered)?;
        if let Some(c) = flat.get("const") {
            self.add_bytes(c.to_string().len())?;
            return Ok(c.clone());
        }
        if let Some(first) = flat.get("enum").and_then(Value::as_array).and_then(|v| v.first()) {
            self.add_bytes(first.to_string().len())?;
            return Ok(first.clone());
        }
        for key in ["oneOf", "anyOf"] {
            if let Some(Value::Array(branches)) = flat.remove(key) {
                let mut impossible = None;
                for branch in &branches {
                    self.spend(flat.len())?;
                    let mut merged = flat.clone();
                    let mark = self.building.len();
                    let mut inner = 0;
                    let built = self.flat(branch, depth + 1, &mut inner).and_then(|more| {
                        for (k, v) in more {
                            self.merge(&mut merged, &k, &v)?;
                        }
                        self.value(&Value::Object(merged), depth + 1)
                    });
                    self.building.truncate(mark);
                    match built {
                        Ok(value) => return Ok(value),
                        Err(Miss::Impossible(why)) => impossible = Some(why),
                        Err(budget) => return Err(budget),
                    }
                }
                if let Some(why) = impossible {
                    return Err(Miss::Impossible(why));
                }
            }
        }
        match kind(&flat) {
            "string" => self.string(&flat),
            "integer" => Ok(number(&flat, true)),
            "number" => Ok(number(&flat, false)),
            "boolean" => Ok(json!(true)),
            "null" => Ok(Value::Null),
            "array" => self.array(&flat, depth),
            "object" => self.object(&flat, depth),
            _ => self.string(&flat),
        }
    }

    fn full(&self) -> bool {
        self.values <= FULL_NODES
    }

    fn string(&mut self, flat: &Map<String, Value>) -> Result<Value, Miss> {
        let min = flat.get("minLength").and_then(Value::as_u64).unwrap_or(0);
        let max = flat.get("maxLength").and_then(Value::as_u64).unwrap_or(u64::MAX);
        if min > MAX_BYTES as u64 {
            return Err(Miss::Budget(format!("a string of at least {min} characters is larger than {MAX_BYTES} bytes")));
        }
        let mut text: String = self.text.chars().take(usize::try_from(max).unwrap_or(usize::MAX)).collect();
        let length = text.chars().count();
        if length < min as usize {
            text.extend(std::iter::repeat_n('x', min as usize - length));
        }
        self.add_bytes(text.len() + 8)?;
        Ok(Value::String(text))
    }

    fn array(&mut self, flat: &Map<String, Value>, depth: usize) -> Result<Value, Miss> {
        let min = flat.get("minItems").and_then(Value::as_u64).unwrap_or(0);
        let max = flat.get("maxItems").and_then(Value::as_u64).unwrap_or(u64::MAX);
        if min > MAX_VALUES as u64 {
            return Err(Miss::Budget(format!("an array of at least {min} items holds more than {MAX_VALUES} values")));
        }
        let prefix = flat.get("prefixItems").and_then(Value::as_array).cloned().unwrap_or_default();
        let wanted = if self.full() { min.max(1) } else { min };
        let count = wanted.min(max).min(MAX_ITEMS.max(min)) as usize;
        let items = flat.get("items").cloned();
        let mut out = Vec::with_capacity(count.min(1024));
        for i in 0..count {
            let element = match (prefix.get(i), &items) {
                (Some(schema), _) => schema.clone(),
                (None, Some(Value::Bool(false))) => break,
                (None, Some(schema)) => schema.clone(),
                (None, None) => Value::Bool(true),
            };
            match self.value(&element, depth + 1) {
                Ok(value) => out.push(value),
                // An element beyond the minimum may be left out.
                Err(Miss::Impossible(_)) if (i as u64) >= min => break,
                Err(miss) => return Err(miss),
            }
        }
        Ok(Value::Array(out))
    }

    fn object(&mut self, flat: &Map<String, Value>, depth: usize) -> Result<Value, Miss> {
        let properties = flat.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
        let required: Vec<String> =
            flat.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(|r| r.as_str().map(str::to_owned)).collect();
        self.spend(properties.len() + required.len())?;
        let mut out = Map::new();
        for (name, schema) in &properties {
            let needed = required.contains(name);
            if needed || self.full() {
                match self.value(schema, depth + 1) {
                    Ok(value) => {
                        self.add_bytes(name.len() + 8)?;
                        out.insert(name.clone(), value);
                    }
                    // An optional member that cannot be built is left out.
                    Err(Miss::Impossible(_)) if !needed => {}
                    Err(miss) => return Err(miss),
                }
            }
        }
        // A required member without a property schema takes whatever else the object allows.
        for name in required {
            if !out.contains_key(&name) {
                let extra = flat.get("additionalProperties").cloned().unwrap_or(Value::Bool(true));
                let value = self.value(&extra, depth + 1)?;
                self.add_bytes(name.len() + 8)?;
                out.insert(name, value);
            }
        }
        Ok(Value::Object(out))
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
    } else if flat.contains_key("minimum")
        || flat.contains_key("maximum")
        || flat.contains_key("exclusiveMinimum")
        || flat.contains_key("exclusiveMaximum")
    {
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
            (Bound::Open(v), false) => {
                if v.fract() == 0.0 {
                    v + 1.0
                } else {
                    v.ceil()
                }
            }
        }
    }

    /// The greatest value at or below an upper bound.
    fn below(self, integer: bool) -> f64 {
        match (self, integer) {
            (Bound::Closed(v), true) => v.floor(),
            (Bound::Open(v), true) => v.ceil() - 1.0,
            (Bound::Closed(v), false) => v,
            (Bound::Open(v), false) => {
                if v.fract() == 0.0 {
                    v - 1.0
                } else {
                    v.floor()
                }
            }
        }
    }
}

/// The SHA-256 of a value's canonical JSON (object keys sorted at every level), in hex: two
/// values that are equal as JSON have the same digest whatever order a client wrote them in.
pub fn digest(value: &Value) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    canonical(value, &mut |bytes| hasher.update(bytes));
    hasher.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn canonical(value: &Value, out: &mut dyn FnMut(&[u8])) {
    match value {
        Value::Array(items) => {
            out(b"[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out(b",");
                }
                canonical(item, out);
            }
            out(b"]");
        }
        Value::Object(map) => {
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            members.sort_by(|a, b| a.0.cmp(b.0));
            out(b"{");
            for (i, (key, item)) in members.into_iter().enumerate() {
                if i > 0 {
                    out(b",");
                }
                out(Value::String(key.clone()).to_string().as_bytes());
                out(b":");
                canonical(item, out);
            }
            out(b"}");
        }
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            // One spelling per number value: `1`, `1.0` and `1e0` are one value.
            (Some(i), _, _) => out(i.to_string().as_bytes()),
            (None, Some(u), _) => out(u.to_string().as_bytes()),
            (None, None, Some(f)) if f.fract() == 0.0 && f.abs() < 9.0e15 => out((f as i64).to_string().as_bytes()),
            (None, None, Some(f)) => out(format!("{f:e}").as_bytes()),
            _ => out(n.to_string().as_bytes()),
        },
        other => out(other.to_string().as_bytes()),
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
    fn a_tool_of_exactly_the_sessions_schema_is_its_submit_tool_and_counts_its_submissions() {
        let schema = json!({"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]});
        let tools = json!([{"name": "Read", "input_schema": {"type": "object"}}, {"name": "submit_result", "input_schema": schema}]);
        let first = json!({"tools": tools, "messages": [{"role": "user", "content": "q"}]});
        assert_eq!(detect(&first), None, "no name nor tool_choice says which tool submits");
        let found = exact_tool(&first, &schema).expect("the submit tool");
        assert_eq!((found.way, found.tool.as_deref(), found.submissions, found.answered), (TOOL, Some("submit_result"), 0, false));
        let submit =
            |id: &str| json!({"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "submit_result", "input": {}}]});
        let rejected =
            |id: &str| json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "is_error": true, "content": "no"}]});
        let again =
            json!({"tools": tools, "messages": [{"role": "user", "content": "q"}, submit("a"), rejected("a"), submit("b"), rejected("b")]});
        assert_eq!(exact_tool(&again, &schema).map(|s| s.submissions), Some(2));
        assert_eq!(exact_tool(&first, &json!({"type": "string"})), None, "no tool takes another schema");
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
            let value = instance(schema, NONCE).expect("an instance");
            assert!(valid(schema, &value), "{value} does not validate against {schema}");
            assert!(value.to_string().contains(NONCE), "{value} has no nonce");
        }
        assert_eq!(instance(&schemas[0], NONCE), Ok(json!({"answer": NONCE})));
    }

    #[test]
    fn the_work_is_bounded() {
        // Each level refers to the next twice: 2^20 nodes if expanded in full.
        let mut defs = Map::new();
        for i in 0..20 {
            let next = format!("#/$defs/d{}", i + 1);
            defs.insert(
                format!("d{i}"),
                json!({"type": "object", "properties": {"l": {"$ref": next}, "r": {"$ref": next}}, "required": ["l"]}),
            );
        }
        defs.insert("d20".into(), json!({"type": "string"}));
        let schema = json!({"$ref": "#/$defs/d0", "$defs": defs});
        let started = std::time::Instant::now();
        let value = instance(&schema, NONCE).expect("an instance");
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
        assert!(valid(&schema, &value));
        assert!(value.to_string().len() < 1_000_000);
    }

    #[test]
    fn a_schema_bomb_is_refused_within_the_budget() {
        // Three levels of arrays of at least 1,024 items: 2^30 values if built.
        let leaf = json!({"type": "string"});
        let level = |items: Value| json!({"type": "array", "minItems": 1024, "items": items});
        let bomb = level(level(level(leaf)));
        let why = instance(&bomb, NONCE).expect_err("refused").to_string();
        assert!(why.contains("more than 20000 values"), "{why}");
        // Strings of a gigabyte each.
        let wide = json!({"type": "array", "minItems": 1000, "items": {"type": "string", "minLength": 1_000_000}});
        assert!(instance(&wide, NONCE).expect_err("refused").to_string().contains("larger than"));
        // allOf members that each copy a large properties map, many times over.
        let properties: Map<String, Value> = (0..5_000).map(|i| (format!("p{i}"), json!({"type": "string"}))).collect();
        let member = json!({"properties": properties});
        let copies = json!({"allOf": vec![member; 400]});
        assert!(instance(&copies, NONCE).expect_err("refused").to_string().contains("keyword copies"));
    }

    #[test]
    fn ref_cycles_end_required_ones_are_impossible_optional_ones_left_out() {
        let required = json!({"$ref": "#/$defs/n", "$defs": {"n": {"type": "object", "properties": {
            "a": {"$ref": "#/$defs/n"}, "b": {"$ref": "#/$defs/n"}}, "required": ["a", "b"]}}});
        let started = std::time::Instant::now();
        let why = instance(&required, NONCE).expect_err("no finite instance").to_string();
        assert!(why.contains("cycle"), "{why}");
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
        let pure = json!({"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}});
        assert!(instance(&pure, NONCE).is_err());
        let optional = json!({"$ref": "#/$defs/n", "$defs": {"n": {"type": "object", "properties": {
            "name": {"type": "string"}, "child": {"$ref": "#/$defs/n"}}, "required": ["name"]}}});
        let tree = instance(&optional, NONCE).expect("a finite tree");
        assert!(valid(&optional, &tree), "{tree}");
        let nullable = json!({"$ref": "#/$defs/n", "$defs": {"n": {"type": "object", "properties": {
            "next": {"anyOf": [{"$ref": "#/$defs/n"}, {"type": "null"}]}}, "required": ["next"]}}});
        let list = instance(&nullable, NONCE).expect("a list ended by null");
        assert!(valid(&nullable, &list), "{list}");
    }
}
