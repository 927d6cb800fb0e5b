//! Methods read from `x-method`/`x-side` annotations of a schema's definitions: shared by
//! the pinned ACP schema's grammar and the annotation-style method sources of the catalog.

use std::collections::BTreeMap;

use serde_json::Value;

use super::model::{MethodPlan, Plan};
use crate::catalog::model::Side;
use crate::schema::SchemaSet;
use checkfu_wire_vocab::schema_syntax::escape;

/// A method read from `x-method`/`x-side` annotations, with the keys (under `$defs`) of
/// the definitions of its params and result.
pub(crate) struct AnnotatedMethod {
    pub plan: MethodPlan,
    pub params_def: Option<String>,
    pub result_def: Option<String>,
}

/// Every method a schema's definitions annotate with `x-method` (prefixed with `prefix`)
/// and `x-side`: a `*Response` definition is its result, a `*Request` or `*Notification`
/// one its params (a notification gets no `id`). Shared by the pinned ACP schema and the
/// annotation-style method sources.
pub(crate) fn annotated_methods(
    plan: &mut Plan,
    schemas: &SchemaSet,
    file: &str,
    prefix: &str,
    source: &str,
) -> Result<BTreeMap<String, AnnotatedMethod>, Vec<String>> {
    let Some(document) = schemas.files.get(file) else { return Err(vec![format!("no schema file `{file}`")]) };
    let mut methods: BTreeMap<String, AnnotatedMethod> = BTreeMap::new();
    let mut errors = Vec::new();
    for (def, schema) in document.get("$defs").and_then(Value::as_object).into_iter().flatten() {
        let Some(annotation) = schema.get("x-method").and_then(Value::as_str) else { continue };
        let side = match schema.get("x-side").and_then(Value::as_str) {
            Some("agent") => Side::Agent,
            Some("client") => Side::Client,
            Some("protocol") => Side::Protocol,
            other => {
                errors.push(format!("`{file}#/$defs/{}`: unknown x-side {other:?}", escape(def)));
                continue;
            }
        };
        let wire = format!("{prefix}{annotation}");
        if let Some(named) = described_method(schema).filter(|named| *named != wire) {
            plan.warnings.push(format!(
                "schemas/{file}#/$defs/{}: the description names method `{named}`, but `x-method` makes it `{wire}`; the decoder uses `{wire}`",
                escape(def)
            ));
        }
        let target = match plan.entry(schemas, &format!("{file}#/$defs/{}", escape(def)), def) {
            Ok(target) => target,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        let entry = methods.entry(wire.clone()).or_insert_with(|| AnnotatedMethod {
            plan: MethodPlan {
                name: wire.clone(),
                source: source.to_string(),
                side,
                notification: false,
                params: None,
                result: None,
                envelope: None,
            },
            params_def: None,
            result_def: None,
        });
        if entry.plan.side != side {
            errors.push(format!("schemas/{file}: method `{wire}` has definitions for two sides"));
        }
        if def.ends_with("Response") {
            entry.plan.result = Some(target);
            entry.result_def = Some(def.clone());
        } else {
            entry.plan.notification = def.ends_with("Notification");
            entry.plan.params = Some(target);
            entry.params_def = Some(def.clone());
        }
    }
    if errors.is_empty() {
        Ok(methods)
    } else {
        Err(errors)
    }
}

/// The method a definition's description names (`Method: `_agent/tools``), if any.
fn described_method(schema: &Value) -> Option<String> {
    let description = schema.get("description")?.as_str()?;
    let after = description.split("Method: `").nth(1)?;
    Some(after.split('`').next()?.to_string())
}
