//! The command line's text forms of a varied field and of an IPv6
//! extension header (`--field`, `--ipv6-ext`): each writes back as it
//! reads, so that jobs carry them as data.
//!
//! A field is `NAME[,KEY=VALUE…]` or `offset=N,bits=B[,KEY=VALUE…]`, the
//! keys those of a session's `fields` entry (`op`, `from`, `to`, `step`,
//! `values`, `per`, `seed`), a list's values joined by `+`:
//! `vlan.id,from=10,to=19,per=packet`, `sport,op=random,from=1024,to=65535`,
//! `offset=60,bits=16,op=list,values=1+2+0x10`.
//!
//! An extension header is `hbh[:router_alert]`, `dst[:router_alert]`,
//! `routing:ADDR[+ADDR…]` (the segments, the last the final destination)
//! or `frag[:ID]`.

use crate::fields::{FieldSpec, Op, Per, Value};
use crate::ip6ext::{Fragment, Ipv6Ext, Options, Routing};
use std::fmt;
use std::str::FromStr;

impl FromStr for FieldSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let mut f = FieldSpec {
            field: None,
            offset: None,
            bits: None,
            op: Op::default(),
            from: None,
            to: None,
            step: None,
            values: None,
            per: Per::default(),
            seed: None,
        };
        for (i, pair) in s.split(',').enumerate() {
            let Some((k, v)) = pair.split_once('=') else {
                if i == 0 && !pair.is_empty() {
                    f.field = Some(pair.to_string());
                    continue;
                }
                return Err(format!("'{s}': '{pair}' is not KEY=VALUE"));
            };
            let bad = |what: &str| format!("'{s}': {k}: '{v}' is not {what}");
            let num = |what: &str| v.parse::<u64>().map_err(|_| bad(what));
            match k {
                "field" => f.field = Some(v.to_string()),
                "offset" => f.offset = Some(num("a byte offset")? as usize),
                "bits" => f.bits = Some(v.parse().map_err(|_| bad("1..64"))?),
                "op" => {
                    f.op = match v {
                        "inc" => Op::Inc,
                        "dec" => Op::Dec,
                        "random" => Op::Random,
                        "list" => Op::List,
                        _ => return Err(bad("inc, dec, random or list")),
                    }
                }
                "from" => f.from = Some(value(v)),
                "to" => f.to = Some(value(v)),
                "step" => f.step = Some(num("a number")?),
                "values" => f.values = Some(v.split('+').map(value).collect()),
                "per" => {
                    f.per = match v {
                        "flow" => Per::Flow,
                        "packet" => Per::Packet,
                        _ => return Err(bad("flow or packet")),
                    }
                }
                "seed" => f.seed = Some(num("a number")?),
                _ => {
                    return Err(format!(
                        "'{s}': {k}: not a key (field, offset, bits, op, from, to, step, \
                         values, per, seed)"
                    ))
                }
            }
        }
        Ok(f)
    }
}

/// A number as a number, anything else (hex, an address, a MAC) as text
/// for the field engine to read.
fn value(v: &str) -> Value {
    v.parse()
        .map_or_else(|_| Value::Text(v.to_string()), Value::Num)
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Num(n) => write!(f, "{n}"),
            Value::Text(t) => f.write_str(t),
        }
    }
}

impl fmt::Display for FieldSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut sep = "";
        let mut pair = |f: &mut fmt::Formatter<'_>, k: &str, v: &dyn fmt::Display| {
            let r = write!(f, "{sep}{k}={v}");
            sep = ",";
            r
        };
        if let Some(n) = &self.field {
            pair(f, "field", n)?;
        }
        if let Some(o) = self.offset {
            pair(f, "offset", &o)?;
        }
        if let Some(b) = self.bits {
            pair(f, "bits", &b)?;
        }
        let op = match self.op {
            Op::Inc => "inc",
            Op::Dec => "dec",
            Op::Random => "random",
            Op::List => "list",
        };
        pair(f, "op", &op)?;
        if let Some(v) = &self.from {
            pair(f, "from", v)?;
        }
        if let Some(v) = &self.to {
            pair(f, "to", v)?;
        }
        if let Some(s) = self.step {
            pair(f, "step", &s)?;
        }
        if let Some(vs) = &self.values {
            let joined: Vec<String> = vs.iter().map(|v| v.to_string()).collect();
            pair(f, "values", &joined.join("+"))?;
        }
        let per = match self.per {
            Per::Flow => "flow",
            Per::Packet => "packet",
        };
        pair(f, "per", &per)?;
        if let Some(s) = self.seed {
            pair(f, "seed", &s)?;
        }
        Ok(())
    }
}

