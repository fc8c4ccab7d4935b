//! What `sluice doctor` found: one check, its level and what to do.

use serde::Serialize;

#[derive(Serialize, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub(super) enum Level {
    Ok,
    Warn,
    Fail,
}

#[derive(Serialize)]
pub(super) struct Finding {
    pub(super) level: Level,
    pub(super) check: &'static str,
    pub(super) detail: String,
    /// What to do; empty when nothing is to be done.
    pub(super) fix: String,
}

pub(super) fn finding(level: Level, check: &'static str, detail: String, fix: &str) -> Finding {
    Finding {
        level,
        check,
        detail,
        fix: if level == Level::Ok {
            String::new()
        } else {
            fix.to_string()
        },
    }
}
