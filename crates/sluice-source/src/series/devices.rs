//! Devices and flows (paper §V-C.2): every record's device ID maps to a
//! UDP/IPv4 flow (source and destination address and port).
//!
//! - A mapping file (CSV or YAML, see docs/FORMATS.md) names flows for devices;
//!   devices it does not name get a deterministic default flow: source
//!   address 10.x.y.z from a hash of the device ID, source port 20000 + copy,
//!   destination from `--dst-ip`/`--dst-port` or the file's defaults.
//! - `--devices N` plays only the first N distinct devices (in order of
//!   first appearance); `--devices xK` plays every device as K simulated
//!   devices, each with its own flow (copy k gets source port 20000 + k).
//!
//! Flow index = device index × copies + copy, so per-flow statistics can be
//! kept in plain vectors.

use super::SeriesError;
use serde::Deserialize;
use sluice_wire::Udp4Flow;
use std::collections::{BTreeMap, HashMap};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::Path;
use std::str::FromStr;

pub type DeviceId = [u8; 16];

/// First source port of default flows.
const BASE_SRC_PORT: u16 = 20_000;
/// Most simulated copies of a device (`--devices xK`): copy k uses source
/// port base + k, and this many stay distinct.
pub const MAX_COPIES: u32 = 40_000;
/// Most flows (devices × copies) a run tracks: flow indexes, per-flow
/// templates and counters are bounded by it.
pub const MAX_DEVICE_FLOWS: u64 = 1 << 26;

/// How many devices to simulate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceCount {
    All,
    /// Only the first N distinct devices.
    Limit(u32),
    /// Each device as K simulated devices.
    Multiply(u32),
}

impl FromStr for DeviceCount {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!("'{s}': expected a device count N or a multiplier xK (1 ≤ K ≤ {MAX_COPIES})")
        };
        if s == "all" {
            Ok(DeviceCount::All)
        } else if let Some(k) = s.strip_prefix('x') {
            match k.parse::<u32>() {
                Ok(k) if (1..=MAX_COPIES).contains(&k) => Ok(DeviceCount::Multiply(k)),
                _ => Err(bad()),
            }
        } else {
            match s.parse::<u32>() {
                Ok(n) if n >= 1 => Ok(DeviceCount::Limit(n)),
                _ => Err(bad()),
            }
        }
    }
}

impl std::fmt::Display for DeviceCount {
    /// `all`, `N` or `xK`, as [`DeviceCount::from_str`] reads it back.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeviceCount::All => f.write_str("all"),
            DeviceCount::Limit(n) => write!(f, "{n}"),
            DeviceCount::Multiply(k) => write!(f, "x{k}"),
        }
    }
}

impl DeviceCount {
    pub fn copies(&self) -> u32 {
        match self {
            DeviceCount::Multiply(k) => *k,
            _ => 1,
        }
    }
}

/// A device ID as text: UTF-8 without the zero padding (hex if not UTF-8).
pub fn device_name(id: &DeviceId) -> String {
    let end = id.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    match std::str::from_utf8(&id[..end]) {
        Ok(s) => s.to_string(),
        Err(_) => id[..end].iter().map(|b| format!("{b:02x}")).collect(),
    }
}

/// The zero-padded ID of a device name; None if longer than 16 bytes.
pub fn device_id(name: &str) -> Option<DeviceId> {
    let b = name.as_bytes();
    if b.is_empty() || b.len() > 16 {
        return None;
    }
    let mut id = [0u8; 16];
    id[..b.len()].copy_from_slice(b);
    Some(id)
}

#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PartialFlow {
    src_ip: Option<Ipv4Addr>,
    dst_ip: Option<Ipv4Addr>,
    src_port: Option<u16>,
    dst_port: Option<u16>,
    /// Only checked: records always travel as UDP.
    #[serde(rename = "proto")]
    _proto: Option<Proto>,
}

