//! What an interface's driver offers, asked through the ethtool ioctl
//! (`SIOCETHTOOL`): hardware timestamping and TX checksum offload. Read
//! only; nothing here changes the device.

use std::io;
use std::os::fd::AsRawFd;

const ETHTOOL_GTXCSUM: u32 = 0x16;
const ETHTOOL_GET_TS_INFO: u32 = 0x41;

/// `SOF_TIMESTAMPING_*` bits of `so_timestamping` (linux/net_tstamp.h).
pub const TX_HARDWARE: u32 = 1 << 0;
pub const RX_HARDWARE: u32 = 1 << 2;
pub const RX_SOFTWARE: u32 = 1 << 3;
pub const RAW_HARDWARE: u32 = 1 << 6;

/// `struct ethtool_ts_info`.
#[repr(C)]
#[derive(Default)]
struct TsInfoRaw {
    cmd: u32,
    so_timestamping: u32,
    phc_index: i32,
    tx_types: u32,
    tx_reserved: [u32; 3],
    rx_filters: u32,
    rx_reserved: [u32; 3],
}

/// `struct ethtool_value`.
#[repr(C)]
#[derive(Default)]
struct Value {
    cmd: u32,
    data: u32,
}

/// `struct ifreq` with the data pointer member.
#[repr(C)]
struct IfReqData {
    name: [libc::c_char; libc::IFNAMSIZ],
    data: *mut libc::c_void,
    _pad: [u8; 16],
}

/// Timestamping the driver offers.
#[derive(Clone, Copy, Debug)]
pub struct TsInfo {
    /// `SOF_TIMESTAMPING_*` capability bits.
    pub so_timestamping: u32,
    /// The PTP hardware clock (`/dev/ptpN`), if any.
    pub phc_index: Option<u32>,
}

impl TsInfo {
    pub fn hardware_rx(&self) -> bool {
        self.so_timestamping & (RX_HARDWARE | RAW_HARDWARE) == RX_HARDWARE | RAW_HARDWARE
    }
    pub fn hardware_tx(&self) -> bool {
        self.so_timestamping & (TX_HARDWARE | RAW_HARDWARE) == TX_HARDWARE | RAW_HARDWARE
    }
}

/// `struct hwtstamp_config` (linux/net_tstamp.h).
#[repr(C)]
struct HwTstampConfig {
    flags: i32,
    tx_type: i32,
    rx_filter: i32,
}
const SIOCGHWTSTAMP: libc::c_ulong = 0x89b1;
const SIOCSHWTSTAMP: libc::c_ulong = 0x89b0;
const HWTSTAMP_FILTER_NONE: i32 = 0;
const HWTSTAMP_FILTER_ALL: i32 = 1;

/// Turns on the NIC's receive timestamps for every frame, unless some
/// filter is already on (ptp4l's, say: left as it is). Needs
/// CAP_NET_ADMIN. Returns whether stamping is on afterwards.
pub fn enable_rx_hw_stamps(iface: &str) -> io::Result<bool> {
    let mut cfg = HwTstampConfig {
        flags: 0,
        tx_type: 0,
        rx_filter: 0,
    };
    if ifreq_data(iface, SIOCGHWTSTAMP, &mut cfg).is_ok() && cfg.rx_filter != HWTSTAMP_FILTER_NONE {
        return Ok(true);
    }
    let mut cfg = HwTstampConfig {
        flags: 0,
        tx_type: cfg.tx_type,
        rx_filter: HWTSTAMP_FILTER_ALL,
    };
    ifreq_data(iface, SIOCSHWTSTAMP, &mut cfg)?;
    Ok(cfg.rx_filter != HWTSTAMP_FILTER_NONE)
}

/// Runs one ethtool command whose argument is `arg` (its first u32 is the
/// command number).
fn ethtool<T>(iface: &str, arg: &mut T) -> io::Result<()> {
    ifreq_data(iface, libc::SIOCETHTOOL, arg)
}

/// An interface ioctl whose ifreq carries a pointer to `arg`.
fn ifreq_data<T>(iface: &str, request: libc::c_ulong, arg: &mut T) -> io::Result<()> {
    let mut req = IfReqData {
        name: crate::tap::ifname(iface)?,
        data: (arg as *mut T).cast(),
        _pad: [0; 16],
    };
    let s = crate::tap::ioctl_socket()?;
    // SAFETY: the request (SIOCETHTOOL, SIOC[GS]HWTSTAMP) reads the ifreq
    // (a NUL-terminated name and a pointer) and reads and writes the
    // structure it points to, which is `arg`, a live #[repr(C)] value of
    // the layout the request (or the command number in its first field)
    // names.
    if unsafe { libc::ioctl(s.as_raw_fd(), request, &mut req) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The interface's timestamping capabilities.
pub fn ts_info(iface: &str) -> io::Result<TsInfo> {
    let mut raw = TsInfoRaw {
        cmd: ETHTOOL_GET_TS_INFO,
        ..TsInfoRaw::default()
    };
    ethtool(iface, &mut raw)?;
    Ok(TsInfo {
        so_timestamping: raw.so_timestamping,
        phc_index: u32::try_from(raw.phc_index).ok(),
    })
}

/// Whether the driver computes TX checksums (`tx-checksumming`).
pub fn tx_checksum(iface: &str) -> io::Result<bool> {
    let mut v = Value {
        cmd: ETHTOOL_GTXCSUM,
        data: 0,
    };
    ethtool(iface, &mut v)?;
    Ok(v.data != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_answers_and_a_missing_interface_is_an_error() {
        // lo: software timestamps at least, and checksums it never needs.
        let ts = ts_info("lo").unwrap();
        assert!(ts.so_timestamping & RX_SOFTWARE != 0, "{ts:?}");
        assert!(!ts.hardware_rx());
        assert!(tx_checksum("lo").is_ok());
        assert!(ts_info("sluice-none0").is_err());
        assert!(ts_info("a-name-far-too-long-for-linux").is_err());
    }
}
