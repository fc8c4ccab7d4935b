//! Rates as a user writes them, and ramps (`--ramp`, `--ramp-file`, a
//! service's rate changes): each becomes a rate *scale* of the job's
//! planned schedule (see `sluice_pace::timeline`) through the job's
//! [`Nominal`] rate.

use sluice_core::{parse_duration, Nanos};
use std::fmt;
use std::path::Path;
use std::str::FromStr;

/// A rate: in the job's own unit (packets/s for `--pps`, Mbit/s for
/// `--mbps`, a multiplier for recorded timing and profiles), or `xF`,
/// F times the rate the job was planned at.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Rate {
    Own(f64),
    Times(f64),
}

impl FromStr for Rate {
    type Err = String;
    fn from_str(s: &str) -> Result<Rate, String> {
        let t = s.trim();
        let (times, v) = match t.strip_prefix('x') {
            Some(v) => (true, v),
            None => (false, t),
        };
        let value = if v.trim() == "0" {
            0.0
        } else {
            sluice_core::parse_rate(v).map_err(|e| format!("rate {s:?}: {e}"))?
        };
        Ok(if times {
            Rate::Times(value)
        } else {
            Rate::Own(value)
        })
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rate::Own(v) => write!(f, "{v}"),
            Rate::Times(v) => write!(f, "x{v}"),
        }
    }
}

/// The rate a job was planned at, in its own unit; or why it has none.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Nominal {
    Pps(f64),
    Mbps(f64),
    /// Recorded timing sped up by this, or a profile at this scale.
    Multiplier(f64),
    /// No rate to change (top speed; a live source's clients set it).
    None(&'static str),
}

impl Nominal {
    /// The rate scale `r` is of the planned schedule.
    pub fn scale(&self, r: Rate) -> Result<f64, String> {
        match (self, r) {
            (Nominal::None(why), _) => Err(format!("{why}: it has no rate to change")),
            (_, Rate::Times(x)) => Ok(x),
            (Nominal::Pps(p) | Nominal::Mbps(p) | Nominal::Multiplier(p), Rate::Own(v)) => {
                Ok(v / p)
            }
        }
    }

    /// A scale in the job's own unit (None: no rate).
    pub fn own(&self, scale: f64) -> Option<f64> {
        match self {
            Nominal::Pps(p) | Nominal::Mbps(p) | Nominal::Multiplier(p) => Some(p * scale),
            Nominal::None(_) => None,
        }
    }

    /// The unit of [`Rate::Own`] values.
    pub fn unit(&self) -> &'static str {
        match self {
            Nominal::Pps(_) => "pps",
            Nominal::Mbps(_) => "Mbit/s",
            Nominal::Multiplier(_) => "x",
            Nominal::None(_) => "",
        }
    }
}

/// A ramp of the rate from the start of the run.
#[derive(Clone, Debug, PartialEq)]
pub enum Ramp {
    /// `FROM..TO/OVER[:STEPS]`: linear (or in STEPS equal steps) from
    /// FROM to TO over OVER, then TO.
    Linear {
        from: Rate,
        to: Rate,
        over: Nanos,
        steps: Option<u32>,
    },
    /// `T=RATE,T=RATE,…`: linear between points (two at one time are a
    /// step), the last rate after them.
    Points(Vec<(Nanos, Rate)>),
}

/// Points at most in a ramp (a file's lines, steps): bounds what one
/// job may make the engine hold.
pub const MAX_POINTS: usize = 100_000;

impl FromStr for Ramp {
    type Err = String;
    fn from_str(s: &str) -> Result<Ramp, String> {
        if let Some((from, rest)) = s.split_once("..") {
            let (to, rest) = rest
                .split_once('/')
                .ok_or_else(|| format!("ramp {s:?}: FROM..TO/OVER[:STEPS] expected"))?;
            let (over, steps) = match rest.split_once(':') {
                Some((o, n)) => (o, Some(n)),
                None => (rest, None),
            };
            let over = parse_duration(over).map_err(|e| format!("ramp {s:?}: {e}"))?;
            let steps = steps
                .map(|n| {
                    n.parse::<u32>()
                        .ok()
                        .filter(|&n| n > 0 && n as usize <= MAX_POINTS / 2)
                        .ok_or_else(|| {
                            format!("ramp {s:?}: steps {n:?}: 1 to {} expected", MAX_POINTS / 2)
                        })
                })
                .transpose()?;
            return Ok(Ramp::Linear {
                from: from.parse()?,
                to: to.parse()?,
                over,
                steps,
            });
        }
        let mut points = Vec::new();
        for p in s.split(',') {
            let (t, r) = p
                .split_once('=')
                .ok_or_else(|| format!("ramp {s:?}: FROM..TO/OVER or TIME=RATE,… expected"))?;
            let t = parse_duration(t).map_err(|e| format!("ramp point {p:?}: {e}"))?;
            points.push((t, r.parse()?));
        }
        Ramp::points(points).map_err(|e| format!("ramp {s:?}: {e}"))
    }
}

impl fmt::Display for Ramp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ramp::Linear {
                from,
                to,
                over,
                steps,
            } => {
                write!(f, "{from}..{to}/{}ns", over.0)?;
                if let Some(n) = steps {
                    write!(f, ":{n}")?;
                }
                Ok(())
            }
            Ramp::Points(p) => {
                for (i, (t, r)) in p.iter().enumerate() {
                    let sep = if i == 0 { "" } else { "," };
                    write!(f, "{sep}{}ns={r}", t.0)?;
                }
                Ok(())
            }
        }
    }
}

