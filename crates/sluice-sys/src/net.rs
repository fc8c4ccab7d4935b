//! Facts about network interfaces, read from sysfs.

use std::io;

/// The MTU of interface `iface` (`/sys/class/net/IFACE/mtu`). The error
/// names the file: a missing interface reads as "cannot read
/// /sys/class/net/eth9/mtu: No such file or directory".
pub fn interface_mtu(iface: &str) -> io::Result<usize> {
    let path = format!("/sys/class/net/{iface}/mtu");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot read {path}: {e}")))?;
    text.trim().parse().map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{path}: unexpected content '{}'", text.trim()),
        )
    })
}

/// The queues the kernel shows for `iface` in one direction (`tx` or
/// `rx`: `/sys/class/net/IFACE/queues/tx-N`).
pub fn queues(iface: &str, direction: &str) -> io::Result<usize> {
    let dir = format!("/sys/class/net/{iface}/queues");
    let prefix = format!("{direction}-");
    let n = std::fs::read_dir(&dir)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot read {dir}: {e}")))?
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .count();
    Ok(n)
}

/// The interfaces of this network namespace, sorted, for an error about
/// one that is not there: "(here: eth0, lo)".
pub fn list_interfaces() -> String {
    let mut names: Vec<String> = std::fs::read_dir("/sys/class/net")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    if names.is_empty() {
        return String::new();
    }
    format!(" (interfaces here: {})", names.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_has_an_mtu_and_a_missing_interface_names_its_file() {
        assert!(interface_mtu("lo").unwrap() >= 1280);
        assert!(queues("lo", "tx").unwrap() >= 1);
        assert!(queues("lo", "rx").unwrap() >= 1);
        assert!(queues("sluice-none0", "tx").is_err());
        let e = interface_mtu("sluice-none0").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert!(e.to_string().contains("/sys/class/net/sluice-none0/mtu"));
    }
}
