//! The verdict of a run: `passed`, `failed` or `incomplete`, decided in one place ([`decide`])
//! from how the runner ended, what the parser counted and whether the runner's own account of
//! the run agreed.
//!
//! The property this module exists for: a report built from a runner's output can never say
//! "passed" for a failure. `passed` needs all of:
//! - the runner exited by itself with code 0 (a runner's exit code is its own verdict, which no
//!   line a test prints can change);
//! - no failing test, build error, or unit that failed as a whole was counted;
//! - the runner's own account was seen (libtest's `test result:` line for every test binary,
//!   go's result for every package, node's closing counts, vitest's report totals) and nothing
//!   disagreed with the events (no anomalies).
//!
//! Anything that says a failure makes the run `failed`; a run without a counted failure that
//! misses any other condition is `incomplete` (a runner killed by a signal, a non-zero exit with
//! no failing test, a missing or disagreeing summary, an unusable report file), with the
//! reasons said in the report.

pub use super::report::{Ending, Status, Verdict};
use super::report::Summary;

/// Decides the verdict of a run that ended as `ending` with the parser's `summary`. The only
/// place a verdict is made.
pub fn decide(ending: &Ending, summary: &Summary) -> Verdict {
    let failing = summary.failing();
    let mut reasons = Vec::new();
    match ending {
        Ending::Exited(0) => {}
        Ending::Exited(code) => {
            if !failing {
                reasons.push(format!(
                    "the runner exited with code {code} but reported no failing test: something failed outside the tests (read its output), so the run is not green"
                ));
            }
        }
        Ending::Signaled(sig) => reasons.push(format!(
            "the runner was killed by {sig} before it finished (a test may have killed it or its process): the tests it had not reported are missing from the counts"
        )),
        Ending::Deadline(ms) => reasons.push(format!("the run was stopped at the {ms} ms deadline: the tests it had not reported are missing from the counts")),
        Ending::Unknown => reasons.push("the runner ended without an exit status".to_string()),
    }
    if !summary.runner_summary {
        reasons.push("the runner's own summary of the run is missing, so the counts cannot be checked against it".to_string());
    }
    reasons.extend(summary.anomalies.iter().cloned());
    let status = if failing {
        Status::Failed
    } else if reasons.is_empty() && *ending == Ending::Exited(0) {
        Status::Passed
    } else {
        Status::Incomplete
    };
    Verdict { status, ending: ending.clone(), reasons }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testrun::report::Unit;
    use proptest::prelude::*;

    fn ending() -> impl Strategy<Value = Ending> {
        prop_oneof![
            (-3i32..200).prop_map(Ending::Exited),
            Just(Ending::Exited(0)),
            prop_oneof![Just("SIGKILL"), Just("SIGSEGV"), Just("SIGTERM")].prop_map(|s| Ending::Signaled(s.to_string())),
            (1u64..10_000).prop_map(Ending::Deadline),
            Just(Ending::Unknown),
        ]
    }

    fn summary() -> impl Strategy<Value = Summary> {
        (0u64..3, 0u64..3, 0u64..3, any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>(), 0usize..2).prop_map(
            |(passed, failed, skipped, build_error, broken, runner_summary, anomaly, units)| {
                let mut s = Summary { passed, failed, skipped, runner_summary, ..Summary::default() };
                if build_error {
                    s.push_build_error("error[E0308]: mismatched types");
                }
                for i in 0..units {
                    let mut u = Unit::new(format!("u{i}"));
                    u.broken = broken;
                    s.units.push(u);
                }
                if anomaly {
                    s.push_anomaly("the counts disagree");
                }
                s
            },
        )
    }

    proptest! {
        /// `passed` only with exit code 0, nothing failing, the runner's summary seen and no
        /// anomaly; anything failing is `failed`, whatever else is known.
        #[test]
        fn passed_only_when_every_source_agrees(e in ending(), s in summary()) {
            let v = decide(&e, &s);
            if v.status == Status::Passed {
                prop_assert_eq!(&e, &Ending::Exited(0));
                prop_assert!(s.failed == 0 && s.build_errors.is_empty() && !s.units.iter().any(|u| u.broken || u.failed > 0));
                prop_assert!(s.runner_summary && s.anomalies.is_empty());
                prop_assert!(v.reasons.is_empty());
            }
            if s.failing() {
                prop_assert_eq!(v.status, Status::Failed);
            }
            if v.status == Status::Incomplete {
                prop_assert!(!v.reasons.is_empty());
            }
        }
    }

    #[test]
    fn a_signal_or_a_bare_nonzero_exit_is_never_green() {
        let s = Summary { passed: 7, runner_summary: true, ..Summary::default() };
        let v = decide(&Ending::Signaled("SIGKILL".into()), &s);
        assert_eq!(v.status, Status::Incomplete);
        assert!(v.reasons[0].contains("killed by SIGKILL"));
        let v = decide(&Ending::Exited(101), &s);
        assert_eq!(v.status, Status::Incomplete);
        assert!(v.reasons[0].contains("exited with code 101 but reported no failing test"));
        assert_eq!(decide(&Ending::Exited(0), &s).status, Status::Passed);
        let missing = Summary { passed: 7, ..Summary::default() };
        assert_eq!(decide(&Ending::Exited(0), &missing).status, Status::Incomplete);
    }
}