impl Ramp {
    /// Points in time order, at least one, at most [`MAX_POINTS`].
    pub fn points(points: Vec<(Nanos, Rate)>) -> Result<Ramp, String> {
        if points.is_empty() {
            return Err("no points".into());
        }
        if points.len() > MAX_POINTS {
            return Err(format!("{} points; at most {MAX_POINTS}", points.len()));
        }
        if let Some(w) = points.windows(2).find(|w| w[1].0 < w[0].0) {
            return Err(format!(
                "{} comes after {}: times must not go back",
                w[1].0, w[0].0
            ));
        }
        Ok(Ramp::Points(points))
    }

    /// Reads a ramp file: one `TIME RATE` per line (TIME a duration such
    /// as `2.5s`, or plain seconds), `#` comments, blank lines.
    pub fn read(path: &Path) -> Result<Ramp, String> {
        let name = path.display();
        // MAX_POINTS lines of a few dozen bytes; a larger file is not a ramp.
        let text = sluice_sys::input::read_text_capped(path, 8 << 20, "ramp file")
            .map_err(|e| format!("{name}: {e}"))?;
        let mut points = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let at = |e: String| format!("{name}:{}: {e}", i + 1);
            let mut words = line
                .split(|c: char| c.is_whitespace() || c == ',')
                .filter(|w| !w.is_empty());
            let (Some(t), Some(r), None) = (words.next(), words.next(), words.next()) else {
                return Err(at(format!("{line:?}: TIME RATE expected")));
            };
            let t = match t.parse::<f64>() {
                Ok(secs) if secs.is_finite() && secs >= 0.0 => Nanos((secs * 1e9).round() as u64),
                Ok(_) => return Err(at(format!("time {t:?} must be 0 or more"))),
                Err(_) => parse_duration(t).map_err(|e| at(e.to_string()))?,
            };
            points.push((t, r.parse().map_err(at)?));
            if points.len() > MAX_POINTS {
                return Err(at(format!("more than {MAX_POINTS} points")));
            }
        }
        Ramp::points(points).map_err(|e| format!("{name}: {e}"))
    }

    /// The ramp as (offset ns, rate scale) points of a job planned at
    /// `nominal`.
    pub fn scales(&self, nominal: &Nominal) -> Result<Vec<(u64, f64)>, String> {
        match self {
            Ramp::Points(p) => p
                .iter()
                .map(|&(t, r)| Ok((t.0, nominal.scale(r)?)))
                .collect(),
            Ramp::Linear {
                from,
                to,
                over,
                steps,
            } => {
                let (a, b) = (nominal.scale(*from)?, nominal.scale(*to)?);
                let Some(n) = steps else {
                    return Ok(vec![(0, a), (over.0, b)]);
                };
                let n = u64::from(*n);
                let mut out = vec![(0, a)];
                for k in 1..=n {
                    let t = over.0 / n * k + over.0 % n * k / n;
                    let level = a + (b - a) * k as f64 / n as f64;
                    let held = out.last().map_or(a, |p| p.1);
                    out.push((t, held));
                    out.push((t, level));
                }
                Ok(out)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_own_units_or_multiples() {
        assert_eq!("200k".parse(), Ok(Rate::Own(200_000.0)));
        assert_eq!("0".parse(), Ok(Rate::Own(0.0)));
        assert_eq!("x1.5".parse(), Ok(Rate::Times(1.5)));
        assert!("fast".parse::<Rate>().is_err());
        assert!("-3".parse::<Rate>().is_err());
        let n = Nominal::Pps(100_000.0);
        assert_eq!(n.scale(Rate::Own(50_000.0)), Ok(0.5));
        assert_eq!(n.scale(Rate::Times(3.0)), Ok(3.0));
        assert!(Nominal::None("top speed")
            .scale(Rate::Times(2.0))
            .unwrap_err()
            .contains("top speed"));
    }

    #[test]
    fn a_ramp_reads_back_as_written() {
        for s in ["0..200k/5s", "10k..x2/1ms:4", "0s=1k,1s=2k,1s=5k,3s=x0.5"] {
            let r: Ramp = s.parse().unwrap();
            assert_eq!(r.to_string().parse::<Ramp>(), Ok(r.clone()), "{s}");
        }
        for bad in ["0..1k", "0..1k/fast", "1s=1k,0s=1k", "1k", "0..1k/1s:0", ""] {
            assert!(bad.parse::<Ramp>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_stepped_ramp_holds_each_level_then_steps() {
        let r: Ramp = "0..300/3s:3".parse().unwrap();
        let s = r.scales(&Nominal::Pps(100.0)).unwrap();
        let sec = 1_000_000_000;
        assert_eq!(
            s,
            vec![
                (0, 0.0),
                (sec, 0.0),
                (sec, 1.0),
                (2 * sec, 1.0),
                (2 * sec, 2.0),
                (3 * sec, 2.0),
                (3 * sec, 3.0)
            ]
        );
    }

    #[test]
    fn a_ramp_file_names_the_line_it_cannot_read() {
        let dir = std::env::temp_dir().join(format!("sluice-ramp-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good");
        std::fs::write(&good, "# t rate\n0 10k\n2.5 20k # up\n\n3s x3\n").unwrap();
        let r = Ramp::read(&good).unwrap();
        assert_eq!(
            r,
            Ramp::Points(vec![
                (Nanos(0), Rate::Own(10_000.0)),
                (Nanos(2_500_000_000), Rate::Own(20_000.0)),
                (Nanos(3_000_000_000), Rate::Times(3.0)),
            ])
        );
        let bad = dir.join("bad");
        std::fs::write(&bad, "0 10k\n1 fast\n").unwrap();
        let e = Ramp::read(&bad).unwrap_err();
        assert!(e.contains("bad:2:") && e.contains("fast"), "{e}");
        std::fs::write(&bad, "2 1k\n1 1k\n").unwrap();
        assert!(Ramp::read(&bad).unwrap_err().contains("must not go back"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
