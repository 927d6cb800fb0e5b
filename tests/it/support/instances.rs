//! An instance generator for JSON Schemas, used by the differential tests: valid-looking
//! instances from a schema, and mutations that each break one constraint once.
//!
//! It works on the raw, un-normalized schema (resolving local `$ref`s against the document
//! and merging `allOf` members), so it is independent of the generator under test. Whether
//! an instance is valid is never assumed: the `jsonschema` crate is the oracle.

use std::cell::Cell;

use serde_json::{json, Map, Value};

const MAX_VARIANTS: usize = 16;
const MAX_DEPTH: usize = 24;
/// Below this depth every member of an object is filled in and arrays get elements.
const FULL_DEPTH: usize = 6;
/// Calls of `valid` for one definition after which it is filled in as if deep down, unless
/// the caller sets another bound. A schema whose members refer back to the root (renovate's
/// root has 300 properties, and 132 of its 382 definitions, one per package manager, hold
/// `"$ref": "#"`) otherwise multiplies each instance by that fan-out at every level above
/// `FULL_DEPTH`: it ran for over 20 minutes. No schema of this repository's own tests comes
/// near the bound (the most is 680 calls, hostile_schemas' `self`); their instances are
/// what they were before it.
pub const FULL_WORK: usize = 20_000;

/// The keywords `flat` keeps: those the generator reads, and `allOf`, which it merges.
const READ: &[&str] = &[
    "allOf",
    "anyOf",
    "oneOf",
    "const",
    "enum",
    "type",
    "properties",
    "required",
    "items",
    "minItems",
    "pattern",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
];

pub struct Generator<'d> {
    document: &'d Value,
    work: Cell<usize>,
    full_work: usize,
}

impl<'d> Generator<'d> {
    /// A generator that fills in at most `full_work` calls of each definition fully.
    pub fn new(document: &'d Value, full_work: usize) -> Self {
        Generator { document, work: Cell::new(0), full_work }
    }

    /// Starts the count of work over, for the next definition.
    pub fn start(&self) {
        self.work.set(0);
    }

    /// Whether an instance at `depth` gets only required members and empty arrays.
    fn deep(&self, depth: usize) -> bool {
        depth > FULL_DEPTH || self.work.get() > self.full_work
    }

    fn resolve<'a>(&'a self, schema: &'a Value) -> &'a Value {
        let mut node = schema;
        for _ in 0..32 {
            match node.get("$ref").and_then(Value::as_str) {
                Some(r) if r.starts_with('#') => match self.document.pointer(&r[1..]) {
                    Some(target) => node = target,
                    None => return node,
                },
                _ => return node,
            }
        }
        node
    }

