//! `--format junit`: the report as JUnit XML, written with the data model and serializer
//! cargo-nextest writes its own reports with (`quick-junit`), so that whatever reads
//! nextest's reports reads ours: one `testsuite` per suite of [`super::cases`] (the steps,
//! the checks, the verdict), one `testcase` per case, a failure's reason as its message, its
//! kind as its type and the excerpt of what the probe saw as its text; the run's facts (the
//! protocol, the driver, the image's digest, the revisions) as every suite's properties.

use std::time::Duration;

use quick_junit::{NonSuccessKind, Property, Report as Junit, TestCase, TestCaseStatus, TestSuite};

use super::cases::{self, Case};
use super::{Report, StepStatus, Window};

/// The name of the document's `testsuites`.
const NAME: &str = "checkfu-wire-probe";

pub fn render(report: &Report, window: Window) -> Result<String, quick_junit::SerializeError> {
    let properties = cases::properties(report);
    let mut junit = Junit::new(NAME);
    junit.set_time(window.duration());
    let mut suites: Vec<TestSuite> = Vec::new();
    for case in cases::cases(report) {
        let suite = match suites.iter_mut().position(|s| s.name.as_str() == case.suite) {
            Some(i) => &mut suites[i],
            None => {
                let mut suite = TestSuite::new(case.suite.as_str());
                suite.add_properties(properties.iter().map(|(name, value)| Property::new(name.as_str(), value.as_str())));
                suites.push(suite);
                suites.last_mut().expect("just pushed")
            }
        };
        suite.add_test_case(test_case(case));
    }
    for suite in &mut suites {
        let ms: u64 = suite.test_cases.iter().filter_map(|c| c.time).map(|t| t.as_millis() as u64).sum();
        suite.set_time(Duration::from_millis(ms));
    }
    junit.add_test_suites(suites);
    junit.to_string()
}

fn test_case(case: Case) -> TestCase {
    let status = match case.status {
        StepStatus::Passed => TestCaseStatus::success(),
        StepStatus::Skipped => {
            let mut status = TestCaseStatus::skipped();
            if let Some(why) = &case.message {
                status.set_message(why.as_str());
            }
            status
        }
        StepStatus::Failed => {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
            if let Some(reason) = &case.message {
                status.set_message(reason.as_str());
            }
            if let Some(kind) = case.kind {
                status.set_type(kind);
            }
            if let Some(excerpt) = &case.excerpt {
                status.set_description(excerpt.as_str());
            }
            status
        }
    };
    let mut test_case = TestCase::new(case.name, status);
    test_case.set_classname(format!("{NAME}.{}", case.suite));
    if let Some(ms) = case.ms {
        test_case.set_time(Duration::from_millis(ms));
    }
    test_case
}