impl FromStr for Ipv6Ext {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (kind, rest) = s.split_once(':').unwrap_or((s, ""));
        let options = || match rest {
            "" => Ok(Options::default()),
            "router_alert" => Ok(Options { router_alert: true }),
            _ => Err(format!("'{s}': {kind}[:router_alert] expected")),
        };
        Ok(match kind {
            "hbh" => Ipv6Ext::HopByHop(options()?),
            "dst" => Ipv6Ext::Destination(options()?),
            "routing" => Ipv6Ext::Routing(Routing {
                segments: rest
                    .split('+')
                    .map(|a| {
                        a.parse()
                            .map_err(|_| format!("'{s}': '{a}' is not an IPv6 address"))
                    })
                    .collect::<Result<_, _>>()?,
            }),
            "frag" => Ipv6Ext::Fragment(Fragment {
                id: if rest.is_empty() {
                    0
                } else {
                    rest.parse()
                        .map_err(|_| format!("'{s}': the ID '{rest}' is not a 32-bit number"))?
                },
            }),
            _ => {
                return Err(format!(
                    "'{s}': hbh[:router_alert], dst[:router_alert], routing:ADDR[+ADDR…] or \
                     frag[:ID] expected"
                ))
            }
        })
    }
}

impl fmt::Display for Ipv6Ext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let alert = |o: &Options| if o.router_alert { ":router_alert" } else { "" };
        match self {
            Ipv6Ext::HopByHop(o) => write!(f, "hbh{}", alert(o)),
            Ipv6Ext::Destination(o) => write!(f, "dst{}", alert(o)),
            Ipv6Ext::Routing(r) => {
                let segs: Vec<String> = r.segments.iter().map(|a| a.to_string()).collect();
                write!(f, "routing:{}", segs.join("+"))
            }
            Ipv6Ext::Fragment(x) => write!(f, "frag:{}", x.id),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_forms_write_back_as_they_read() {
        for text in [
            "vlan.id,from=10,to=19,per=packet",
            "sport,op=random,from=1024,to=65535,seed=7",
            "offset=60,bits=16,op=list,values=1+2+0x10",
            "ip.src,from=10.8.0.0,to=10.15.255.255,step=3",
            "eth.src,op=list,values=02:00:00:00:00:01+02:00:00:00:00:02",
        ] {
            let f: FieldSpec = text.parse().unwrap();
            let again: FieldSpec = f.to_string().parse().unwrap();
            assert_eq!(f, again, "{text} → {f}");
        }
        let f: FieldSpec = "offset=60,bits=16,op=list,values=1+2+0x10".parse().unwrap();
        assert_eq!(f.offset, Some(60));
        assert_eq!(
            f.values,
            Some(vec![
                Value::Num(1),
                Value::Num(2),
                Value::Text("0x10".into())
            ])
        );
        let f: FieldSpec = "vlan.id,from=10,to=19,per=packet".parse().unwrap();
        assert_eq!(
            (f.field.as_deref(), f.per, f.to),
            (Some("vlan.id"), Per::Packet, Some(Value::Num(19)))
        );
        for text in [
            "hbh",
            "dst:router_alert",
            "routing:2001:db8::1+2001:db8::2",
            "frag:7",
        ] {
            let x: Ipv6Ext = text.parse().unwrap();
            assert_eq!(x.to_string().parse::<Ipv6Ext>().unwrap(), x, "{text}");
        }
        assert_eq!(
            "routing:2001:db8::1+2001:db8::2"
                .parse::<Ipv6Ext>()
                .unwrap(),
            Ipv6Ext::Routing(Routing {
                segments: vec![
                    "2001:db8::1".parse().unwrap(),
                    "2001:db8::2".parse().unwrap()
                ]
            })
        );
    }

    #[test]
    fn bad_text_forms_name_the_key() {
        for (text, says) in [
            ("vlan.id,frm=1", "frm: not a key"),
            ("vlan.id,op=up", "op: 'up' is not inc, dec, random or list"),
            ("offset=x,bits=8", "offset: 'x' is not a byte offset"),
            ("vlan.id,10", "'10' is not KEY=VALUE"),
            ("vlan.id,per=frame", "per: 'frame' is not flow or packet"),
        ] {
            let e = text.parse::<FieldSpec>().unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
        for (text, says) in [
            ("routing:10.0.0.1", "'10.0.0.1' is not an IPv6 address"),
            ("frag:x", "the ID 'x'"),
            ("hbh:pad", "hbh[:router_alert] expected"),
            ("ah", "routing:ADDR"),
        ] {
            let e = text.parse::<Ipv6Ext>().unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
    }
}
