//! `--launch-time`: departures timed by the NIC. The pacer would hand each
//! frame to the device a lead time ahead with its launch time, and the
//! device (or an ETF qdisc) would release it then. Two mechanisms exist:
//! `SO_TXTIME` on a raw socket with an ETF qdisc (AF_PACKET), and AF_XDP TX
//! metadata (`XDP_TXMD_FLAGS_LAUNCH_TIME`, Linux 6.15+) in zero-copy mode on
//! a driver with launch-time offload. Neither hand-off is built into sluice
//! yet: [`unavailable`] gives a reason on every platform and sink, so `on`
//! is always refused with it (never faked by software pacing), and `auto`
//! and `off` pace in software.

use crate::{SinkSpec, XdpMode};

/// The user's choice.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LaunchTime {
    /// NIC launch time where sluice and the platform have it (nowhere
    /// yet: the hand-off is not built), software pacing else.
    #[default]
    Auto,
    On,
    Off,
}

sluice_core::named_values!(LaunchTime {
    Auto => "auto",
    On => "on",
    Off => "off",
});

/// True when the kernel has the ETF qdisc (built in or as a module).
fn kernel_has_etf() -> bool {
    if std::path::Path::new("/sys/module/sch_etf").exists() {
        return true;
    }
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let dir = format!("/lib/modules/{}", release.trim());
    ["modules.builtin", "modules.dep"].iter().any(|f| {
        std::fs::read_to_string(format!("{dir}/{f}"))
            .map(|t| t.contains("sch_etf.ko"))
            .unwrap_or(false)
    })
}

/// Why NIC launch time cannot time departures on `to`, or None when it
/// could (none of the platforms sluice sends on today qualifies: the
/// reason names what is missing).
pub fn unavailable(to: &SinkSpec, mode: XdpMode) -> Option<String> {
    match to {
        SinkSpec::AfPacket(i) => Some(if kernel_has_etf() {
            format!("afpacket:{i}: SO_TXTIME hand-off to an ETF qdisc is not built into sluice yet")
        } else {
            format!(
                "afpacket:{i}: this kernel has no ETF qdisc (sch_etf), which SO_TXTIME needs to \
                 hold each frame until its launch time (and sluice does not build the SO_TXTIME \
                 hand-off yet)"
            )
        }),
        SinkSpec::Iface(i) => Some(format!(
            "{i}: neither afpacket's SO_TXTIME hand-off nor AF_XDP launch time is built into \
             sluice yet"
        )),
        SinkSpec::Xdp(i) => Some(match mode {
            XdpMode::Copy => format!(
                "xdp:{i} in copy mode: the kernel hands frames straight to the driver, past any \
                 qdisc, so a launch time is ignored (and sluice does not drive AF_XDP launch time \
                 yet)"
            ),
            _ => format!(
                "xdp:{i}: AF_XDP launch time (XDP_TXMD_FLAGS_LAUNCH_TIME) needs zero-copy on a \
                 driver with launch-time offload (igc, stmmac); sluice does not drive it yet, and \
                 a veth has neither"
            ),
        }),
        other => Some(format!(
            "{other} is not a network interface: launch time needs afpacket: or xdp:"
        )),
    }
}

/// `on` where launch time is unavailable is refused with the reason;
/// `auto` and `off` pace in software.
pub fn check(choice: LaunchTime, to: &SinkSpec, mode: XdpMode) -> Result<(), String> {
    match (choice, unavailable(to, mode)) {
        (LaunchTime::On, Some(why)) => Err(format!(
            "--launch-time on: {why}; use --launch-time auto or off (software pacing)"
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_is_refused_with_the_reason_and_auto_paces_in_software() {
        let x = SinkSpec::Xdp("va".into());
        let e = check(LaunchTime::On, &x, XdpMode::Copy).unwrap_err();
        assert!(e.contains("copy mode") && e.contains("xdp:va"), "{e}");
        assert!(check(LaunchTime::Auto, &x, XdpMode::Copy).is_ok());
        assert!(check(LaunchTime::Off, &x, XdpMode::Auto).is_ok());
        let a = SinkSpec::AfPacket("va".into());
        let e = check(LaunchTime::On, &a, XdpMode::Auto).unwrap_err();
        assert!(e.contains("ETF"), "{e}");
        let e = check(LaunchTime::On, &SinkSpec::Null, XdpMode::Auto).unwrap_err();
        assert!(e.contains("not a network interface"), "{e}");
    }

    /// What docs/CLI.md says: the hand-off is not built, so no sink in any
    /// mode has launch time, whatever the kernel offers.
    #[test]
    fn no_sink_has_launch_time_until_the_hand_off_is_built() {
        for to in [
            SinkSpec::AfPacket("va".into()),
            SinkSpec::Xdp("va".into()),
            SinkSpec::Null,
        ] {
            for mode in [XdpMode::Auto, XdpMode::Copy, XdpMode::ZeroCopy] {
                assert!(unavailable(&to, mode).is_some(), "{to} {mode:?}");
                assert!(check(LaunchTime::On, &to, mode).is_err());
                assert!(check(LaunchTime::Auto, &to, mode).is_ok());
            }
        }
    }
}
