//! A field spec read: its name resolved to where it lives in the frame
//! (the layers of its encapsulation included), its value checked.

use super::spec::*;
use crate::encap::{EncapLayer, TunnelSpec, TPID_STAG};

/// Where a named field is and its width.
pub(crate) type Resolve<'a> = dyn Fn(&str) -> Result<(Target, u8), String> + 'a;

/// A spec checked and placed; errors start with the key (`to: …`).
pub(crate) fn field(s: &FieldSpec, named: &Resolve<'_>, seed: u64) -> Result<Field, String> {
    let (target, bits) = match (&s.field, s.offset) {
        (Some(name), None) => {
            if s.bits.is_some() {
                return Err("bits: a named field has its own width; bits go with offset".into());
            }
            named(name).map_err(|e| format!("field: '{name}': {e}"))?
        }
        (None, Some(at)) => {
            if at > 65_535 {
                return Err(format!("offset: {at}: past any frame (at most 65535)"));
            }
            let bits = s
                .bits
                .ok_or("bits: missing (the field's width, 1..64, with offset)")?;
            if !(1..=64).contains(&bits) {
                return Err(format!("bits: {bits}: 1..64 expected"));
            }
            (Target::Fixed(at, usize::from(bits).div_ceil(8), 0), bits)
        }
        _ => return Err("field: give a field name or an offset (and bits)".into()),
    };
    // A VLAN id is 1..4094 (0 and 4095 are reserved, as `encap` says).
    let vlan_id = s.field.as_deref().is_some_and(|n| {
        n.split_once('.').is_some_and(|(layer, key)| {
            key == "id" && matches!(layer.split('[').next(), Some("vlan" | "svlan"))
        })
    });
    let (least, max) = if vlan_id { (1, 4094) } else { (0, mask(bits)) };
    let get = |v: &Value, key: &str| -> Result<u64, String> {
        let x = v.get().map_err(|e| format!("{key}: {e}"))?;
        if vlan_id && !(least..=max).contains(&x) {
            return Err(format!("{key}: {x}: a VLAN id is 1..4094"));
        }
        if x > max {
            return Err(format!(
                "{key}: {x}: over the field's {bits} bits (at most {max})"
            ));
        }
        Ok(x)
    };
    let step = s.step.unwrap_or(1);
    if step == 0 {
        return Err("step: 0: at least 1".into());
    }
    let (from, to, values) = if s.op == Op::List {
        if s.from.is_some() || s.to.is_some() || s.step.is_some() {
            return Err("op: list takes values, not from, to or step".into());
        }
        let vs = s.values.as_ref().ok_or("values: missing (op: list)")?;
        if vs.is_empty() {
            return Err("values: empty".into());
        }
        let values = vs
            .iter()
            .enumerate()
            .map(|(k, v)| get(v, &format!("values[{k}]")))
            .collect::<Result<Vec<_>, _>>()?;
        (0, 0, values)
    } else {
        if s.values.is_some() {
            return Err("values: for op: list; inc, dec and random take from and to".into());
        }
        let from = s.from.as_ref().map_or(Ok(least), |v| get(v, "from"))?;
        let to = s.to.as_ref().map_or(Ok(max), |v| get(v, "to"))?;
        if from > to {
            return Err(format!(
                "from: {from} is above to {to} (a range does not wrap; give from <= to)"
            ));
        }
        (from, to, Vec::new())
    };
    if s.op == Op::Random && s.step.is_some() {
        return Err("step: random draws take no step".into());
    }
    Ok(Field {
        target,
        bits,
        op: s.op,
        from,
        span: to.wrapping_sub(from).wrapping_add(1),
        step,
        values,
        per: s.per,
        seed: s.seed.unwrap_or(seed),
        resum: true,
        hits: Vec::new(),
    })
}

