//! The `oneshot-v1` author kit under `golden/oneshot-v1/`, held to the code:
//! - `declarations/`: each `accepted-*` case is accepted by the authoring schema
//!   (`generated/oneshot-v1.schema.json`, judged by the independent `jsonschema` validator)
//!   and by the release decoder; each `refused-*` case is accepted by the schema (a
//!   structural preview) and refused by the decoder for exactly the rule and at exactly the
//!   JSON Pointer it names;
//! - `exchanges/`: each golden process exchange (argv, stdin, the model's replies as the
//!   relay recorded them, stdout, the exit) is read by the one-shot lane's own reader and
//!   judge, and must give exactly its expected observations and step verdicts. A changed
//!   judge is reviewed by rewriting them: `CHECKFU_BLESS=1 cargo test --test golden_oneshot`,
//!   then reading the diff.

use std::path::PathBuf;

use checkfu_wire::oneshot::{self, DecodeError, OutputMode};
use checkfu_wire_probe::oneshot::judge::{self, Exit, Output, Served};
use serde_json::{json, Value};

fn files(dir: &str) -> Vec<(String, Value)> {
    let dir = crate::support::project::project_root().join("golden/oneshot-v1").join(dir);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("golden dir")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("read");
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display())),
            )
        })
        .collect()
}

