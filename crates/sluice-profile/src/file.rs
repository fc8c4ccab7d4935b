//! Profile files (YAML or JSON, strict): a stochastic traffic profile.
//!
//! ```yaml
//! seed: 7
//! duration: 5s            # or packets: N
//! rate: 100k              # mean packets/s; or bitrate: 50M (frame bits/s)
//! ipd:  {dist: poisson}   # constant poisson uniform normal lognormal pareto weibull gamma empirical mixture
//! size: {dist: constant, bytes: 64}   # constant uniform normal mix imix empirical
//! packet: {proto: udp4, src: 10.0.0.1, dst: 10.0.0.2, sport: 1024, dport: 9, flows: 1}
//! ```
//!
//! `ipd` spreads: `std` (a duration), `variance` (s²), `cv` (std/mean) or
//! `shape` (pareto, weibull, gamma): at most one. `ipd.mean` (a duration)
//! may replace `rate`. `empirical` laws read `from:` a capture (relative to
//! the profile); an empirical gap law keeps the capture's mean unless a
//! rate is given. A `mixture` lists its parts in `of:`, each `{weight,
//! dist, mean, std|variance|cv|shape}`; it keeps its parts' mean unless a
//! rate is given, which scales every part alike. Errors name the file and
//! the key.

use super::gaps::{GapLaw, Spread};
use super::packet::PacketSpec;
use super::sizes::SizeLaw;
use serde::Deserialize;
use sluice_capture::CaptureReader;
use sluice_core::{parse_count, parse_rate, Nanos};
use sluice_source::text::Time;
use std::path::{Path, PathBuf};

/// Packets an empirical law reads from its capture at most.
pub const MAX_EMPIRICAL: usize = 10_000_000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    #[serde(default)]
    seed: Option<u64>,
    #[serde(default)]
    duration: Option<Time>,
    #[serde(default)]
    packets: Option<Number>,
    #[serde(default)]
    rate: Option<Number>,
    #[serde(default)]
    bitrate: Option<Number>,
    ipd: GapSpec,
    #[serde(default)]
    size: Option<SizeSpec>,
    #[serde(default)]
    packet: PacketSpec,
}

/// A number, or a string with an SI suffix (`100k`).
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
enum Number {
    Float(f64),
    Text(String),
}

impl Number {
    fn rate(&self) -> Result<f64, String> {
        match self {
            Number::Float(v) => Ok(*v),
            Number::Text(s) => parse_rate(s).map_err(|e| e.to_string()),
        }
    }