#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Proto {
    Udp,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct YamlMap {
    #[serde(default)]
    defaults: PartialFlow,
    #[serde(default)]
    devices: BTreeMap<String, PartialFlow>,
}

/// Device → flow rules.
#[derive(Clone, Debug)]
pub struct FlowMap {
    explicit: HashMap<DeviceId, PartialFlow>,
    defaults: PartialFlow,
    dst_ip: Ipv4Addr,
    dst_port: u16,
    /// Flows leave through kernel sockets: a source address the mapping
    /// leaves open is the kernel's choice (0.0.0.0), not a made-up one.
    kernel_source: bool,
}

impl FlowMap {
    /// Default flows only, to `dst_ip:dst_port`.
    /// Destination of flows a mapping leaves open, unless told otherwise.
    pub const DEFAULT_DST_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
    pub const DEFAULT_DST_PORT: u16 = 9000;

    pub fn new(dst_ip: Ipv4Addr, dst_port: u16) -> FlowMap {
        FlowMap {
            explicit: HashMap::new(),
            defaults: PartialFlow::default(),
            dst_ip,
            dst_port,
            kernel_source: false,
        }
    }

    /// Adds the rules of a mapping file: YAML (`.yaml`/`.yml`) or CSV
    /// (`device_id,src_ip,dst_ip,src_port,dst_port[,proto]`).
    pub fn load(self, path: &Path) -> Result<FlowMap, SeriesError> {
        let file = path.display().to_string();
        let text = crate::text::read_bounded(path, crate::text::MAX_TEXT).map_err(|what| {
            SeriesError::Mapping {
                file: file.clone(),
                what,
            }
        })?;
        self.parse(&file, &text, crate::is_yaml(path))
    }

    /// Adds the rules of mapping text (YAML or CSV); errors name `file`.
    pub fn parse(mut self, file: &str, text: &str, yaml: bool) -> Result<FlowMap, SeriesError> {
        let bad = |what: String| SeriesError::Mapping {
            file: file.to_string(),
            what,
        };
        let rules: Vec<(String, PartialFlow)> = if yaml {
            crate::text::check_depth(text).map_err(bad)?;
            let m: YamlMap = serde_yaml_ng::from_str(text).map_err(|e| bad(e.to_string()))?;
            self.defaults = m.defaults;
            m.devices.into_iter().collect()
        } else {
            parse_csv(text).map_err(bad)?
        };
        for (name, flow) in rules {
            let id = device_id(&name).ok_or_else(|| {
                bad(format!(
                    "device '{name}' is not 1 to 16 bytes long (archive device IDs are 16 bytes)"
                ))
            })?;
            self.explicit.insert(id, flow);
        }
        Ok(self)
    }

    /// For kernel UDP sockets: a source address the mapping leaves open is
    /// the kernel's choice, reported as 0.0.0.0 (ports stay per copy).
    pub fn with_kernel_sources(mut self) -> FlowMap {
        self.kernel_source = true;
        self
    }

    /// The (source, destination) of every rule the mapping names, each
    /// with its name (`device NAME` or `defaults`), in a stable order: what
    /// a sender checks before it sends (a source this host cannot send
    /// from is found then, not as refused datagrams).
    pub fn endpoints(&self) -> Vec<(String, Ipv4Addr, SocketAddrV4)> {
        let mut out = Vec::new();
        let default_src = self.defaults.src_ip.unwrap_or(Ipv4Addr::UNSPECIFIED);
        let default_dst = SocketAddrV4::new(
            self.defaults.dst_ip.unwrap_or(self.dst_ip),
            self.defaults.dst_port.unwrap_or(self.dst_port),
        );
        out.push(("defaults".to_string(), default_src, default_dst));
        let mut ids: Vec<&DeviceId> = self.explicit.keys().collect();
        ids.sort();
        for id in ids {
            let f = self.flow(id, 0);
            let src = Ipv4Addr::from(f.src_ip);
            let src = if self.explicit[id].src_ip.or(self.defaults.src_ip).is_some() {
                src
            } else {
                Ipv4Addr::UNSPECIFIED
            };
            let dst = SocketAddrV4::new(Ipv4Addr::from(f.dst_ip), f.dst_port);
            out.push((format!("device '{}'", device_name(id)), src, dst));
        }
        out
    }