fn authoring_schema() -> jsonschema::Validator {
    let path = crate::support::project::project_root().join("generated/oneshot-v1.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(&path).expect("the authoring schema is generated")).expect("JSON");
    jsonschema::validator_for(&schema).expect("the authoring schema compiles")
}

#[test]
fn the_schema_previews_and_the_decoder_decides() {
    let schema = authoring_schema();
    let cases = files("declarations");
    let (mut accepted, mut refused) = (0, 0);
    for (name, case) in &cases {
        let declaration = &case["declaration"];
        let errors: Vec<String> = schema.iter_errors(declaration).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{name}: the authoring schema refuses it: {errors:?}");
        match oneshot::decode_value(declaration) {
            Ok(_) => {
                assert!(case.get("refused").is_none(), "{name}: the decoder accepted a case marked refused");
                accepted += 1;
            }
            Err(DecodeError::Rules(refusals)) => {
                let expected = &case["refused"];
                let got: Vec<Value> = refusals.iter().map(|r| json!({"rule": r.rule.name(), "pointer": r.pointer})).collect();
                assert_eq!(got, vec![expected.clone()], "{name}: {refusals:?}");
                refused += 1;
            }
            Err(e) => panic!("{name}: not even the type's shape: {e}"),
        }
    }
    assert!(accepted >= 4 && refused >= 20, "{accepted} accepted, {refused} refused");
    // Every cross-field rule has a golden refusal.
    let covered: Vec<&str> = cases.iter().filter_map(|(_, c)| c["refused"]["rule"].as_str()).collect();
    for rule in oneshot::Rule::ALL {
        assert!(covered.contains(&rule.name()), "no golden case refuses for `{}`", rule.name());
    }
    // The schema is a preview, not a judge: a shape error it also refuses.
    assert!(!schema.is_valid(&json!({"entrypoint": "x", "prompt_transport": "file", "output_mode": "text"})));
}

fn exit(value: &Value, timed_out: bool) -> Exit {
    Exit { code: value["code"].as_i64().map(|c| c as i32), signal: value["signal"].as_i64().map(|s| s as i32), timed_out }
}

fn served(model: &Value) -> Vec<Served> {
    model
        .as_array()
        .into_iter()
        .flatten()
        .map(|call| {
            let carries = |what: &str| call["request_carries"].as_array().is_some_and(|c| c.iter().any(|x| x == what));
            Served {
                nonce_in_request: carries("nonce"),
                earlier_reply_in_request: carries("first_reply"),
                reply_token: call["reply_token"].as_str().map(str::to_owned),
                structured_digest: call.get("structured").map(checkfu_wire_probe::relay::digest),
            }
        })
        .collect()
}

#[test]
fn every_golden_exchange_gives_its_observations_and_verdicts() {
    let bless = std::env::var_os("CHECKFU_BLESS").is_some();
    let exchanges = files("exchanges");
    assert!(exchanges.len() >= 14, "five paths and nine broken exchanges");
    for (name, mut exchange) in exchanges {
        let declaration = oneshot::decode_value(&exchange["declaration"]).unwrap_or_else(|e| panic!("{name}: {e}"));
        let nonces: Vec<String> =
            exchange["nonces"].as_array().expect("nonces").iter().filter_map(Value::as_str).map(str::to_owned).collect();
        let step_timeout = exchange["step_timeout"].as_f64().unwrap_or(30.0);
        let validator = exchange.get("output_schema").map(|s| jsonschema::validator_for(s).expect("schema"));
        let mut verdicts = serde_json::Map::new();
        let mut answers = Vec::new();
        let mut first_reply = None;
        let runs = exchange["runs"].as_array().expect("runs").clone();
        for (i, run) in runs.iter().enumerate() {
            // The prompt reaches the CLI as declared, and carries its run's nonce.
            match declaration.prompt_transport {
                oneshot::PromptTransport::Stdin => assert!(run["stdin"].as_str().is_some_and(|s| s.contains(&nonces[i])), "{name}: stdin"),
                oneshot::PromptTransport::ArgvPath => assert!(run["stdin"].is_null(), "{name}: stdin is closed"),
            }
            let mut output = Output::new(declaration.output_mode);
            for line in run["stdout"].as_str().expect("stdout").lines() {
                output.line(line.as_bytes());
            }
            let run_exit = exit(&run["exit"], run["timed_out"].as_bool().unwrap_or(false));
            output.end(&run_exit);
            let trace = output.normalizer.trace(&[], &[]);
            let observations: Vec<Value> = trace.lines().skip(1).map(|l| serde_json::from_str(l).expect("observation")).collect();
            if bless {
                exchange["runs"][i]["observations"] = Value::Array(observations);
            } else {
                assert_eq!(Value::Array(observations), run["observations"], "{name}, run {}: observations", i + 1);
            }
            let served = served(&run["model"]);
            let outcome = match i {
                0 => ("prompt_exchange", judge::prompt_exchange(&output, &run_exit, &served, &nonces[0], step_timeout)),
                _ => ("resume", judge::resume(&output, &run_exit, &served, &nonces[1], first_reply.as_deref(), step_timeout)),
            };
            if i == 0 {
                first_reply = outcome.1.as_ref().ok().cloned();
            }
            verdicts.insert(outcome.0.to_owned(), verdict(outcome.1.map(|_| ()).map_err(|f| f.to_string())));
            answers.push((output.answer().to_owned(), served));
            if declaration.output_mode == OutputMode::Text {
                assert_eq!(output.answer().trim_end(), run["stdout"].as_str().unwrap().trim_end(), "{name}: text mode's answer is stdout");
            }
        }
        if let Some(validator) = &validator {
            let outcome =
                answers.iter().try_for_each(|(answer, served)| judge::output_schema(answer, validator, served)).map_err(|f| f.to_string());
            verdicts.insert("output_schema".to_owned(), verdict(outcome));
        }
        if bless {
            exchange["verdicts"] = Value::Object(verdicts);
            let path = crate::support::project::project_root().join("golden/oneshot-v1/exchanges").join(&name);
            std::fs::write(&path, format!("{}\n", serde_json::to_string_pretty(&exchange).expect("JSON"))).expect("bless");
        } else {
            assert_eq!(Value::Object(verdicts), exchange["verdicts"], "{name}: verdicts");
        }
    }
}

fn verdict(outcome: Result<(), String>) -> Value {
    match outcome {
        Ok(()) => json!({"status": "passed"}),
        Err(reason) => json!({"status": "failed", "reason": reason}),
    }
}