/// A named field: where it is and its width.
pub(crate) fn named(name: &str, layers: &[EncapLayer]) -> Result<(Target, u8), String> {
    let flow = match name {
        "eth.dst" => Some((Target::Front(0, 6, 0), 48)),
        "eth.src" => Some((Target::Front(6, 6, 0), 48)),
        "ip.src" => Some((Target::Ip(IpKey::Src), 64)),
        "ip.dst" => Some((Target::Ip(IpKey::Dst), 64)),
        "ip.ttl" => Some((Target::Ip(IpKey::Ttl), 8)),
        "ip.tos" => Some((Target::Ip(IpKey::Tos), 8)),
        "ip.id" => Some((Target::Ip(IpKey::Id), 16)),
        "sport" => Some((Target::Sport, 16)),
        "dport" => Some((Target::Dport, 16)),
        _ => None,
    };
    if let Some(t) = flow {
        return Ok(t);
    }
    let (layer, key) = name
        .split_once('.')
        .ok_or_else(|| format!("not a field ({NAMES})"))?;
    let (kind, nth) = match layer.split_once('[') {
        Some((k, rest)) => {
            let n = rest
                .strip_suffix(']')
                .and_then(|n| n.parse::<usize>().ok())
                .ok_or_else(|| format!("'{layer}': KIND[N] expected"))?;
            (k, n)
        }
        None => (layer, 0),
    };
    if !matches!(
        kind,
        "vlan" | "svlan" | "mpls" | "vxlan" | "geneve" | "gre" | "gtpu" | "ipip"
    ) {
        return Err(format!("not a field ({NAMES})"));
    }
    let of_kind = |l: &EncapLayer| match l {
        EncapLayer::Vlan { tpid, .. } => {
            (if *tpid == TPID_STAG { "svlan" } else { "vlan" }) == kind
        }
        EncapLayer::Mpls { .. } => kind == "mpls",
        EncapLayer::Tunnel(t) => t.kind.key() == kind,
    };
    let mut found = None;
    let mut seen = 0;
    for (l, at) in crate::encapstack::starts(layers) {
        if of_kind(l) {
            if seen == nth {
                found = Some((l, at));
                break;
            }
            seen += 1;
        }
    }
    let Some((l, start)) = found else {
        return Err(if seen == 0 {
            format!("the encap has no {kind} layer")
        } else {
            format!("the encap has {seen} {kind} layer(s), [{nth}] is past them")
        });
    };
    let unknown = || format!("{kind} has no field '{key}' ({NAMES})");
    Ok(match l {
        EncapLayer::Vlan { .. } => match key {
            "id" => (Target::Front(start, 2, 0), 12),
            "pcp" => (Target::Front(start, 2, 13), 3),
            _ => return Err(unknown()),
        },
        EncapLayer::Mpls { .. } => match key {
            "label" => (Target::Front(start, 4, 12), 20),
            "tc" => (Target::Front(start, 4, 9), 3),
            "ttl" => (Target::Front(start + 3, 1, 0), 8),
            _ => return Err(unknown()),
        },
        EncapLayer::Tunnel(t) => {
            let v6 = t.src.is_ipv6();
            let ipl = if v6 { 40 } else { 20 };
            match (key, t.kind) {
                ("src", _) if v6 => (Target::Front(start + 16, 8, 0), 64),
                ("dst", _) if v6 => (Target::Front(start + 32, 8, 0), 64),
                ("src", _) => (Target::Front(start + 12, 4, 0), 32),
                ("dst", _) => (Target::Front(start + 16, 4, 0), 32),
                ("ttl", _) => (Target::Front(start + if v6 { 7 } else { 8 }, 1, 0), 8),
                ("vni", TunnelSpec::Vxlan { .. } | TunnelSpec::Geneve { .. }) => {
                    (Target::Front(start + ipl + 12, 4, 8), 24)
                }
                ("sport", TunnelSpec::Vxlan { .. } | TunnelSpec::Geneve { .. }) => {
                    (Target::Front(start + ipl, 2, 0), 16)
                }
                ("key", TunnelSpec::Gre { key: Some(_), .. }) => {
                    (Target::Front(start + ipl + 4, 4, 0), 32)
                }
                ("key", TunnelSpec::Gre { key: None, .. }) => {
                    return Err("this gre has no key (give it one to vary it)".into())
                }
                ("teid", TunnelSpec::GtpU { .. }) => (Target::Front(start + ipl + 12, 4, 0), 32),
                ("qfi", TunnelSpec::GtpU { qfi: Some(_), .. }) => {
                    (Target::Front(start + ipl + 8 + 8 + 4 + 2, 1, 0), 6)
                }
                ("qfi", TunnelSpec::GtpU { qfi: None, .. }) => {
                    return Err("this gtpu has no qfi (give it one to vary it)".into())
                }
                _ => return Err(unknown()),
            }
        }
    })
}
