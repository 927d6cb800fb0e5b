//! Prints how the linter judges the official JSON-Schema-Test-Suite.
//!
//! Usage: `JSTS_DIR=/path/to/suite cargo run -p checkfu-wire-safety --example jsts_tally`
//! (add `-- --list RULE` to list the schemas that break one rule).

#[path = "../tests/it/support/jsts.rs"]
mod support;

use std::path::PathBuf;

fn main() {
    let Some(root) = std::env::var_os("JSTS_DIR") else {
        eprintln!("set JSTS_DIR to a JSON-Schema-Test-Suite checkout");
        std::process::exit(2);
    };
    let dir = support::draft_dir(&PathBuf::from(root));
    let schemas = support::load(&dir);
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, rule] = args.as_slice() {
        if flag == "--list" {
            for item in &schemas {
                let verdict = checkfu_wire_safety::lint_value(&item.schema);
                if verdict.rules().iter().any(|r| r.id() == rule) {
                    println!("{}: {}", item.file, item.description);
                }
            }
            return;
        }
    }
    let (required, optional) = support::tally(&schemas);
    print!("{}", support::render(&required, &optional));
}