    /// The flow of copy `copy` of a device.
    pub fn flow(&self, id: &DeviceId, copy: u32) -> Udp4Flow {
        let rule = self.explicit.get(id).copied().unwrap_or_default();
        let pick = |a: Option<Ipv4Addr>, b: Option<Ipv4Addr>| a.or(b);
        let h = fnv32(id) & 0x00ff_ffff;
        let default_src = if self.kernel_source {
            Ipv4Addr::UNSPECIFIED
        } else {
            Ipv4Addr::new(10, (h >> 16) as u8, (h >> 8) as u8, (h as u8).max(1))
        };
        let src_port = rule
            .src_port
            .or(self.defaults.src_port)
            .unwrap_or(BASE_SRC_PORT)
            .wrapping_add((copy % MAX_COPIES) as u16);
        Udp4Flow {
            src_ip: pick(rule.src_ip, self.defaults.src_ip)
                .unwrap_or(default_src)
                .octets(),
            dst_ip: pick(rule.dst_ip, self.defaults.dst_ip)
                .unwrap_or(self.dst_ip)
                .octets(),
            src_port,
            dst_port: rule
                .dst_port
                .or(self.defaults.dst_port)
                .unwrap_or(self.dst_port),
        }
    }
}

fn parse_csv(text: &str) -> Result<Vec<(String, PartialFlow)>, String> {
    let mut lines = text.lines().enumerate();
    let header = lines.next().map(|(_, l)| l.trim()).unwrap_or("");
    let cols: Vec<&str> = header.split(',').map(str::trim).collect();
    let want = ["device_id", "src_ip", "dst_ip", "src_port", "dst_port"];
    if cols.len() < 5
        || cols[..5] != want
        || (cols.len() == 6 && cols[5] != "proto")
        || cols.len() > 6
    {
        return Err(format!(
            "line 1: header must be 'device_id,src_ip,dst_ip,src_port,dst_port[,proto]', found '{header}'"
        ));
    }
    let mut out = Vec::new();
    for (i, line) in lines {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let n = i + 1;
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        if f.len() != cols.len() {
            return Err(format!(
                "line {n}: {} columns, expected {}",
                f.len(),
                cols.len()
            ));
        }
        let ip = |c: usize| -> Result<Option<Ipv4Addr>, String> {
            f[c].parse().map(Some).map_err(|_| {
                format!(
                    "line {n}, column {} ({}): '{}' is not an IPv4 address",
                    c + 1,
                    cols[c],
                    f[c]
                )
            })
        };
        let port = |c: usize| -> Result<Option<u16>, String> {
            f[c].parse().map(Some).map_err(|_| {
                format!(
                    "line {n}, column {} ({}): '{}' is not a port",
                    c + 1,
                    cols[c],
                    f[c]
                )
            })
        };
        if f.len() == 6 && !matches!(f[5].to_ascii_lowercase().as_str(), "udp" | "17") {
            return Err(format!(
                "line {n}, column 6 (proto): '{}': records are sent as UDP datagrams, so only udp (17) is possible",
                f[5]
            ));
        }
        out.push((
            f[0].to_string(),
            PartialFlow {
                src_ip: ip(1)?,
                dst_ip: ip(2)?,
                src_port: port(3)?,
                dst_port: port(4)?,
                _proto: Some(Proto::Udp),
            },
        ));
    }
    Ok(out)
}

fn fnv32(b: &[u8]) -> u32 {
    b.iter().fold(0x811c_9dc5u32, |h, &x| {
        (h ^ u32::from(x)).wrapping_mul(0x0100_0193)
    })
}

