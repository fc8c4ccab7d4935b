//! `sluice doctor`: what on this machine stands between sluice and its
//! best timing, each finding with what to do about it.

use super::finding::{finding, Finding, Level};
use crate::args::DoctorArgs;
use crate::{exit, Failure};
use sluice_core::{Clock, MonotonicClock};

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// Effective capabilities of this process (CapEff of /proc/self/status).
fn capabilities() -> u64 {
    read("/proc/self/status")
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        })
        .unwrap_or(0)
}

fn caps(out: &mut Vec<Finding>) {
    let eff = capabilities();
    let has = |bit: u32| eff & (1u64 << bit) != 0;
    // Bits from linux/capability.h.
    let (net_admin, net_raw, ipc_lock, sys_nice) = (has(12), has(13), has(14), has(23));
    out.push(finding(
        if net_raw { Level::Ok } else { Level::Fail },
        "raw sockets (CAP_NET_RAW)",
        if net_raw {
            "held".into()
        } else {
            "missing: afpacket:IFACE cannot send".into()
        },
        "run as root, or: sudo setcap cap_net_raw,cap_net_admin+ep $(which sluice)",
    ));
    out.push(finding(
        if net_admin { Level::Ok } else { Level::Warn },
        "CAP_NET_ADMIN",
        if net_admin {
            "held".into()
        } else {
            "missing: qdisc bypass and TAP devices (pace) unavailable".into()
        },
        "sudo setcap cap_net_raw,cap_net_admin+ep $(which sluice)",
    ));
    out.push(finding(
        if sys_nice && ipc_lock {
            Level::Ok
        } else {
            Level::Warn
        },
        "--rt (CAP_SYS_NICE, CAP_IPC_LOCK)",
        if sys_nice && ipc_lock {
            "held".into()
        } else {
            "missing: --rt warns and runs without SCHED_FIFO or mlockall".into()
        },
        "add cap_sys_nice,cap_ipc_lock to the setcap line, or run as root",
    ));
}

fn clock(out: &mut Vec<Finding>) {
    let src = read("/sys/devices/system/clocksource/clocksource0/current_clocksource")
        .unwrap_or_else(|| "unknown".into());
    let good = matches!(src.as_str(), "tsc" | "kvm-clock" | "arch_sys_counter");
    out.push(finding(
        if good { Level::Ok } else { Level::Warn },
        "clock source",
        src.clone(),
        "a slow clock source (hpet, acpi_pm) costs µs per clock read: boot with tsc=reliable or clocksource=tsc if the TSC is stable",
    ));
    // What one reading costs the pacer, for each real clock.
    let per_read = |f: &dyn Fn() -> u64| {
        const N: u32 = 200_000;
        let t = std::time::Instant::now();
        let mut x = 0u64;
        for _ in 0..N {
            x = x.wrapping_add(f());
        }
        std::hint::black_box(x);
        t.elapsed().as_nanos() as f64 / f64::from(N)
    };
    let mono = per_read(&sluice_sys::clock::monotonic_ns);
    let detail = match sluice_sys::tsc::invariant() {
        Ok(()) => format!(
            "monotonic {mono:.1} ns per reading, tsc {:.1} ns (--clock tsc: invariant, usable)",
            per_read(&sluice_sys::tsc::read)
        ),
        Err(why) => format!("monotonic {mono:.1} ns per reading; --clock tsc unavailable: {why}"),
    };
    out.push(finding(Level::Ok, "clock read cost", detail, ""));
}

fn cpus(out: &mut Vec<Finding>) {
    let n = sluice_sys::cpus::online_cpus();
    let isolated = read("/sys/devices/system/cpu/isolated").unwrap_or_default();
    let level = if n >= 2 { Level::Ok } else { Level::Warn };
    let detail = if isolated.is_empty() {
        format!("{n} online, none isolated")
    } else {
        format!("{n} online, isolated: {isolated}")
    };
    out.push(finding(
        level,
        "CPUs",
        detail,
        "a TX thread wants a CPU of its own beside the IO thread: 2 or more CPUs",
    ));
    if n >= 4 && isolated.is_empty() {
        out.push(finding(
            Level::Warn,
            "isolated CPUs",
            "none: the scheduler may put other work on the TX thread's CPU".into(),
            "boot with isolcpus=N nohz_full=N and pass --cpu N",
        ));
    }
    if let Some(g) = read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor") {
        out.push(finding(
            if g == "performance" {
                Level::Ok
            } else {
                Level::Warn
            },
            "CPU frequency governor",
            g,
            "echo performance | sudo tee /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor",
        ));
    }
    if let Some(rt) = read("/proc/sys/kernel/sched_rt_runtime_us") {
        out.push(finding(
            if rt == "-1" { Level::Ok } else { Level::Warn },
            "RT throttling",
            format!("sched_rt_runtime_us = {rt}"),
            "with --rt a spinning TX thread is throttled 50 ms a second unless: sudo sysctl kernel.sched_rt_runtime_us=-1",
        ));
    }
}

