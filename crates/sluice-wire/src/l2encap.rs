//! Layers a generated frame carries between its Ethernet addresses and its
//! IP header, outermost first: 802.1Q customer tags, 802.1ad service tags
//! (QinQ) and MPLS label stacks.
//!
//! In a session or profile (`encap:`, YAML or JSON), each layer is one of
//! `{vlan: ID}`, `{vlan: {id, pcp, dei}}`, `{svlan: ID}`,
//! `{svlan: {id, pcp, dei}}`, `{mpls: LABEL}` or `{mpls: {label, tc, ttl}}`.
//! Tags come before labels (MPLS carries the IP packet itself, so no tag
//! can follow a label); the last label is the bottom of the stack.

use serde::Deserialize;

/// 802.1Q customer tag.
pub const TPID_CTAG: u16 = 0x8100;
/// 802.1ad service tag.
pub const TPID_STAG: u16 = 0x88a8;
/// MPLS unicast.
pub const ETHERTYPE_MPLS: u16 = 0x8847;
/// The most layers a frame carries.
pub const MAX_LAYERS: usize = 8;

/// One layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum L2Layer {
    /// A VLAN tag: TPID, priority (PCP, 0..7), drop eligible, VLAN id
    /// (1..4094).
    Vlan {
        tpid: u16,
        pcp: u8,
        dei: bool,
        vid: u16,
    },
    /// An MPLS label stack entry: label (0..2^20), traffic class (0..7),
    /// TTL.
    Mpls { label: u32, tc: u8, ttl: u8 },
}

/// Checks a stack: its size, each value's range, and tags before labels.
/// Errors name the layer (`encap[2].mpls.label`).
pub fn check(layers: &[L2Layer]) -> Result<(), String> {
    if layers.len() > MAX_LAYERS {
        return Err(format!(
            "encap: {} layers, at most {MAX_LAYERS}",
            layers.len()
        ));
    }
    let mut label_seen = false;
    for (i, l) in layers.iter().enumerate() {
        match *l {
            L2Layer::Vlan { pcp, vid, tpid, .. } => {
                let key = if tpid == TPID_STAG { "svlan" } else { "vlan" };
                if label_seen {
                    return Err(format!(
                        "encap[{i}].{key}: a tag after an MPLS label (MPLS carries the IP packet; put tags first)"
                    ));
                }
                if !(1..=4094).contains(&vid) {
                    return Err(format!("encap[{i}].{key}.id: {vid}: 1..4094 expected"));
                }
                if pcp > 7 {
                    return Err(format!("encap[{i}].{key}.pcp: {pcp}: 0..7 expected"));
                }
            }
            L2Layer::Mpls { label, tc, .. } => {
                label_seen = true;
                if label >= 1 << 20 {
                    return Err(format!(
                        "encap[{i}].mpls.label: {label}: below 1048576 (20 bits) expected"
                    ));
                }
                if tc > 7 {
                    return Err(format!("encap[{i}].mpls.tc: {tc}: 0..7 expected"));
                }
            }
        }
    }
    Ok(())
}

/// The bytes from the EtherType field (offset 12) to the IP header: the
/// tags, the EtherType after them, and the label stack; `ip_type` is the
/// IP packet's EtherType (0x0800 or 0x86dd). Without layers, `ip_type`
/// alone.
pub fn bytes(layers: &[L2Layer], ip_type: u16) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 + 4 * layers.len());
    let labels = layers
        .iter()
        .filter(|l| matches!(l, L2Layer::Mpls { .. }))
        .count();
    for l in layers {
        if let L2Layer::Vlan {
            tpid,
            pcp,
            dei,
            vid,
        } = *l
        {
            out.extend_from_slice(&tpid.to_be_bytes());
            let tci = u16::from(pcp) << 13 | u16::from(dei) << 12 | (vid & 0x0fff);
            out.extend_from_slice(&tci.to_be_bytes());
        }
    }
    out.extend_from_slice(&(if labels > 0 { ETHERTYPE_MPLS } else { ip_type }).to_be_bytes());
    let mut left = labels;
    for l in layers {
        if let L2Layer::Mpls { label, tc, ttl } = *l {
            left -= 1;
            let entry =
                label << 12 | u32::from(tc) << 9 | u32::from(left == 0) << 8 | u32::from(ttl);
            out.extend_from_slice(&entry.to_be_bytes());
        }
    }
    out
}