/// Devices seen so far, in order of first appearance (shared by workers).
#[derive(Debug)]
pub struct DeviceTable {
    count: DeviceCount,
    ids: Vec<DeviceId>,
    index: HashMap<DeviceId, u32>,
    /// Records of devices beyond `--devices N`.
    pub filtered: u64,
}

impl DeviceTable {
    pub fn new(count: DeviceCount) -> Self {
        DeviceTable {
            count,
            ids: Vec::new(),
            index: HashMap::new(),
            filtered: 0,
        }
    }

    /// The device's index, Ok(None) if `--devices N` leaves it out, or an
    /// error once its flows would pass [`MAX_DEVICE_FLOWS`].
    pub fn assign(&mut self, id: &DeviceId) -> Result<Option<u32>, String> {
        if let Some(&i) = self.index.get(id) {
            return Ok(Some(i));
        }
        if let DeviceCount::Limit(n) = self.count {
            if self.ids.len() >= n as usize {
                return Ok(None);
            }
        }
        let flows = (self.ids.len() as u64 + 1) * u64::from(self.copies());
        if flows > MAX_DEVICE_FLOWS {
            return Err(format!(
                "device {} would make {flows} flows with --devices x{}: at most {MAX_DEVICE_FLOWS} flows",
                self.ids.len() + 1,
                self.copies()
            ));
        }
        let i = self.ids.len() as u32;
        self.ids.push(*id);
        self.index.insert(*id, i);
        Ok(Some(i))
    }

    pub fn copies(&self) -> u32 {
        self.count.copies()
    }

    /// The device and copy behind a flow index.
    pub fn flow_device(&self, flow: u32) -> Option<(&DeviceId, u32)> {
        let c = self.copies();
        self.ids.get((flow / c) as usize).map(|d| (d, flow % c))
    }

