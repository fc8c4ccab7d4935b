//! What a worker checks of a task before any arithmetic on its numbers,
//! and how it names a lease's files when it tells a peer why a job
//! failed (never by the worker's own directories).

use crate::pb;
use std::path::Path;
use tonic::Status;

/// The farthest ahead a task may start, and the longest it may last
/// (its deadline after its start): a day each.
const MAX_AHEAD_NS: i64 = 86_400_000_000_000;
/// The largest clock offset a worker may be told (an hour either way).
const MAX_OFFSET_NS: i64 = 3_600_000_000_000;

/// What a task's numbers must be, checked before any arithmetic on them:
/// a share within its count (a count of 0 is no share), a split the
/// proto names, a start within a day of `now` on the controller's clock
/// (an offset within an hour, so no sum wraps) and a deadline after it.
pub(crate) fn check_task(task: &pb::Task, now: i64) -> Result<(), Status> {
    let bad = |m: String| Err(Status::invalid_argument(m));
    if pb::Split::try_from(task.split).is_err() {
        return bad(format!(
            "split: {}: not a split this worker knows",
            task.split
        ));
    }
    if task.share_count == 0 {
        return bad("share_count: 0: one share at least (1: the whole job)".into());
    }
    if task.share_index >= task.share_count {
        return bad(format!(
            "share_index {}: must be below share_count {}",
            task.share_index, task.share_count
        ));
    }
    if task.offset_ns.unsigned_abs() > MAX_OFFSET_NS as u64 {
        return bad(format!(
            "offset_ns: {}: more than an hour between the clocks",
            task.offset_ns
        ));
    }
    if task.start_ns.saturating_sub(now).unsigned_abs() > MAX_AHEAD_NS as u64 {
        return bad(format!(
            "start_ns: {}: more than a day from now ({now})",
            task.start_ns
        ));
    }
    if task.deadline_ns <= task.start_ns
        || task.deadline_ns.saturating_sub(task.start_ns) > MAX_AHEAD_NS
    {
        return bad(format!(
            "deadline_ns: {}: after start_ns {} and within a day of it",
            task.deadline_ns, task.start_ns
        ));
    }
    Ok(())
}

/// `text` with every path under `dir` shown by its name in `dir` (an
/// upload, the job file), and `dir` itself as "the lease directory".
pub(crate) fn without_dir(text: &str, dir: &Path) -> String {
    let d = dir.display().to_string();
    if d.len() < 2 {
        return text.to_string();
    }
    text.replace(&format!("{d}/"), "")
        .replace(&d, "the lease directory")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_name_the_lease_files_not_the_workers_paths() {
        let dir = Path::new("/var/lib/sluice/leases/l7");
        assert_eq!(
            without_dir(
                "/var/lib/sluice/leases/l7/t.pcap: offset 24: cut short",
                dir
            ),
            "t.pcap: offset 24: cut short"
        );
        assert_eq!(
            without_dir("cannot write /var/lib/sluice/leases/l7", dir),
            "cannot write the lease directory"
        );
        let t = pb::Task {
            share_count: 2,
            share_index: 1,
            start_ns: 1_000,
            deadline_ns: 2_000,
            ..Default::default()
        };
        assert!(check_task(&t, 0).is_ok());
        for bad in [
            pb::Task {
                share_count: 0,
                share_index: 0,
                ..t.clone()
            },
            pb::Task {
                share_index: 2,
                ..t.clone()
            },
            pb::Task {
                split: 99,
                ..t.clone()
            },
            pb::Task {
                start_ns: 9 * 86_400_000_000_000,
                deadline_ns: i64::MAX,
                ..t.clone()
            },
            pb::Task {
                start_ns: i64::MIN,
                ..t.clone()
            },
            pb::Task {
                deadline_ns: 999,
                ..t.clone()
            },
            pb::Task {
                offset_ns: i64::MIN,
                ..t.clone()
            },
        ] {
            assert!(check_task(&bad, 0).is_err(), "{bad:?}");
        }
    }
}