/// A layer as the command line writes it: `vlan:ID[:PCP[:dei]]`,
/// `svlan:ID[:PCP[:dei]]` or `mpls:LABEL[:TC[:TTL]]` (ranges checked by
/// [`check`]).
impl std::str::FromStr for L2Layer {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let mut it = s.split(':');
        let kind = it.next().unwrap_or_default();
        let parts: Vec<&str> = it.collect();
        let num = |i: usize, what: &str| -> Result<Option<u32>, String> {
            parts
                .get(i)
                .map(|p| {
                    p.parse::<u32>()
                        .map_err(|_| format!("'{s}': {what} '{p}' is not a number"))
                })
                .transpose()
        };
        let small = |v: Option<u32>, what: &str, default: u8| -> Result<u8, String> {
            v.map_or(Ok(default), |v| {
                u8::try_from(v).map_err(|_| format!("'{s}': {what} {v} is above 255"))
            })
        };
        let layer = match kind {
            "vlan" | "svlan" => {
                if parts.is_empty() || parts.len() > 3 || parts.get(2).is_some_and(|d| *d != "dei")
                {
                    return Err(format!("'{s}': {kind}:ID[:PCP[:dei]] expected"));
                }
                let vid = num(0, "the VLAN id")?.unwrap_or(0);
                L2Layer::Vlan {
                    tpid: if kind == "svlan" {
                        TPID_STAG
                    } else {
                        TPID_CTAG
                    },
                    pcp: small(num(1, "the PCP")?, "the PCP", 0)?,
                    dei: parts.len() == 3,
                    vid: u16::try_from(vid)
                        .map_err(|_| format!("'{s}': {kind}.id: {vid}: 1..4094 expected"))?,
                }
            }
            "mpls" => {
                if parts.is_empty() || parts.len() > 3 {
                    return Err(format!("'{s}': mpls:LABEL[:TC[:TTL]] expected"));
                }
                L2Layer::Mpls {
                    label: num(0, "the label")?.unwrap_or(0),
                    tc: small(num(1, "the TC")?, "the TC", 0)?,
                    ttl: small(num(2, "the TTL")?, "the TTL", 64)?,
                }
            }
            _ => return Err(format!("'{s}': vlan:ID, svlan:ID or mpls:LABEL expected")),
        };
        check(std::slice::from_ref(&layer))
            .map_err(|e| format!("'{s}': {}", e.trim_start_matches("encap[0].")))?;
        Ok(layer)
    }
}

impl std::fmt::Display for L2Layer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            L2Layer::Vlan {
                tpid,
                pcp,
                dei,
                vid,
            } => {
                let kind = if tpid == TPID_STAG { "svlan" } else { "vlan" };
                write!(f, "{kind}:{vid}:{pcp}{}", if dei { ":dei" } else { "" })
            }
            L2Layer::Mpls { label, tc, ttl } => write!(f, "mpls:{label}:{tc}:{ttl}"),
        }
    }
}

/// A layer as written in a session or profile.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLayer {
    #[serde(default)]
    vlan: Option<TagSpec>,
    #[serde(default)]
    svlan: Option<TagSpec>,
    #[serde(default)]
    mpls: Option<LabelSpec>,
}

