//! A job on the wire: `sluice_job::RemoteJob` to and from the proto
//! message `Job` of a task.
//!
//! Both have the same JSON form (the messages derive serde with the job's
//! names, `build.rs`), so the conversion goes through it and each value is
//! read by the command line's own parser on the way in, with the path of a
//! refused one ("the job: work.replay.ttl: ...").

use crate::pb;
use sluice_job::RemoteJob;
use sluice_profile::{Component, Components, QueueComponents};

/// The message of a job, every field set (a field the job leaves at its
/// default is written with that default).
pub fn to_proto(job: &RemoteJob) -> pb::Job {
    serde_json::to_value(job)
        .and_then(serde_json::from_value)
        .expect("every field of a job has its twin in the proto (test)")
}

/// The job a message asks for: a field not set is the command line's
/// default; a value the command line refuses is refused.
pub fn from_proto(job: &pb::Job) -> Result<RemoteJob, String> {
    if job.work.is_none() {
        return Err("the job names no command (work)".into());
    }
    let doc = serde_json::to_value(job).map_err(|e| format!("the job: {e}"))?;
    RemoteJob::from_value(doc)
}

/// The components of a task (split COMPONENTS) as the message carries
/// them.
pub fn fourier_to_proto(c: &Components) -> pb::Fourier {
    pb::Fourier {
        sample_ns: c.sample_ns,
        bins: c.bins,
        window_bins: c.window_bins,
        seed: c.seed,
        queue_count: c.queue_count,
        available: c.available,
        kept: c.kept,
        queues: c
            .queues
            .iter()
            .map(|q| pb::FourierQueue {
                queue: q.queue,
                window: q.window,
                base: q.base,
                components: q
                    .components
                    .iter()
                    .map(|c| pb::FourierComponent {
                        k: c.k as u32,
                        freq_hz: c.freq_hz,
                        amplitude: c.amplitude,
                        phase: c.phase,
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// The components a task carries, checked (`Components::check`): a
/// value no controller writes is refused by its key.
pub fn fourier_from_proto(f: &pb::Fourier) -> Result<Components, String> {
    let c = Components {
        sample_ns: f.sample_ns,
        bins: f.bins,
        window_bins: f.window_bins,
        seed: f.seed,
        queue_count: f.queue_count,
        available: f.available,
        kept: f.kept,
        queues: f
            .queues
            .iter()
            .map(|q| QueueComponents {
                queue: q.queue,
                window: q.window,
                base: q.base,
                components: q
                    .components
                    .iter()
                    .map(|c| Component {
                        k: c.k as usize,
                        freq_hz: c.freq_hz,
                        amplitude: c.amplitude,
                        phase: c.phase,
                    })
                    .collect(),
            })
            .collect(),
    };
    c.check()?;
    Ok(c)
}

/// A field of a job message that is not set: the serialiser leaves it out,
/// so the job's own default holds.
pub(crate) fn unset<T: Unset>(v: &T) -> bool {
    v.unset()
}

pub(crate) trait Unset {
    fn unset(&self) -> bool;
}

impl<T> Unset for Option<T> {
    fn unset(&self) -> bool {
        self.is_none()
    }
}

impl<T> Unset for Vec<T> {
    fn unset(&self) -> bool {
        self.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;
    use sluice_job::Work;
    use std::collections::BTreeSet;

    /// A job of each command with every option away from its default
    /// (values as a user writes them), so no field can be missing from
    /// the proto without this failing.
    fn every_field() -> Vec<RemoteJob> {
        let send = r#""send":{"limit":"1M","duration":"2s","threads":2,"cpu":"0-1",
            "rt":true,"tx_mode":"sendmmsg","csum_offload":true,"xdp_mode":"copy",
            "tx_queues":"2,3","launch_time":"off","rx_stamp":"append",
            "clock":"virtual","drift":"1ms","late_threshold":"5us","spin":"50us",
            "loss":"2.5","loss_seed":7,"ramp":"0..x2/5s:4","bursts":"100x3/2ms",
            "planner_cpu":"1","numa_node":0}"#;
        let no_pin = r#""send":{"no_pin":true}"#;
        [
            format!(
                r#"{{"work":{{"replay":{{"multiplier":2.5,"topspeed":false,"loop":3,
                "loopdelay_ms":4,
                "max_gap":"7ms","payload":"zero","src_mac":"02:00:00:00:00:0a",
                "dst_mac":"02:00:00:00:00:0b","enet_dmac":["02:00:00:00:00:09"],
                "enet_smac":["02:00:00:00:00:08"],
                "srcipmap":["10.0.0.0/8:192.168.0.0/16"],
                "dstipmap":["10.1.0.0/16:10.2.0.0/16"],"portmap":["80:8080"],
                "ttl":"-2","tos":8,"seed":9,
                "unique_ip":true,"enet_vlan":"add","enet_vlan_tag":10,
                "enet_vlan_pri":3,"enet_vlan_cfi":1,"enet_vlan_proto":"802.1ad",
                "mtu_trunc":true,"mtu":1400,"fixlen":"pad","fixcsum":true,
                "tunnel":"inner","skip_unsupported":true}}}},{send}}}"#
            ),
            r#"{"work":{"replay":{"pps":"10k","loopdelay":"1ms","preload":true,"preload_max":6,"pnat":["10.3.0.0/16:10.4.0.0/16"]}}}"#.into(),
            r#"{"work":{"replay":{"mbps":"5","loopdelay_ns":5}},"send":{"no_pin":true}}"#.into(),
            format!(
                r#"{{"work":{{"flows":{{"planner":"stochastic","planners":2,"seed":3,
                "stamp":true,"topspeed":true,"src_mac":"02:00:00:00:00:0a",
                "dst_mac":"02:00:00:00:00:0b"}}}},{no_pin}}}"#
            ),
            r#"{"work":{"series":{"opts":{"tight_loop":"1ms",
                "ooo_prob":"0.5","ooo_window":"3ms","ooo_threads":2,"devices":"4",
                "device_filter":["a","b"],"dst_ip":"10.9.0.1",
                "dst_port":99,"payload":"record","mtu":1000,
                "src_mac":"02:00:00:00:00:0a","dst_mac":"02:00:00:00:00:0b",
                "seed":5,"buffer_size":"1M","workers":2,"queues":3,"preload":true,
                "preload_max":100,"rescue_after":"5us","no_rescue":true},
                "map":"m.csv"}}}"#
                .into(),
            r#"{"work":{"series":{"opts":{"fast_forward":2.0,"max_gap":"2ms","device_steps":"2s=16"}}}}"#
                .into(),
            r#"{"work":{"profile":{"mode":"fourier","select":{"sample":"2ms",
                "keep":4},"queues":2,"frame":{"scale":0.5,"seed":3,
                "src_mac":"02:00:00:00:00:0a","dst_mac":"02:00:00:00:00:0b"}}}}"#
                .into(),
            r#"{"work":{"profile":{"select":{"cutoff":0.5,"window":"4ms"}}}}"#.into(),
        ]
        .iter()
        .map(|text| RemoteJob::from_json(text).unwrap_or_else(|e| panic!("{e}: {text}")))
        .collect()
    }

    /// The names a serde type takes, read from the types themselves: an
    /// unknown key's refusal lists every field (`deny_unknown_fields`).
    fn serde_fields<T: serde::de::DeserializeOwned + std::fmt::Debug>() -> BTreeSet<String> {
        let e = serde_json::from_str::<T>(r#"{"\u0001": 0}"#)
            .unwrap_err()
            .to_string();
        let list = e
            .split("expected one of ")
            .nth(1)
            .or_else(|| e.split("expected ").nth(1))
            .unwrap_or_else(|| panic!("{e}"));
        list.split(" at line")
            .next()
            .unwrap()
            .split(", ")
            .map(|f| f.trim().trim_matches('`').to_string())
            .collect()
    }

    /// The fields of a message of worker.proto, read from the file.
    fn proto_fields(message: &str) -> BTreeSet<String> {
        let text = include_str!("../../../proto/sluice/control/v1/worker.proto");
        let body = text
            .split(&format!("\nmessage {message} {{\n"))
            .nth(1)
            .unwrap_or_else(|| panic!("no message {message}"))
            .split("\n}")
            .next()
            .unwrap();
        body.lines()
            .map(str::trim)
            .filter(|l| !l.starts_with("//") && l.contains(" = "))
            .map(|l| {
                let left = l.split(" = ").next().unwrap();
                left.split_whitespace().last().unwrap().to_string()
            })
            .collect()
    }

    /// One list of options: each options message of the proto has
    /// exactly the fields of its job type, both lists read from their
    /// sources (the types' serde names, the .proto file), so an option
    /// added to one and not the other fails here by name.
    #[test]
    fn each_options_message_has_exactly_its_types_fields() {
        use sluice_job::{flows, profile, replay, series, SendOpts};
        let pairs = [
            ("SendOptions", serde_fields::<SendOpts>()),
            ("ReplayOptions", serde_fields::<replay::ReplayOpts>()),
            ("FlowsOptions", serde_fields::<flows::FlowsOpts>()),
            ("SeriesOptions", serde_fields::<series::SeriesOpts>()),
            ("ProfileOptions", serde_fields::<profile::ProfileOpts>()),
            ("SelectOptions", serde_fields::<profile::SelectOpts>()),
            ("FrameOptions", serde_fields::<profile::FrameOpts>()),
        ];
        for (message, typed) in pairs {
            assert!(typed.len() >= 3, "{message}: {typed:?}");
            let proto = proto_fields(message);
            let only_type: Vec<_> = typed.difference(&proto).collect();
            let only_proto: Vec<_> = proto.difference(&typed).collect();
            assert!(
                only_type.is_empty() && only_proto.is_empty(),
                "{message}: fields of the type missing from the proto {only_type:?}, \
                 fields of the proto the type lacks {only_proto:?}"
            );
        }
    }

    #[test]
    fn every_field_of_a_job_crosses_the_wire_unchanged() {
        for job in every_field() {
            let bytes = to_proto(&job).encode_to_vec();
            let back = pb::Job::decode(bytes.as_slice()).unwrap();
            assert_eq!(from_proto(&back), Ok(job.clone()), "{}", job.to_json());
        }
        // Every field away from its default, every command, some fields
        // more than once: the tests of each kind reach all of them.
        let kinds: Vec<&str> = every_field().iter().map(|j| j.work.command()).collect();
        assert_eq!(
            kinds,
            ["replay", "replay", "replay", "flows", "series", "series", "profile", "profile"]
        );
    }

    #[test]
    fn a_field_not_set_is_the_command_lines_default() {
        let job = pb::Job {
            work: Some(pb::job::Work::Replay(pb::ReplayOptions {
                pps: Some("2k".into()),
                ..Default::default()
            })),
            send: None,
        };
        let got = from_proto(&job).unwrap();
        let Work::Replay(o) = &got.work else {
            panic!("{got:?}")
        };
        assert_eq!((o.pps, o.loops, o.mtu), (Some(2000.0), 1, 1500));
        assert_eq!(got.send, sluice_job::SendOpts::default());
        let e = from_proto(&pb::Job::default()).unwrap_err();
        assert!(e.contains("names no command"), "{e}");
    }

    #[test]
    fn values_the_command_line_refuses_are_refused_with_their_path() {
        for (work, says) in [
            (
                pb::job::Work::Replay(pb::ReplayOptions {
                    ttl: Some("++1".into()),
                    ..Default::default()
                }),
                "work.replay.ttl",
            ),
            (
                pb::job::Work::Replay(pb::ReplayOptions {
                    mtu: Some(70_000),
                    ..Default::default()
                }),
                "work.replay.mtu",
            ),
            (
                pb::job::Work::Series(pb::SeriesWork {
                    opts: None,
                    map: Some("/etc/shadow".into()),
                }),
                "plain name",
            ),
            (
                pb::job::Work::Profile(pb::ProfileOptions {
                    frame: Some(pb::FrameOptions {
                        src_mac: Some("zz".into()),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                "work.profile.frame.src_mac",
            ),
        ] {
            let job = pb::Job {
                work: Some(work),
                send: None,
            };
            let e = from_proto(&job).unwrap_err();
            assert!(e.contains(says), "{says}: {e}");
        }
    }
}
