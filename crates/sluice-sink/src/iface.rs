//! What both raw-frame backends need to know about an interface.

use crate::SinkError;
use std::ffi::CString;
use std::io;

/// The Ethernet header the kernel allows beyond the MTU on a raw socket.
pub(crate) const ETH_HEADER: usize = 14;
/// One 802.1Q tag more, allowed only when the frame's ethertype is 802.1Q
/// (the kernel's `packet_extra_vlan_len_allowed`: not for 802.1ad).
pub(crate) const VLAN_TAG: usize = 4;
pub(crate) const ETH_P_8021Q: [u8; 2] = [0x81, 0x00];

pub(crate) fn read_mtu(iface: &str) -> Result<usize, SinkError> {
    sluice_sys::net::interface_mtu(iface).map_err(|e| match e.kind() {
        std::io::ErrorKind::InvalidData => SinkError::Config(e.to_string()),
        _ => SinkError::os(
            format!(
                "interface '{iface}' not found{}",
                sluice_sys::net::list_interfaces()
            ),
            e,
        ),
    })
}

/// An interface that is administratively down takes no frame: said at
/// the start, not as a send error after the run began.
pub(crate) fn check_up(iface: &str) -> Result<(), SinkError> {
    let path = format!("/sys/class/net/{iface}/flags");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(()); // read_mtu has said what is missing
    };
    let flags = u32::from_str_radix(text.trim().trim_start_matches("0x"), 16).unwrap_or(1);
    if flags & libc::IFF_UP as u32 == 0 {
        return Err(SinkError::os(
            format!("interface '{iface}' is down (bring it up: ip link set {iface} up)"),
            io::Error::from(io::ErrorKind::NetworkDown),
        ));
    }
    Ok(())
}

/// The interface's index, or an error naming it.
pub(crate) fn ifindex(iface: &str) -> Result<u32, SinkError> {
    let name = CString::new(iface)
        .map_err(|_| SinkError::Config(format!("bad interface name '{iface}'")))?;
    // SAFETY: `name` is a valid NUL-terminated string.
    let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
    if index == 0 {
        return Err(SinkError::os(
            format!("interface '{iface}'"),
            io::Error::last_os_error(),
        ));
    }
    Ok(index)
}

/// The kernel's length rule for a raw frame, checked before it is queued:
/// at least an Ethernet header; at most `max_plain` (MTU + the header), or
/// `max_tagged` (one 802.1Q tag more) when the frame is 802.1Q-tagged.
/// Returns the frame's length.
#[inline]
pub(crate) fn fits(
    head: &[u8],
    body: &[u8],
    max_plain: usize,
    max_tagged: usize,
) -> Result<usize, SinkError> {
    let len = head.len() + body.len();
    if len < ETH_HEADER {
        return Err(SinkError::TooShort {
            len,
            min: ETH_HEADER,
        });
    }
    if len <= max_plain {
        return Ok(len);
    }
    let byte = |i: usize| head.get(i).or_else(|| body.get(i - head.len())).copied();
    let tagged = [byte(12), byte(13)] == [Some(ETH_P_8021Q[0]), Some(ETH_P_8021Q[1])];
    let limit = if tagged { max_tagged } else { max_plain };
    if len > limit {
        return Err(SinkError::Oversize { len, limit });
    }
    Ok(len)
}