#[derive(Deserialize)]
#[serde(untagged, expecting = "a VLAN id, or {id, pcp, dei}")]
enum TagSpec {
    Id(u16),
    Full(TagFields),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TagFields {
    id: u16,
    #[serde(default)]
    pcp: u8,
    #[serde(default)]
    dei: bool,
}

#[derive(Deserialize)]
#[serde(untagged, expecting = "an MPLS label, or {label, tc, ttl}")]
enum LabelSpec {
    Label(u32),
    Full(LabelFields),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LabelFields {
    label: u32,
    #[serde(default)]
    tc: u8,
    #[serde(default = "ttl64")]
    ttl: u8,
}

fn ttl64() -> u8 {
    64
}

impl<'de> Deserialize<'de> for L2Layer {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let r = RawLayer::deserialize(d)?;
        let tag = |t: TagSpec, tpid| {
            let (vid, pcp, dei) = match t {
                TagSpec::Id(id) => (id, 0, false),
                TagSpec::Full(f) => (f.id, f.pcp, f.dei),
            };
            L2Layer::Vlan {
                tpid,
                pcp,
                dei,
                vid,
            }
        };
        match (r.vlan, r.svlan, r.mpls) {
            (Some(t), None, None) => Ok(tag(t, TPID_CTAG)),
            (None, Some(t), None) => Ok(tag(t, TPID_STAG)),
            (None, None, Some(m)) => Ok(match m {
                LabelSpec::Label(label) => L2Layer::Mpls {
                    label,
                    tc: 0,
                    ttl: 64,
                },
                LabelSpec::Full(f) => L2Layer::Mpls {
                    label: f.label,
                    tc: f.tc,
                    ttl: f.ttl,
                },
            }),
            _ => Err(serde::de::Error::custom(
                "a layer is one of vlan, svlan or mpls",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_then_labels_with_the_bottom_of_stack_on_the_last() {
        let layers = [
            L2Layer::Vlan {
                tpid: TPID_STAG,
                pcp: 5,
                dei: false,
                vid: 100,
            },
            L2Layer::Vlan {
                tpid: TPID_CTAG,
                pcp: 0,
                dei: true,
                vid: 4094,
            },
            L2Layer::Mpls {
                label: 16,
                tc: 3,
                ttl: 64,
            },
            L2Layer::Mpls {
                label: 0xfffff,
                tc: 0,
                ttl: 1,
            },
        ];
        check(&layers).unwrap();
        let b = bytes(&layers, 0x0800);
        assert_eq!(
            b,
            [
                0x88, 0xa8, 0xa0, 100, // S-tag: PCP 5, VID 100
                0x81, 0x00, 0x1f, 0xfe, // C-tag: DEI, VID 4094
                0x88, 0x47, // MPLS
                0x00, 0x01, 0x06, 64, // label 16, TC 3, S 0
                0xff, 0xff, 0xf1, 1, // label 0xfffff, S 1
            ]
        );
        assert_eq!(bytes(&[], 0x86dd), [0x86, 0xdd]);
    }

    #[test]
    fn the_command_line_form_reads_back_what_it_writes() {
        for text in ["vlan:100:0", "svlan:7:5:dei", "mpls:16:3:9"] {
            let l: L2Layer = text.parse().unwrap();
            assert_eq!(l.to_string(), text);
        }
        assert_eq!(
            "mpls:16".parse::<L2Layer>().unwrap(),
            L2Layer::Mpls {
                label: 16,
                tc: 0,
                ttl: 64
            }
        );
        for (bad, says) in [
            ("vlan:0", "vlan.id: 0"),
            ("vlan:5000", "vlan.id: 5000"),
            ("svlan:70000", "svlan.id: 70000"),
            ("vlan:5:9", "vlan.pcp: 9"),
            ("mpls:x", "the label 'x' is not a number"),
            ("gre:1", "vlan:ID, svlan:ID or mpls:LABEL expected"),
            ("vlan", "vlan:ID[:PCP[:dei]] expected"),
        ] {
            let e = bad.parse::<L2Layer>().unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn bad_stacks_are_refused_naming_the_layer() {
        let vlan = |vid| L2Layer::Vlan {
            tpid: TPID_CTAG,
            pcp: 0,
            dei: false,
            vid,
        };
        let mpls = |label| L2Layer::Mpls {
            label,
            tc: 0,
            ttl: 64,
        };
        for (layers, says) in [
            (vec![vlan(0)], "encap[0].vlan.id: 0"),
            (vec![vlan(4095)], "encap[0].vlan.id: 4095"),
            (vec![mpls(1 << 20)], "encap[0].mpls.label: 1048576"),
            (
                vec![mpls(1), vlan(5)],
                "encap[1].vlan: a tag after an MPLS label",
            ),
            (vec![vlan(1); 9], "9 layers"),
        ] {
            let e = check(&layers).unwrap_err();
            assert!(e.contains(says), "{e}");
        }
    }
}
