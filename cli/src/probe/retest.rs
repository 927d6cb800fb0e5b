//! The retest's words: the probe's command line rendered back from the typed flags clap read
//! ([`super::Args`]), never from the words the user typed. Each flag is written as
//! `--long=value`, in the order the command declares it, and only when it differs from its
//! default (a default said again changes nothing in the run); the build context's flags
//! give way to the retest's `--image` ([`RetestWord::Image`]).
//!
//! The flags are rendered from the command line's flags and not from the resolved plan,
//! which holds the recipe's values merged in: the recipe stays the retest's own, read again
//! when it runs.

use std::fmt::Display;

use checkfu_wire_probe::next::RetestWord;

use super::image::{self, Flags as ImageFlags};
use super::oneshot::Flags as OneshotFlags;
use super::{acp, Args, Format, HomeFile, Shared, DEADLINE, KILL_GRACE, MODEL_SCRIPT, SETTLE, STEP_TIMEOUT};

/// The words rendered so far.
#[derive(Default)]
struct Words(Vec<RetestWord>);

impl Words {
    /// `--long=value` for each value.
    fn each<T: Display>(&mut self, long: &str, values: impl IntoIterator<Item = T>) {
        self.0.extend(values.into_iter().map(|v| RetestWord::Kept(format!("--{long}={v}"))));
    }

    /// `--long=value` unless the value is the flag's default.
    fn unless<T: Display + PartialEq>(&mut self, long: &str, value: T, default: T) {
        self.each(long, (value != default).then_some(value));
    }

    /// `--long`, when set.
    fn switch(&mut self, long: &str, on: bool) {
        if on {
            self.0.push(RetestWord::Kept(format!("--{long}")));
        }
    }
}

/// A value as clap's `ValueEnum` names it.
fn value_name<T: clap::ValueEnum>(value: &T) -> String {
    value.to_possible_value().map(|v| v.get_name().to_owned()).unwrap_or_default()
}

/// A value as its serde name, as the one-shot flags read it.
fn serde_name<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

/// A home file as it was given: `@FILE` for a template read from one, `@@…` for a template
/// that starts with `@`.
impl Display for HomeFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.from, self.template.strip_prefix('@')) {
            (Some(file), _) => write!(f, "{}=@{file}", self.path),
            (None, Some(_)) => write!(f, "{}=@{}", self.path, self.template),
            (None, None) => write!(f, "{}={}", self.path, self.template),
        }
    }
}

impl Args {
    /// The probe's command line for the retest, from the flags as clap read them.
    pub(super) fn retest(&self) -> Vec<RetestWord> {
        let mut words = Words::default();
        self.shared.render(&mut words);
        self.acp.render(&mut words);
        self.oneshot.render(&mut words);
        self.image.render(&mut words);
        if !self.command.is_empty() {
            words.0.push(RetestWord::Kept(String::from("--")));
            words.0.extend(self.command.iter().map(|w| RetestWord::Kept(w.to_string_lossy().into_owned())));
        }
        words.0
    }
}

impl Shared {
    fn render(&self, words: &mut Words) {
        words.each("output-schema", self.output_schema.iter().map(|p| p.display()));
        words.unless("step-timeout", self.step_timeout, STEP_TIMEOUT);
        words.unless("deadline", self.deadline, DEADLINE);
        words.unless("settle", self.settle, SETTLE);
        words.unless("kill-grace", self.kill_grace, KILL_GRACE);
        words.each("trace", self.trace.iter().map(|p| p.display()));
        words.each("provider", &self.provider);
        words.unless("model-script", self.model_script.as_str(), MODEL_SCRIPT);
        words.each("harness", &self.harness);
        words.each("recipe", self.recipe.iter().map(|p| p.display()));
        words.switch("inherit-home", self.inherit_home);
        words.each("env", self.env.iter().map(|(key, value)| format!("{key}={value}")));
        words.each("home-file", &self.home_file);
        words.switch("no-netns", self.no_netns);
        words.each("record-model", self.record_model.iter().map(|p| p.display()));
        words.each("format", (self.format != Format::Text).then(|| value_name(&self.format)));
        words.each("protocol", self.protocol);
        words.each("working-directory", &self.working_directory);
    }
}

