//! The `oneshot-v1` release protocol's runtime: the launch declaration's release decoder
//! and the normalized stream reader.
//!
//! The declaration's type and cross-field rules live in `checkfu-wire-vocab` (so the
//! generator derives the authoring schema, `generated/oneshot-v1.schema.json`, from the very
//! type this decoder reads); [`decode`] is serde's reading of that type followed by every
//! rule, which is what the page means by the decoder being authoritative over the schema.
//! The probe's one-shot lane (`crate::probe::oneshot`) launches what this accepts.

pub mod stream;

pub use checkfu_wire_vocab::oneshot::{Declaration, OutputMode, OutputSchemaTransport, PromptTransport, Refusal, Rule, PROTOCOL};

/// Why a declaration cannot be launched: it is not the type's shape (serde's message, with
/// line and column), or it breaks cross-field rules (each with its JSON Pointer).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeError {
    Shape(String),
    Rules(Vec<Refusal>),
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::Shape(message) => write!(f, "not a oneshot-v1 declaration: {message}"),
            DecodeError::Rules(refusals) => {
                let lines: Vec<String> = refusals.iter().map(Refusal::to_string).collect();
                write!(f, "the oneshot-v1 declaration breaks {} rule(s): {}", refusals.len(), lines.join("; "))
            }
        }
    }
}

/// Decodes a declaration from JSON text.
pub fn decode(text: &str) -> Result<Declaration, DecodeError> {
    let declaration: Declaration = serde_json::from_str(text).map_err(|e| DecodeError::Shape(e.to_string()))?;
    admit(declaration)
}

/// Decodes a declaration already parsed (a recipe's member, say).
pub fn decode_value(value: &serde_json::Value) -> Result<Declaration, DecodeError> {
    let declaration = Declaration::deserialize(value).map_err(|e| DecodeError::Shape(e.to_string()))?;
    admit(declaration)
}

use serde::Deserialize as _;

fn admit(declaration: Declaration) -> Result<Declaration, DecodeError> {
    let refusals = declaration.check();
    if refusals.is_empty() {
        Ok(declaration)
    } else {
        Err(DecodeError::Rules(refusals))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_and_rules_are_told_apart() {
        let shape = decode(r#"{"entrypoint": "x", "prompt_transport": "file", "output_mode": "text"}"#).unwrap_err();
        assert!(matches!(&shape, DecodeError::Shape(m) if m.contains("file") && m.contains("line 1")), "{shape}");
        let unknown = decode(r#"{"entrypoint": "x", "prompt_transport": "stdin", "output_mode": "text", "resume": "--r"}"#).unwrap_err();
        assert!(matches!(&unknown, DecodeError::Shape(m) if m.contains("resume")), "{unknown}");
        let rules =
            decode(r#"{"entrypoint": "x", "argv": ["{prompt_path}"], "prompt_transport": "stdin", "output_mode": "text"}"#).unwrap_err();
        assert_eq!(rules.to_string(), "the oneshot-v1 declaration breaks 1 rule(s): /argv/0: `{prompt_path}` appears in `argv`, but `prompt_transport` is `stdin` [prompt_path_iff_argv_path]");
        assert!(decode(r#"{"entrypoint": "x", "prompt_transport": "stdin", "output_mode": "text"}"#).is_ok());
    }
}