/// State, carrier, MTU, speed; true when the interface is there and up
/// (the fast-path probes need it).
fn interface(name: &str, out: &mut Vec<Finding>) -> bool {
    let base = format!("/sys/class/net/{name}");
    let Some(flags) = read(&format!("{base}/flags")) else {
        out.push(finding(
            Level::Fail,
            "interface",
            format!("{name}: not found"),
            "ip link show lists the interfaces",
        ));
        return false;
    };
    let up = u32::from_str_radix(flags.trim_start_matches("0x"), 16).unwrap_or(0) & 1 != 0;
    out.push(finding(
        if up { Level::Ok } else { Level::Fail },
        "interface state",
        format!("{name}: {}", if up { "up" } else { "down" }),
        &format!("ip link set {name} up"),
    ));
    let carrier = read(&format!("{base}/carrier")).as_deref() == Some("1");
    if up {
        out.push(finding(
            if carrier { Level::Ok } else { Level::Fail },
            "carrier",
            format!(
                "{name}: {}",
                if carrier {
                    "present"
                } else {
                    "none: frames go nowhere"
                }
            ),
            "check the cable or the peer (a veth whose peer is down, a TAP nobody reads)",
        ));
    }
    if let Some(mtu) = read(&format!("{base}/mtu")) {
        out.push(finding(
            Level::Ok,
            "MTU",
            format!("{name}: {mtu} (frames up to {mtu} + 14 bytes, + 4 with a VLAN tag)"),
            "",
        ));
    }
    if let Some(speed) = read(&format!("{base}/speed")).filter(|s| !s.starts_with('-')) {
        out.push(finding(
            Level::Ok,
            "link speed",
            format!("{name}: {speed} Mbit/s"),
            "",
        ));
    }
    up
}

/// The platform floor: spin on the clock and count the stalls no sender
/// can hide (interrupts, a hypervisor pausing the VM).
fn floor(secs: f64, out: &mut Vec<Finding>) {
    let clock = MonotonicClock::new();
    let end = clock.now().0 + (secs * 1e9) as u64;
    let (mut n5, mut max, mut lost) = (0u64, 0u64, 0u64);
    let mut prev = clock.now().0;
    loop {
        let now = clock.now().0;
        if now >= end {
            break;
        }
        let gap = now - prev;
        if gap > 5_000 {
            n5 += 1;
            lost += gap;
        }
        max = max.max(gap);
        prev = now;
    }
    let per_s = n5 as f64 / secs;
    let level = if per_s < 10.0 && max < 50_000 {
        Level::Ok
    } else {
        Level::Warn
    };
    out.push(finding(
        level,
        "platform floor",
        format!(
            "{per_s:.0} stalls > 5 µs per second, longest {:.1} µs, {:.3} % of the time: no packet can leave closer to its time than these stalls allow",
            max as f64 / 1e3,
            lost as f64 / (secs * 1e9) * 100.0
        ),
        "a VM's host pauses it (nothing inside can help: use bare metal or a dedicated VM); else pin with --cpu on an isolated CPU",
    ));
}

pub fn run(a: DoctorArgs) -> Result<u8, Failure> {
    let mut out = Vec::new();
    caps(&mut out);
    clock(&mut out);
    cpus(&mut out);
    if let Some(i) = &a.iface {
        if interface(i, &mut out) {
            super::doctor_nic::fast_path(i, &mut out);
        }
    }
    if !a.json {
        eoutln!(
            "sluice: measuring the platform floor for {} s ...",
            a.floor.0 as f64 / 1e9
        );
    }
    floor((a.floor.0 as f64 / 1e9).max(0.05), &mut out);
    let worst = out.iter().map(|f| f.level).max().unwrap_or(Level::Ok);
    if a.json {
        let v = serde_json::json!({ "findings": out, "ok": worst != Level::Fail });
        outln!("{}", crate::json::pretty(crate::json::Kind::Doctor, &v)?)?;
    } else {
        for f in &out {
            let tag = match f.level {
                Level::Ok => "ok  ",
                Level::Warn => "warn",
                Level::Fail => "FAIL",
            };
            outln!("{tag}  {:<34} {}", f.check, f.detail)?;
            if !f.fix.is_empty() {
                outln!("      {:<34} fix: {}", "", f.fix)?;
            }
        }
    }
    // Findings are advice; only what stops sending (no raw sockets, the
    // interface asked about unusable) is a failure of the environment.
    Ok(if worst == Level::Fail {
        exit::FATAL
    } else {
        exit::OK
    })
}