    /// The node's own keywords merged with those of its `allOf` members and `$ref` target:
    /// only those the generator reads, so that a reference to the root (`"$ref": "#"`)
    /// does not copy every definition of the document (renovate's: 1.4 MB, on each of
    /// tens of thousands of calls).
    fn flat(&self, schema: &Value) -> Map<String, Value> {
        let node = self.resolve(schema);
        let mut out: Map<String, Value> = match node.as_object() {
            Some(object) => object.iter().filter(|(k, _)| READ.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect(),
            None => Map::new(),
        };
        if let Some(Value::Array(members)) = out.remove("allOf") {
            for member in &members {
                let member = self.flat(member);
                for (k, v) in member {
                    out.entry(k).or_insert(v);
                }
            }
        }
        out
    }

    /// Instances meant to be valid: at least one per `anyOf`/`oneOf` branch and enum value.
    pub fn valid(&self, schema: &Value, depth: usize) -> Vec<Value> {
        if depth > MAX_DEPTH {
            return vec![Value::Null];
        }
        self.work.set(self.work.get() + 1);
        if schema == &Value::Bool(true) {
            return vec![json!("any"), json!({"nested": [1, 2.5, null]})];
        }
        let flat = self.flat(schema);
        let mut out = Vec::new();
        if let Some(c) = flat.get("const") {
            return vec![c.clone()];
        }
        if let Some(Value::Array(values)) = flat.get("enum") {
            return values.clone();
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = flat.get(key) {
                for branch in branches {
                    let branch = merge(&flat, branch, key);
                    out.extend(self.valid(&branch, depth + 1));
                }
                out.truncate(MAX_VARIANTS);
                return out;
            }
        }
        let types: Vec<String> = match flat.get("type") {
            Some(Value::String(t)) => vec![t.clone()],
            Some(Value::Array(ts)) => ts.iter().filter_map(|t| t.as_str().map(String::from)).collect(),
            None if flat.contains_key("properties") => vec!["object".into()],
            _ => vec!["any".into()],
        };
        for ty in types {
            match ty.as_str() {
                "string" => {
                    let min = flat.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
                    let max = flat.get("maxLength").and_then(Value::as_u64).map(|m| m as usize);
                    let short = "s".repeat(min.max(3).min(max.unwrap_or(usize::MAX)));
                    out.push(Value::String(short));
                    // Strings the pattern matches, drawn from the pattern itself, so that
                    // the pattern's own meaning is compared, not only its rejections.
                    if let Some(pattern) = flat.get("pattern").and_then(Value::as_str) {
                        out.extend(matching(pattern).into_iter().map(Value::String));
                    }
                    if let Some(max) = max.filter(|m| *m < 10_000) {
                        out.push(Value::String("é".repeat(max)));
                        // Either side of both bounds in one-, two- and four-byte characters:
                        // lengths count characters, not bytes.
                        for c in ["s", "é", "😀"] {
                            out.push(Value::String(c.repeat(max + 1)));
                        }
                    }
                    if min > 0 && min < 10_000 {
                        for c in ["s", "é", "😀"] {
                            out.push(Value::String(c.repeat(min - 1)));
                            out.push(Value::String(c.repeat(min)));
                        }
                    }
                }
                "integer" | "number" => {
                    let min = flat.get("minimum").and_then(Value::as_f64);
                    let max = flat.get("maximum").and_then(Value::as_f64);
                    out.push(num(min.unwrap_or(0.0)));
                    if let Some(max) = max {
                        out.push(num(max));
                    }
                    // Integers beyond 2^53, where an `f64` would round them.
                    if max.is_none_or(|m| m >= 9.3e18) {
                        out.extend([json!(9007199254740993u64), json!(u64::MAX)]);
                    }
                    if min.is_none_or(|m| m <= -9.3e18) {
                        out.push(json!(i64::MIN + 1));
                    }
                    // Beyond `u64`, `i64` and an `f64`'s precision: read as their texts'
                    // values or not at all.
                    for text in BIG_NUMBERS {
                        out.push(serde_json::from_str(text).expect("a JSON number"));
                    }
                    if ty == "number" {
                        // Seventeen-digit floats either side of each bound, where a reader
                        // that is one ulp off decides differently.
                        for bound in [min, max].into_iter().flatten() {
                            out.extend([json!(bound.next_down()), json!(bound.next_up())]);
                        }
                        out.push(json!(0.44999999999999996));
                        let half = min.unwrap_or(0.0) + 0.5;
                        if max.is_none_or(|m| half <= m) {
                            out.push(json!(half));
                        }
                    }
                }
                "boolean" => out.extend([json!(true), json!(false)]),
                "null" => out.push(Value::Null),
                "array" => {
                    // Recursive arrays (`items` referring back) would multiply with depth:
                    // deep down, only the empty array is offered.
                    if self.deep(depth) {
                        out.push(json!([]));
                        continue;
                    }
                    let items = flat.get("items").cloned().unwrap_or(Value::Bool(true));
                    let mut elements = self.valid(&items, depth + 1);
                    elements.truncate(4);
                    let min = flat.get("minItems").and_then(Value::as_u64).unwrap_or(0);
                    if min == 0 {
                        out.push(json!([]));
                    }
                    out.push(Value::Array(elements));
                }
                "object" => out.extend(self.objects(&flat, depth)),
                _ => out.extend([json!("any"), json!(7), Value::Null, json!({"k": [true]})]),
            }
        }
        out.truncate(MAX_VARIANTS);
        out
    }

    fn objects(&self, flat: &Map<String, Value>, depth: usize) -> Vec<Value> {
        let none = Map::new();
        let properties = flat.get("properties").and_then(Value::as_object).unwrap_or(&none);
        let required: Vec<&str> =
            flat.get("required").and_then(Value::as_array).map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
        let mut choices = Vec::new();
        for (name, schema) in properties {
            // Deep in a recursive schema, only required members are filled in, once each,
            // so instance size stays linear in depth.
            if self.deep(depth) && !required.contains(&name.as_str()) {
                continue;
            }
            let mut values = self.valid(schema, depth + 1);
            if self.deep(depth) {
                values.truncate(1);
            }
            choices.push((name.clone(), values));
        }
        let widest = choices.iter().map(|(_, c)| c.len()).max().unwrap_or(1).max(1);
        let mut out = Vec::new();
        for i in 0..widest {
            let mut full = Map::new();
            for (name, values) in &choices {
                if let Some(v) = values.get(i % values.len().max(1)) {
                    full.insert(name.clone(), v.clone());
                }
            }
            out.push(Value::Object(full));
        }
        let minimal: Map<String, Value> = choices
            .iter()
            .filter(|(n, _)| required.contains(&n.as_str()))
            .filter_map(|(n, v)| v.first().map(|v| (n.clone(), v.clone())))
            .collect();
        out.push(Value::Object(minimal));
        out
    }

    /// Copies of `instance` with one constraint broken, here or below.
    pub fn mutations(&self, schema: &Value, instance: &Value, depth: usize, out: &mut Vec<Value>, budget: usize) {
        if depth > MAX_DEPTH || out.len() >= budget {
            return;
        }
        let flat = self.flat(schema);
        // Wrong type, and null where perhaps only absence is allowed.
        out.push(match instance {
            Value::String(_) => json!(12345),
            Value::Number(_) => json!("12345"),
            Value::Object(_) | Value::Array(_) => json!("text"),
            Value::Bool(_) => json!(0),
            Value::Null => json!({}),
        });
        out.push(Value::Null);
        if flat.contains_key("enum") || flat.contains_key("const") {
            out.push(if instance.is_number() { json!(987654) } else { json!("zz-not-allowed") });
        }
        if let Some(max) = flat.get("maxLength").and_then(Value::as_u64).filter(|m| *m < 10_000) {
            out.push(Value::String("x".repeat(max as usize + 1)));
        }
        if let Some(min) = flat.get("minLength").and_then(Value::as_u64).filter(|m| *m > 0) {
            out.push(Value::String("x".repeat(min as usize - 1)));
        }
        if let Some(min) = flat.get("minimum").and_then(Value::as_f64) {
            out.push(num(min - 1.0));
        }
        if let Some(max) = flat.get("maximum").and_then(Value::as_f64) {
            out.push(num(max + 1.0));
        }
        if flat.get("type").and_then(Value::as_str) == Some("integer") {
            out.push(json!(0.5));
            out.push(json!(1.0));
        }
        match instance {
            Value::Object(object) => {
                let none = (Vec::new(), Map::new());
                let required = flat.get("required").and_then(Value::as_array).unwrap_or(&none.0);
                for name in required.iter().filter_map(Value::as_str) {
                    let mut without = object.clone();
                    if without.remove(name).is_some() {
                        out.push(Value::Object(without));
                    }
                }
                let mut extra = object.clone();
                extra.insert("zz_extra".into(), json!(1));
                out.push(Value::Object(extra));
                let properties = flat.get("properties").and_then(Value::as_object).unwrap_or(&none.1);
                for (name, value) in object {
                    let Some(schema) = properties.get(name) else { continue };
                    for child in self.child_mutations(schema, value, depth, budget.saturating_sub(out.len())) {
                        let mut copy = object.clone();
                        copy.insert(name.clone(), child);
                        out.push(Value::Object(copy));
                    }
                }
            }
            Value::Array(items) => {
                let item_schema = flat.get("items").cloned().unwrap_or(Value::Bool(true));
                for (i, item) in items.iter().enumerate() {
                    for child in self.child_mutations(&item_schema, item, depth, budget.saturating_sub(out.len())) {
                        let mut copy = items.clone();
                        copy[i] = child;
                        out.push(Value::Array(copy));
                    }
                }
            }
            _ => {}
        }
    }

    fn child_mutations(&self, schema: &Value, value: &Value, depth: usize, budget: usize) -> Vec<Value> {
        let mut mutated = Vec::new();
        let flat = self.flat(schema);
        let branches = flat.get("anyOf").or(flat.get("oneOf")).and_then(Value::as_array);
        match branches {
            Some(branches) => {
                for branch in branches {
                    self.mutations(branch, value, depth + 1, &mut mutated, budget);
                }
            }
            None => self.mutations(schema, value, depth + 1, &mut mutated, budget),
        }
        mutated
    }
}

fn merge(parent: &Map<String, Value>, branch: &Value, without: &str) -> Value {
    let mut merged = parent.clone();
    merged.remove(without);
    if let Value::Object(b) = branch {
        for (k, v) in b {
            merged.insert(k.clone(), v.clone());
        }
    }
    Value::Object(merged)
}

/// Numbers that only a reader of decimal text gets right: integers past `u64` and
/// `i64`, one written with an exponent, and decimals with more digits than an `f64` holds.
const BIG_NUMBERS: &[&str] = &[
    "18446744073709551616",
    "18446744073709551617",
    "-18446744073709551617",
    "123456789012345678901234567890",
    "1e30",
    "0.1000000000000000055511151231257827",
    "1.00000000000000000000001",
];

/// Up to three strings that `pattern` matches, drawn by proptest's regex strategy with a
/// fixed seed (none when its syntax is not one the strategy reads).
fn matching(pattern: &str) -> Vec<String> {
    use proptest::strategy::{Strategy, ValueTree};
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
    let Ok(strategy) = proptest::string::string_regex(pattern) else { return Vec::new() };
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]);
    let mut runner = TestRunner::new_with_rng(Config::default(), rng);
    (0..3).filter_map(|_| strategy.new_tree(&mut runner).ok().map(|tree| tree.current())).filter(|s| s.len() < 200).collect()
}

fn num(f: f64) -> Value {
    if f.fract() == 0.0 && f.abs() < 9.0e15 {
        json!(f as i64)
    } else {
        json!(f)
    }
}

/// Equality with numbers compared by the decimal values of their texts (this build keeps
/// them: `arbitrary_precision`).
pub fn same(a: &Value, b: &Value) -> bool {
    use checkfu_wire::exact::Decimal;
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.to_string(), y.to_string());
            matches!((Decimal::parse(&x), Decimal::parse(&y)), (Some(x), Some(y)) if x == y)
        }
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b)),
        (Value::Object(x), Value::Object(y)) => x.len() == y.len() && x.iter().all(|(k, a)| y.get(k).is_some_and(|b| same(a, b))),
        _ => a == b,
    }
}