    pub fn devices(&self) -> usize {
        self.ids.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_counts_parse() {
        assert_eq!("5".parse(), Ok(DeviceCount::Limit(5)));
        assert_eq!("x3".parse(), Ok(DeviceCount::Multiply(3)));
        assert!("0".parse::<DeviceCount>().is_err());
        assert!("x0".parse::<DeviceCount>().is_err());
        assert!("x40000".parse::<DeviceCount>().is_ok());
        assert!("x40001".parse::<DeviceCount>().is_err());
        assert!("x100000000".parse::<DeviceCount>().is_err());
        assert!("many".parse::<DeviceCount>().is_err());
    }

    #[test]
    fn default_flows_are_deterministic_and_distinct_per_copy() {
        let m = FlowMap::new(Ipv4Addr::new(10, 99, 0, 2), 9000);
        let a = device_id("BW.RJOB..EHZ").unwrap();
        let b = device_id("BW.RJOB..EHN").unwrap();
        assert_eq!(m.flow(&a, 0), m.flow(&a, 0));
        assert_ne!(m.flow(&a, 0).src_ip, m.flow(&b, 0).src_ip);
        assert_eq!(m.flow(&a, 3).src_port, 20_003);
        assert_eq!(m.flow(&a, 0).dst_ip, [10, 99, 0, 2]);
        assert_eq!(m.flow(&a, 0).dst_port, 9000);
    }

    /// A file removed when the returned path goes; `name`'s extension is kept.
    fn tmp(name: &str, text: &str) -> tempfile::TempPath {
        let p = tempfile::Builder::new()
            .suffix(name)
            .tempfile()
            .unwrap()
            .into_temp_path();
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn csv_and_yaml_mappings_apply() {
        let csv = tmp(
            "m.csv",
            "device_id,src_ip,dst_ip,src_port,dst_port,proto\nDEV1,10.1.1.1,10.2.2.2,111,222,udp\n",
        );
        let m = FlowMap::new(Ipv4Addr::new(10, 99, 0, 2), 9000)
            .load(&csv)
            .unwrap();
        let f = m.flow(&device_id("DEV1").unwrap(), 0);
        assert_eq!(
            (f.src_ip, f.dst_ip, f.src_port, f.dst_port),
            ([10, 1, 1, 1], [10, 2, 2, 2], 111, 222)
        );
        let yaml = tmp(
            "m.yaml",
            "defaults: {dst_ip: 10.3.3.3, dst_port: 7000}\ndevices:\n  DEV2: {src_ip: 10.4.4.4, src_port: 4000}\n",
        );
        let m = FlowMap::new(Ipv4Addr::new(10, 99, 0, 2), 9000)
            .load(&yaml)
            .unwrap();
        let f = m.flow(&device_id("DEV2").unwrap(), 1);
        assert_eq!(
            (f.src_ip, f.dst_ip, f.src_port, f.dst_port),
            ([10, 4, 4, 4], [10, 3, 3, 3], 4001, 7000)
        );
        let other = m.flow(&device_id("OTHER").unwrap(), 0);
        assert_eq!((other.dst_ip, other.dst_port), ([10, 3, 3, 3], 7000));
    }

    #[test]
    fn bad_mappings_name_file_line_and_field() {
        let csv = tmp(
            "bad.csv",
            "device_id,src_ip,dst_ip,src_port,dst_port\nD,10.1.1,10.2.2.2,1,2\n",
        );
        let e = FlowMap::new(Ipv4Addr::LOCALHOST, 1)
            .load(&csv)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("bad.csv") && e.contains("line 2") && e.contains("src_ip"),
            "{e}"
        );
        let yaml = tmp("bad.yaml", "devices:\n  D: {src_ip: 10.1.1.1, bogus: 1}\n");
        let e = FlowMap::new(Ipv4Addr::LOCALHOST, 1)
            .load(&yaml)
            .unwrap_err()
            .to_string();
        assert!(e.contains("bad.yaml") && e.contains("bogus"), "{e}");
        let long = tmp(
            "long.csv",
            "device_id,src_ip,dst_ip,src_port,dst_port\nABCDEFGHIJKLMNOPQ,10.1.1.1,10.2.2.2,1,2\n",
        );
        let e = FlowMap::new(Ipv4Addr::LOCALHOST, 1)
            .load(&long)
            .unwrap_err()
            .to_string();
        assert!(e.contains("16 bytes"), "{e}");
    }

    #[test]
    fn table_limits_and_multiplies() {
        let mut t = DeviceTable::new(DeviceCount::Limit(2));
        let ids: Vec<DeviceId> = ["A", "B", "C"]
            .iter()
            .map(|n| device_id(n).unwrap())
            .collect();
        assert_eq!(t.assign(&ids[0]), Ok(Some(0)));
        assert_eq!(t.assign(&ids[1]), Ok(Some(1)));
        assert_eq!(t.assign(&ids[2]), Ok(None));
        assert_eq!(t.assign(&ids[0]), Ok(Some(0)));
        let mut t = DeviceTable::new(DeviceCount::Multiply(3));
        assert_eq!(t.assign(&ids[0]), Ok(Some(0)));
        assert_eq!(t.assign(&ids[1]), Ok(Some(1)));
        assert_eq!(t.flow_device(4), Some((&ids[1], 1)));
        assert_eq!(device_name(&ids[2]), "C");
    }

    #[test]
    fn devices_past_the_flow_bound_are_an_error_naming_the_option() {
        let mut t = DeviceTable::new(DeviceCount::Multiply(MAX_COPIES));
        let most = (MAX_DEVICE_FLOWS / u64::from(MAX_COPIES)) as usize;
        for i in 0..most {
            let id = device_id(&format!("d{i}")).unwrap();
            assert_eq!(t.assign(&id), Ok(Some(i as u32)));
        }
        let e = t.assign(&device_id("one-more").unwrap()).unwrap_err();
        assert!(
            e.contains("--devices x40000") && e.contains("at most"),
            "{e}"
        );
    }
}
