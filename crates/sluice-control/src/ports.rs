//! The ports this host announces: every interface, by AF_PACKET and AF_XDP,
//! and `null` (the worker's registration and the Jobs service both answer
//! with them).

use crate::pb;

/// Interfaces this host can send on: every one in /sys/class/net.
pub(crate) fn ports() -> Vec<pb::Port> {
    let mut out = vec![pb::Port {
        sink: "null".into(),
        mtu: 0,
        mac: String::new(),
        up: true,
    }];
    let Ok(dir) = std::fs::read_dir("/sys/class/net") else {
        return out;
    };
    let mut names: Vec<String> = dir
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for n in names {
        let read = |f: &str| {
            std::fs::read_to_string(format!("/sys/class/net/{n}/{f}"))
                .map(|s| s.trim().to_string())
                .unwrap_or_default()
        };
        let up =
            read("operstate") == "up" || read("flags").ends_with('1') || read("carrier") == "1";
        // Each interface by AF_PACKET and by AF_XDP (whether its driver
        // takes an XDP socket is known only when the job opens it).
        for kind in ["afpacket", "xdp"] {
            out.push(pb::Port {
                sink: format!("{kind}:{n}"),
                mtu: read("mtu").parse().unwrap_or(0),
                mac: read("address"),
                up,
            });
        }
    }
    out
}