impl acp::Flags {
    fn render(&self, words: &mut Words) {
        words.each("arg", &self.arg);
        words.each("driver", self.driver);
        words.each("retention", self.retention);
        match &self.builtin_tools {
            Some(tools) if tools.is_empty() => words.switch("builtin-tools", true),
            tools => words.each("builtin-tools", tools.iter().map(|t| t.join(","))),
        }
        words.each("authenticate", &self.authenticate);
        words.each("continuity", &self.continuity);
        words.each("runtime-config", &self.runtime_config);
        words.each("context-window", self.context_window);
        words.each("compaction", &self.compaction);
        words.each("compaction-trigger", self.compaction_trigger);
        words.switch("interrupt", self.interrupt);
        words.switch("no-cancellation", self.no_cancellation);
        words.each("permission", self.permission.as_ref().map(value_name));
        words.switch("allow-terminals", self.allow_terminals);
        words.switch("no-client-fs", self.no_client_fs);
        words.each("record", self.record.iter().map(|p| p.display()));
        words.each("acp-version", self.acp_version);
    }
}

impl OneshotFlags {
    fn render(&self, words: &mut Words) {
        words.each("prompt-transport", self.prompt_transport.as_ref().map(serde_name));
        words.each("output-mode", self.output_mode.as_ref().map(serde_name));
        words.each("argv", &self.argv);
        words.each("resume-flag", &self.resume_flag);
        words.each("output-schema-flag", &self.output_schema_flag);
        words.each("output-schema-transport", self.output_schema_transport.as_ref().map(serde_name));
    }
}

impl ImageFlags {
    /// The image's flags: `--build-context` becomes the retest's `--image`, and the flags
    /// that only a build reads (`--dockerfile`, `--builder`,
    /// `--allow-registry-all-interfaces`) are left out.
    fn render(&self, words: &mut Words) {
        words.each("image", &self.image);
        if self.image.is_some() {
            words.unless("image-source", &self.image_source, &Default::default());
        }
        if self.build_context.is_some() {
            words.0.push(RetestWord::Image);
        }
        words.each("runtime", self.runtime.as_ref().map(value_name));
        words.each("image-cache", self.image_cache.iter().map(|p| p.display()));
        words.switch("no-image-cache", self.no_image_cache);
        let default_max = checkfu_wire_probe::image::store::parse_size(image::IMAGE_CACHE_MAX).ok();
        words.each("image-cache-max", (Some(self.image_cache_max) != default_max).then_some(self.image_cache_max));
        words.each("entrypoint", &self.entrypoint);
        words.unless("name", self.name.as_str(), image::NAME);
        words.each("sandbox", &self.sandbox);
        words.each("model", &self.model);
        words.0.extend(self.context().into_iter().map(RetestWord::Kept));
    }
}

#[cfg(test)]
mod tests {
    use clap::FromArgMatches;

    use super::*;

    /// The probe's flags as clap reads them from `words`.
    fn args(words: &[&str]) -> Args {
        let command = <Args as clap::Args>::augment_args(clap::Command::new("probe"));
        let matches = command.try_get_matches_from(std::iter::once("probe").chain(words.iter().copied())).expect("the flags parse");
        Args::from_arg_matches(&matches).expect("the flags read")
    }

    /// The retest as the next steps print it, `--image` standing for itself.
    fn rendered(args: &Args) -> String {
        let words: Vec<String> = args
            .retest()
            .into_iter()
            .map(|w| match w {
                RetestWord::Kept(text) => text,
                RetestWord::Image => String::from("--image=IMAGE"),
            })
            .collect();
        words.join(" ")
    }

    #[test]
    fn the_retest_replaces_the_build_context_with_the_image() {
        let given = args(&[
            "--name",
            "c",
            "--build-context=./c",
            "--dockerfile=./c/D",
            "--allow-registry-all-interfaces",
            "--env",
            "FOO=bar",
            "--argv={prompt_path}",
            "--home-file=a=@@x",
        ]);
        assert_eq!(rendered(&given), "--env=FOO=bar --home-file=a=@@x --argv={prompt_path} --image=IMAGE --name=c");
    }

    #[test]
    fn a_default_said_again_is_left_out_and_the_context_is_kept() {
        let given = args(&["--format=json", "--api-url=https://x", "--deadline=3", "--step-timeout=30", "--name=checkfu-probe"]);
        assert_eq!(rendered(&given), "--deadline=3 --format=json --api-url=https://x");
        assert_eq!(given.image.registration(Vec::new()).expect("registration").context, vec![String::from("--api-url=https://x")]);
    }