    fn count(&self) -> Result<u64, String> {
        match self {
            Number::Float(v) if v.fract() == 0.0 && *v >= 0.0 && *v < 1.8e19 => Ok(*v as u64),
            Number::Float(v) => Err(format!("{v} is not a count")),
            Number::Text(s) => parse_count(s).map_err(|e| e.to_string()),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GapSpec {
    dist: String,
    #[serde(default)]
    mean: Option<Time>,
    #[serde(default)]
    std: Option<Time>,
    #[serde(default)]
    variance: Option<f64>,
    #[serde(default)]
    cv: Option<f64>,
    #[serde(default)]
    shape: Option<f64>,
    #[serde(default)]
    from: Option<PathBuf>,
    /// A mixture's parts.
    #[serde(default)]
    of: Option<Vec<PartSpec>>,
}

/// One part of a `mixture` gap law: a weight and a whole law of its own
/// mean (not empirical, not a mixture).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PartSpec {
    weight: f64,
    dist: String,
    mean: Time,
    #[serde(default)]
    std: Option<Time>,
    #[serde(default)]
    variance: Option<f64>,
    #[serde(default)]
    cv: Option<f64>,
    #[serde(default)]
    shape: Option<f64>,
}

impl PartSpec {
    fn spec(&self) -> GapSpec {
        GapSpec {
            dist: self.dist.clone(),
            mean: Some(self.mean),
            std: self.std,
            variance: self.variance,
            cv: self.cv,
            shape: self.shape,
            from: None,
            of: None,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SizeSpec {
    dist: String,
    #[serde(default)]
    bytes: Option<u16>,
    #[serde(default)]
    min: Option<u16>,
    #[serde(default)]
    max: Option<u16>,
    #[serde(default)]
    mean: Option<f64>,
    #[serde(default)]
    std: Option<f64>,
    #[serde(default)]
    variance: Option<f64>,
    #[serde(default)]
    values: Option<Vec<(u16, f64)>>,
    #[serde(default)]
    from: Option<PathBuf>,
}

/// When a profile ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    Duration(Nanos),
    Packets(u64),
}

/// A profile, checked and resolved: laws ready to sample.
#[derive(Clone, Debug)]
pub struct Profile {
    pub name: String,
    pub seed: u64,
    pub stop: Stop,
    pub gap: GapLaw,
    pub size: SizeLaw,
    pub packet: PacketSpec,
    /// The captures its `from:` keys read (resolved paths).
    pub inputs: Vec<PathBuf>,
}

/// Longest mean gap a profile may ask for, ns (a `MonoTime` holds 2^63 ns
/// of a run).
const MAX_GAP_NS: f64 = 9.223_372_036_854_776e18;

/// Packets a whole-sequence analysis (the Fourier plan, a spectrum) may
/// synthesize: about ten seconds of drawing.
pub const MAX_ANALYZED: f64 = (1u64 << 30) as f64;

impl Profile {
    /// Mean packets per second.
    pub fn rate(&self) -> f64 {
        1e9 / self.gap.mean
    }

    /// Packets the sequence is expected to hold.
    pub fn expected_packets(&self) -> f64 {
        match self.stop {
            Stop::Packets(n) => n as f64,
            Stop::Duration(d) => d.0 as f64 / self.gap.mean,
        }
    }

    /// Bytes a Fourier plan (or a spectrum) of this profile takes at
    /// `sample_ns` with `queues` queues, about: per bin the count, its
    /// transform and scratch, its component, and each queue's rate.
    pub fn fourier_bytes(&self, sample_ns: u64, queues: usize) -> f64 {
        let span_ns = self.expected_packets() * self.gap.mean;
        let bins = span_ns / sample_ns.max(1) as f64 + 1.0;
        bins * (8.0 + 16.0 * 3.0 + 48.0 + 8.0 * queues.max(1) as f64)
    }

    /// Refuses a sequence too long to synthesize whole before a run (the
    /// Fourier plan and spectra need every packet's time first).
    pub fn check_analyzable(&self) -> Result<(), ProfileError> {
        let n = self.expected_packets();
        if n > MAX_ANALYZED {
            return Err(ProfileError {
                file: self.name.clone(),
                key: match self.stop {
                    Stop::Packets(_) => "packets".into(),
                    Stop::Duration(_) => "duration".into(),
                },
                what: format!(
                    "about {n:.3e} packets: more than the {MAX_ANALYZED:.3e} a spectrum or a Fourier plan synthesizes before the run (exact mode has no such limit)"
                ),
            });
        }
        Ok(())
    }
}

/// A profile that cannot be used: the file and the key say where.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {key}{}{what}", if key.is_empty() { "" } else { ": " })]
pub struct ProfileError {
    pub file: String,
    pub key: String,
    pub what: String,
}

impl From<ProfileError> for sluice_source::SourceError {
    /// A profile the source refused is the input's fault.
    fn from(e: ProfileError) -> Self {
        sluice_source::SourceError::Input(Box::new(e))
    }
}

impl Profile {
    /// Whether `path` names a profile by its extension (`.yaml`, `.yml`,
    /// `.json`) rather than a capture.
    pub fn is_profile_path(path: &Path) -> bool {
        path.extension().is_some_and(|e| {
            ["yaml", "yml", "json"]
                .iter()
                .any(|x| e.eq_ignore_ascii_case(x))
        })
    }

    /// Reads a profile (YAML for `.yaml`/`.yml`, else JSON), its rate
    /// multiplied by `scale`.
    pub fn load(path: &Path, scale: f64) -> Result<Profile, ProfileError> {
        let file = path.display().to_string();
        let text =
            sluice_source::text::read_bounded(path, 1 << 20).map_err(|what| ProfileError {
                file: file.clone(),
                key: String::new(),
                what,
            })?;
        let dir = path.parent().unwrap_or(Path::new("."));
        Self::parse(&file, &text, sluice_source::is_yaml(path), dir, scale)
    }

    /// Parses profile text; `dir` resolves `from:` paths.
    pub fn parse(
        name: &str,
        text: &str,
        yaml: bool,
        dir: &Path,
        scale: f64,
    ) -> Result<Profile, ProfileError> {
        let err = |key: &str, what: String| ProfileError {
            file: name.to_owned(),
            key: key.to_owned(),
            what,
        };
        sluice_source::text::check_depth(text).map_err(|w| err("", w))?;
        let f: ProfileFile = if yaml {
            serde_yaml_ng::from_str(text).map_err(|e| err("", e.to_string()))?
        } else {
            serde_json::from_str(text).map_err(|e| err("", e.to_string()))?
        };
        // A rate scaled past a million either way is a typo, not a lab's
        // profile (and its gaps leave what sluice can pace).
        if !(scale.is_finite() && (1e-6..=1e6).contains(&scale)) {
            return Err(err(
                "--scale",
                format!("must be between 1e-6 and 1e6, got {scale:e}"),
            ));
        }
        let packet = f.packet.clone();
        check_packet(&packet).map_err(|(k, w)| err(&k, w))?;
        // Every file the profile reads, for the callers' output checks.
        let inputs: Vec<PathBuf> = [
            f.ipd.from.as_ref(),
            f.size.as_ref().and_then(|s| s.from.as_ref()),
        ]
        .into_iter()
        .flatten()
        .map(|p| dir.join(p))
        .collect();
        // Both laws from one FIFO or pipe: the second would wait for a
        // writer that has gone.
        if let [a, b] = &inputs[..] {
            if sluice_capture::read_once(a) && (a == b || same_inode(a, b)) {
                return Err(err(
                    "size.from",
                    format!(
                        "{}: a FIFO, pipe or device can be read once, and ipd.from reads it \
                         too: give a file",
                        b.display()
                    ),
                ));
            }
        }
        let size = match &f.size {
            None => SizeLaw::constant(64.max(packet.header_len())),
            Some(s) => size_law(s, dir, packet.header_len()).map_err(|(k, w)| err(&k, w))?,
        };
        let (lo, _) = size.bounds;
        if lo < packet.header_len() {
            return Err(err(
                "size",
                format!(
                    "a frame of {lo} bytes cannot hold the {} bytes of {} headers",
                    packet.header_len(),
                    packet.proto
                ),
            ));
        }
        let reach = sluice_wire::fields::FieldEngine::new(&packet.fields, &packet.encap, 1)
            .map_or(0, |e| e.min_frame());
        if usize::from(lo) < reach {
            return Err(err(
                "packet.fields",
                format!(
                    "a field by offset ends at byte {reach}, past the smallest frame ({lo} bytes)"
                ),
            ));
        }

        let g = &f.ipd;
        let mean_ns = mean_gap(&f, size.mean).map_err(|(k, w)| err(&k, w))?;
        let gap = gap_law(g, mean_ns, dir).map_err(|(k, w)| err(&k, w))?;
        let gap = if scale == 1.0 {
            gap
        } else {
            rescale(g, gap, scale, dir).map_err(|(k, w)| err(&k, w))?
        };
        let stop = stop_of(&f).map_err(|(k, w)| err(&k, w))?;
        Ok(Profile {
            name: name.to_owned(),
            seed: f.seed.unwrap_or(1),
            stop,
            gap,
            size,
            packet,
            inputs,
        })
    }
}

type KeyError = (String, String);

/// A [`KeyError`] of `key`.
fn key_err(key: &str, what: String) -> KeyError {
    (key.to_owned(), what)
}

/// The packet's protocol, addresses and flows, checked.
fn check_packet(packet: &PacketSpec) -> Result<(), KeyError> {
    sluice_wire::encap::check(&packet.encap).map_err(|e| {
        // "encap[1].mpls.label: …": the key is the packet's.
        let (k, what) = e.split_once(": ").unwrap_or(("encap", &e));
        key_err(&format!("packet.{k}"), what.to_string())
    })?;
    if !matches!(packet.proto.as_str(), "udp4" | "udp6") {
        return Err(key_err(
            "packet.proto",
            format!("'{}': udp4 or udp6", packet.proto),
        ));
    }
    for (key, a) in [("packet.src", packet.src), ("packet.dst", packet.dst)] {
        if a.is_ipv6() != packet.v6() {
            return Err(key_err(
                key,
                format!("{a} is not of the IP version {} needs", packet.proto),
            ));
        }
    }
    if !packet.ipv6_ext.is_empty() {
        if !packet.v6() {
            return Err(key_err(
                "packet.ipv6_ext",
                "IPv6 extension headers are for udp6 packets".into(),
            ));
        }
        sluice_wire::ip6ext::Ipv6ExtStack::new(&packet.ipv6_ext).map_err(|e| {
            let (k, what) = e.split_once(": ").unwrap_or(("ipv6_ext", &e));
            key_err(&format!("packet.{k}"), what.to_string())
        })?;
    }
    if !packet.fields.is_empty() {
        sluice_wire::fields::FieldEngine::new(&packet.fields, &packet.encap, 1).map_err(|e| {
            let (k, what) = e.split_once(": ").unwrap_or(("fields", &e));
            key_err(&format!("packet.{k}"), what.to_string())
        })?;
    }
    if packet.flows == 0 || u64::from(packet.sport) + u64::from(packet.flows) - 1 > 65_535 {
        return Err(key_err(
            "packet.flows",
            format!(
                "{} flows from source port {} do not fit in 1..=65535 ports",
                packet.flows, packet.sport
            ),
        ));
    }
    Ok(())
}

/// The mean gap, ns, from `rate`, `bitrate` or `ipd.mean` (one at most);
/// none when an empirical law gives it.
fn mean_gap(f: &ProfileFile, size_mean: f64) -> Result<Option<f64>, KeyError> {
    // The mean gap: from rate, bitrate, ipd.mean or an empirical law.
    let g = &f.ipd;
    let given: Vec<&str> = [
        ("rate", f.rate.is_some()),
        ("bitrate", f.bitrate.is_some()),
        ("ipd.mean", g.mean.is_some()),
    ]
    .iter()
    .filter(|(_, on)| *on)
    .map(|(k, _)| *k)
    .collect();
    if given.len() > 1 {
        return Err(key_err(
            given[1],
            format!("give one of {}, not both", given.join(" and ")),
        ));
    }
    let positive = |key: &str, v: f64| {
        if v.is_finite() && v > 0.0 {
            Ok(v)
        } else {
            Err(key_err(key, format!("must be positive, got {v}")))
        }
    };
    // A mean gap sluice can pace: at least 1 ns, at most ~292 years.
    let paceable = |key: &str, gap: f64, what: &str| {
        if (1.0..=MAX_GAP_NS).contains(&gap) {
            Ok(gap)
        } else {
            let shown = if gap.is_finite() {
                format!("{gap:.3e} ns")
            } else {
                "beyond any number of ns".into()
            };
            Err(key_err(
                key,
                format!(
                    "{what} gives a mean gap of {shown}: a gap must be between 1 ns \
                         and {MAX_GAP_NS:.3e} ns (2^63 ns)"
                ),
            ))
        }
    };
    Ok(if let Some(r) = &f.rate {
        let r = positive("rate", r.rate().map_err(|w| key_err("rate", w))?)?;
        Some(paceable("rate", 1e9 / r, &format!("{r:e} packets/s"))?)
    } else if let Some(b) = &f.bitrate {
        let b = positive("bitrate", b.rate().map_err(|w| key_err("bitrate", w))?)?;
        Some(paceable(
            "bitrate",
            1e9 * 8.0 * size_mean / b,
            &format!("{b:e} bit/s"),
        )?)
    } else if let Some(m) = g.mean {
        Some(positive("ipd.mean", m.0 .0 as f64)?)
    } else {
        None
    })
}

/// How the profile stops: after a duration or a count of packets.
fn stop_of(f: &ProfileFile) -> Result<Stop, KeyError> {
    Ok(match (f.duration, &f.packets) {
        (Some(_), Some(_)) => {
            return Err(key_err(
                "packets",
                "give duration or packets, not both".into(),
            ))
        }
        (Some(d), None) if d.0 .0 > 0 => Stop::Duration(d.0),
        (Some(_), None) => return Err(key_err("duration", "must be positive".into())),
        (None, Some(p)) => match p.count().map_err(|w| key_err("packets", w))? {
            0 => return Err(key_err("packets", "must be at least 1".into())),
            n => Stop::Packets(n),
        },
        (None, None) => return Err(key_err("duration", "missing (or packets)".into())),
    })
}

fn key(k: &str) -> impl Fn(String) -> KeyError + '_ {
    move |w| (k.to_owned(), w)
}

/// The spread keys an `ipd` entry gives.
fn spread_keys(g: &GapSpec) -> Vec<&'static str> {
    [
        ("ipd.std", g.std.is_some()),
        ("ipd.variance", g.variance.is_some()),
        ("ipd.cv", g.cv.is_some()),
        ("ipd.shape", g.shape.is_some()),
    ]
    .into_iter()
    .filter(|(_, on)| *on)
    .map(|(k, _)| k)
    .collect()
}

/// The spread of a gap law from `std`, `variance` or `cv`, or `shape`.
fn spread(g: &GapSpec, mean: f64) -> Result<Spread, KeyError> {
    let given = spread_keys(g);
    if given.len() > 1 {
        return Err((given[1].into(), format!("give one of {}", given.join(", "))));
    }
    let check = |k: &str, v: f64| {
        if v.is_finite() && v > 0.0 {
            Ok(v)
        } else {
            Err((k.to_owned(), format!("must be positive, got {v}")))
        }
    };
    Ok(if let Some(s) = g.std {
        Spread::Std(check("ipd.std", s.0 .0 as f64)?)
    } else if let Some(v) = g.variance {
        Spread::Std(check("ipd.variance", v)?.sqrt() * 1e9)
    } else if let Some(c) = g.cv {
        Spread::Std(check("ipd.cv", c)? * mean)
    } else if let Some(k) = g.shape {
        Spread::Shape(check("ipd.shape", k)?)
    } else {
        Spread::None
    })
}

/// A `mixture` law from its parts (`ipd.of`), each of its own mean; with
/// `mean_ns` (a rate), every part scaled alike so the mixture has it.
fn mixture_law(g: &GapSpec, mean_ns: Option<f64>, dir: &Path) -> Result<GapLaw, KeyError> {
    if let Some(k) = spread_keys(g).first() {
        return Err((
            (*k).into(),
            "a mixture takes its spread from its parts (ipd.of)".into(),
        ));
    }
    if g.from.is_some() {
        return Err(("ipd.from".into(), "a mixture reads no capture".into()));
    }
    let parts = g.of.as_deref().unwrap_or_default();
    if parts.len() < 2 {
        return Err((
            "ipd.of".into(),
            "a mixture needs at least two parts: [{weight, dist, mean, ...}, ...]".into(),
        ));
    }
    let rekey =
        |i: usize| move |(k, w): KeyError| (k.replacen("ipd", &format!("ipd.of[{i}]"), 1), w);
    let mut laws = Vec::with_capacity(parts.len());
    for (i, p) in parts.iter().enumerate() {
        if matches!(p.dist.as_str(), "mixture" | "empirical") {
            return Err((
                format!("ipd.of[{i}].dist"),
                format!("a part is one of the families, not {}", p.dist),
            ));
        }
        let spec = p.spec();
        let law = gap_law(&spec, Some(p.mean.0 .0 as f64), dir).map_err(rekey(i))?;
        laws.push((p.weight, law));
    }
    let mix = GapLaw::mixture(laws.clone()).map_err(key("ipd.of"))?;
    let Some(m) = mean_ns else {
        return Ok(mix);
    };
    let scaled = parts
        .iter()
        .zip(laws)
        .enumerate()
        .map(|(i, (p, (w, law)))| {
            rescale(&p.spec(), law, mix.mean / m, dir)
                .map(|l| (w, l))
                .map_err(rekey(i))
        })
        .collect::<Result<Vec<_>, _>>()?;
    GapLaw::mixture(scaled).map_err(key("ipd.of"))
}

fn gap_law(g: &GapSpec, mean_ns: Option<f64>, dir: &Path) -> Result<GapLaw, KeyError> {
    if g.dist == "mixture" {
        return mixture_law(g, mean_ns, dir);
    }
    if g.of.is_some() {
        return Err((
            "ipd.of".into(),
            format!("only a mixture has parts, not {}", g.dist),
        ));
    }
    if g.dist == "empirical" {
        if let Some(k) = spread_keys(g).first() {
            return Err((
                (*k).into(),
                "an empirical law takes its spread from the capture".into(),
            ));
        }
        let from = g.from.as_ref().ok_or_else(|| {
            (
                "ipd.from".to_owned(),
                "missing: the capture to draw gaps from".to_owned(),
            )
        })?;
        let (gaps, _) =
            read_capture(&input(dir, from).map_err(key("ipd.from"))?).map_err(key("ipd.from"))?;
        return GapLaw::empirical(gaps, mean_ns).map_err(key("ipd.from"));
    }
    if g.from.is_some() {
        return Err((
            "ipd.from".into(),
            format!("only an empirical law reads a capture, not {}", g.dist),
        ));
    }
    let mean = mean_ns.ok_or_else(|| {
        (
            "rate".to_owned(),
            "missing (or bitrate, or ipd.mean)".to_owned(),
        )
    })?;
    GapLaw::new(&g.dist, mean, spread(g, mean)?).map_err(key(
        if crate::gaps::FAMILIES.contains(&g.dist.as_str()) {
            "ipd"
        } else {
            "ipd.dist"
        },
    ))
}

/// The law `gap`, `scale` times faster: same family; shape laws keep
/// their shape, the others their coefficient of variation.
fn rescale(g: &GapSpec, gap: GapLaw, scale: f64, dir: &Path) -> Result<GapLaw, KeyError> {
    let mean = gap.mean / scale;
    let spread = match g.dist.as_str() {
        "empirical" | "mixture" => return gap_law(g, Some(mean), dir),
        "constant" | "poisson" => Spread::None,
        "uniform" if g.std.is_none() && g.variance.is_none() && g.cv.is_none() => Spread::None,
        "pareto" | "weibull" | "gamma" => Spread::Shape(gap.shape().unwrap_or(1.0)),
        _ => Spread::Std(gap.variance.sqrt() / scale),
    };
    GapLaw::new(&g.dist, mean, spread).map_err(key("ipd"))
}

fn size_law(s: &SizeSpec, dir: &Path, least: u16) -> Result<SizeLaw, KeyError> {
    let allowed: &[&str] = match s.dist.as_str() {
        "constant" => &["bytes"],
        "uniform" => &["min", "max"],
        "normal" => &["mean", "std", "variance"],
        "mix" => &["values"],
        "imix" => &[],
        "empirical" => &["from"],
        other => {
            return Err((
                "size.dist".into(),
                format!(
                "unknown distribution '{other}' (constant, uniform, normal, mix, imix, empirical)"
            ),
            ))
        }
    };
    for (k, on) in [
        ("bytes", s.bytes.is_some()),
        ("min", s.min.is_some()),
        ("max", s.max.is_some()),
        ("mean", s.mean.is_some()),
        ("std", s.std.is_some()),
        ("variance", s.variance.is_some()),
        ("values", s.values.is_some()),
        ("from", s.from.is_some()),
    ] {
        if on && !allowed.contains(&k) {
            return Err((
                format!("size.{k}"),
                format!("does not apply to a {} law", s.dist),
            ));
        }
    }
    let need = |k: &str| {
        (
            format!("size.{k}"),
            format!("missing: a {} law needs it", s.dist),
        )
    };
    match s.dist.as_str() {
        "constant" => Ok(SizeLaw::constant(s.bytes.ok_or_else(|| need("bytes"))?)),
        "uniform" => SizeLaw::uniform(
            s.min.ok_or_else(|| need("min"))?,
            s.max.ok_or_else(|| need("max"))?,
        )
        .map_err(key("size")),
        "normal" => {
            let std = match (s.std, s.variance) {
                (Some(_), Some(_)) => {
                    return Err(("size.variance".into(), "give std or variance".into()))
                }
                (Some(d), None) => d,
                (None, Some(v)) if v >= 0.0 => v.sqrt(),
                (None, Some(v)) => {
                    return Err((
                        "size.variance".into(),
                        format!("must not be negative, got {v}"),
                    ))
                }
                (None, None) => return Err(need("std")),
            };
            SizeLaw::normal(s.mean.ok_or_else(|| need("mean"))?, std, least).map_err(key("size"))
        }
        "mix" => SizeLaw::mix(s.values.as_deref().ok_or_else(|| need("values"))?)
            .map_err(key("size.values")),
        "imix" => Ok(SizeLaw::imix()),
        _ => {
            let from = s.from.as_ref().ok_or_else(|| need("from"))?;
            let (_, sizes) = read_capture(&input(dir, from).map_err(key("size.from"))?)
                .map_err(key("size.from"))?;
            SizeLaw::empirical(sizes).map_err(key("size.from"))
        }
    }
}

pub use sluice_source::confine::confine_inputs;
use sluice_source::confine::input;

/// Whether two existing paths are one file.
fn same_inode(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// The gaps (ns, in order, steps back left out) and frame lengths of a
/// capture, at most [`MAX_EMPIRICAL`] packets.
pub fn read_capture(path: &Path) -> Result<(Vec<f64>, Vec<u16>), String> {
    let mut r = CaptureReader::open(path).map_err(|e| e.to_string())?;
    let (mut gaps, mut sizes) = (Vec::new(), Vec::new());
    let mut prev: Option<u64> = None;
    while let Some(p) = r.next_packet().map_err(|e| e.to_string())? {
        if sizes.len() == MAX_EMPIRICAL {
            break;
        }
        if let Some(t) = prev {
            if p.ts_ns >= t {
                gaps.push((p.ts_ns - t) as f64);
            }
        }
        prev = Some(p.ts_ns);
        sizes.push(u16::try_from(p.orig_len).unwrap_or(u16::MAX));
    }
    if sizes.is_empty() {
        return Err(format!("{}: the capture has no packets", path.display()));
    }
    Ok((gaps, sizes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(ipd: &str, rate: &str) -> Result<Profile, ProfileError> {
        let text = format!(
            "seed: 1\npackets: 10\n{rate}ipd: {ipd}\nsize: {{dist: constant, bytes: 64}}\n"
        );
        Profile::parse("p.yaml", &text, true, Path::new("."), 1.0)
    }

    const SPIKE_BUMP: &str = "{dist: mixture, of: [{weight: 0.7, dist: constant, mean: 10us}, \
                              {weight: 0.3, dist: normal, mean: 100us, std: 10us}]}";

    #[test]
    fn a_mixture_keeps_its_parts_mean_or_takes_the_rate() {
        let own = profile(SPIKE_BUMP, "").unwrap();
        assert_eq!(own.gap.name(), "mixture");
        assert!((own.gap.mean - 37_000.0).abs() < 1e-6, "{}", own.gap.mean);
        // At 50k packets/s every part is scaled alike: 20 µs on average.
        let rated = profile(SPIKE_BUMP, "rate: 50k\n").unwrap();
        assert!(
            (rated.gap.mean - 20_000.0).abs() < 1e-6,
            "{}",
            rated.gap.mean
        );
        let parts = rated.gap.parts();
        assert!((parts[0].1.mean - 10_000.0 * 20.0 / 37.0).abs() < 1e-6);
        assert!((parts[1].1.variance.sqrt() / parts[1].1.mean - 0.1).abs() < 1e-9);
    }

    #[test]
    fn a_bad_mixture_names_its_key() {
        for (ipd, key, says) in [
            ("{dist: mixture, of: [{weight: 1, dist: poisson, mean: 1ms}]}", "ipd.of", "at least two"),
            ("{dist: mixture, std: 1us, of: []}", "ipd.std", "from its parts"),
            (
                "{dist: mixture, of: [{weight: 1, dist: poisson, mean: 1ms}, {weight: 1, dist: empirical, mean: 1ms}]}",
                "ipd.of[1].dist",
                "not empirical",
            ),
            (
                "{dist: mixture, of: [{weight: 1, dist: poisson, mean: 1ms}, {weight: 1, dist: normal, mean: 1ms}]}",
                "ipd.of[1]",
                "std",
            ),
            ("{dist: poisson, of: []}", "ipd.of", "only a mixture"),
        ] {
            let e = profile(ipd, "rate: 1k\n").unwrap_err();
            assert_eq!(e.key, key, "{ipd}: {e}");
            assert!(e.to_string().contains(says), "{ipd}: {e}");
        }
    }
}