    /// A flag of every kind both lanes take, the image's and the build's: every value unlike
    /// its default.
    const SHARED: &[&str] = &[
        "--output-schema=s.json",
        "--step-timeout=1.5",
        "--deadline=9",
        "--settle=0",
        "--kill-grace=1",
        "--trace=t.jsonl",
        "--provider=openai",
        "--model-script=tool",
        "--harness=h",
        "--recipe=r.json",
        "--inherit-home",
        "--env=A=b",
        "--no-netns",
        "--record-model=m.jsonl",
        "--format=json",
        "--working-directory=/w",
        "--runtime=podman",
        "--image-cache=/c",
        "--image-cache-max=1G",
        "--entrypoint=/e",
        "--name=n",
        "--sandbox=s",
        "--model=m",
        "--connection-file=f.json",
        "--api-url=https://x",
        "--build-context=./c",
        "--dockerfile=D",
        "--builder=podman",
        "--allow-registry-all-interfaces",
    ];
    const ACP: &[&str] = &[
        "--protocol=acp-v1",
        "--arg=-x",
        "--driver=checkfu:acp-v1@1",
        "--retention=durable",
        "--builtin-tools=a,b",
        "--authenticate=k",
        "--continuity=c",
        "--context-window=9",
        "--compaction=summarize",
        "--compaction-trigger=8",
        "--interrupt",
        "--no-cancellation",
        "--permission=reject",
        "--allow-terminals",
        "--no-client-fs",
        "--record=w.jsonl",
        "--acp-version=2",
    ];
    const ONESHOT: &[&str] = &[
        "--protocol=oneshot-v1",
        "--prompt-transport=argv_path",
        "--output-mode=stream_json",
        "--argv=-p",
        "--resume-flag=--r",
        "--output-schema-flag=--s",
        "--output-schema-transport=argv_path",
    ];
    /// `--runtime-config` excludes `--context-window`, and `--no-image-cache`
    /// `--image-cache`: a run of their own.
    const APART: &[&str] = &["--protocol=acp-v1", "--runtime-config={\"context_window\":9}", "--no-image-cache"];

    /// Every flag of the command is rendered (but the build's, which the retest's `--image`
    /// replaces), and the rendering reads back as the same flags.
    #[test]
    fn every_flag_is_rendered_and_reads_back_the_same() {
        let template = std::env::temp_dir().join(format!("checkfu-retest-{}.txt", std::process::id()));
        std::fs::write(&template, "{}").expect("template");
        let from = format!("--home-file=cfg/x.json=@{}", template.display());
        let mut rendered_longs = Vec::new();
        for (shared, lane) in [(SHARED, ACP), (SHARED, ONESHOT), (&[][..], APART)] {
            let words: Vec<&str> = shared.iter().chain(lane).copied().chain(["--", "agent", "--flag"]).collect();
            let text = rendered(&args(&words));
            let again: Vec<String> = text.split(' ').map(|w| w.replace("--image=IMAGE", "--build-context=./c")).collect();
            let again: Vec<&str> = again.iter().map(String::as_str).collect();
            assert_eq!(rendered(&args(&again)), text, "the retest reads back as itself");
            assert!(text.ends_with(" -- agent --flag"), "{text}");
            let longs = text.split(' ').filter_map(|w| w.strip_prefix("--"));
            rendered_longs.extend(longs.map(|w| w.split('=').next().unwrap_or(w).to_owned()));
        }
        assert_eq!(rendered(&args(&[&from])), from, "a home file read from a file is said as given");
        let _ = std::fs::remove_file(&template);
        let command = <Args as clap::Args>::augment_args(clap::Command::new("probe"));
        let build = ["build_context", "dockerfile", "builder", "allow_registry_all_interfaces", "image", "image_source"];
        for arg in command.get_arguments().filter(|a| !build.contains(&a.get_id().as_str())) {
            if let Some(long) = arg.get_long().filter(|long| !["help", "home-file"].contains(long)) {
                assert!(rendered_longs.iter().any(|r| r == long), "--{long} is not rendered in the retest");
            }
        }
    }

    /// Each lane's `given` knows every flag of its clap group, in the order declared, so a
    /// lane's flag given to the other lane's protocol is always refused.
    #[test]
    fn each_lanes_given_flags_are_its_groups() {
        let command = <Args as clap::Args>::augment_args(clap::Command::new("probe"));
        let group = |id: &str| -> Vec<String> {
            let group = command.get_groups().find(|g| g.get_id() == id).expect("the group");
            let members: Vec<&str> = group.get_args().map(|a| a.as_str()).collect();
            let args = command.get_arguments().filter(|a| members.contains(&a.get_id().as_str()));
            args.filter_map(|a| a.get_long()).map(|long| format!("--{long}")).collect()
        };
        let given = args(&[]);
        let names = |flags: &[(&str, bool)]| -> Vec<String> { flags.iter().map(|(f, _)| (*f).to_owned()).collect() };
        assert_eq!(names(&given.acp.each_given()), group("acp-flags"));
        assert_eq!(names(&given.oneshot.each_given()), group("oneshot-flags"));
        assert_eq!((given.acp.given(), given.oneshot.given()), (None, None));
    }
}
