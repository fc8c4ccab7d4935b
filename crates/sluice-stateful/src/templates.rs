//! Programs from one-line templates, for the usual cases:
//!
//! - `http:size=N[,path=/p][,host=h][,requests=K][,verify=FILE]`: GETs
//!   over one connection (`Connection: close` on the last), each answered
//!   with N bytes; `verify=FILE` checks each body against FILE's length
//!   and digest (a real server's file).
//! - `http-server:size=N`: answers every request of any client (h2load,
//!   wrk) with N bytes until the client closes.
//! - `rr:req=LAW,resp=LAW[,turns=K]`: K requests and responses, their
//!   lengths drawn per connection from laws (`N`, `uniform(A,B)`,
//!   `exp(MEAN)`), the answer's length named in the request's header.
//! - `bulk:size=N[,dir=up|down]`: one long transfer.
//! - `dns[:name=example.com]`: a query for an A record and its answer
//!   over UDP.
//!
//! Every template takes `port=P` (the server's), `weight=W` (its share
//! of connections) and `wait=DURATION` (the client waits this long after
//! the handshake before it speaks: idle connections). Sizes take k, M, G
//! suffixes (powers of 1000).

use crate::program::{
    fnv, http_head, Body, Expect, Program, Proto, Side, SizeLaw, Turn, Verify, FNV_START,
};
use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TemplateError {
    #[error("program {spec:?}: unknown template {name:?} (known: http, http-server, rr, bulk, dns, capture)")]
    Unknown { spec: String, name: String },
    #[error("program {spec:?}: unknown key {key:?} (known here: {known})")]
    UnknownKey {
        spec: String,
        key: String,
        known: &'static str,
    },
    #[error("program {spec:?}: key {key:?}: {why}")]
    BadValue {
        spec: String,
        key: String,
        why: String,
    },
}

fn size(spec: &str, key: &str, v: &str) -> Result<u64, TemplateError> {
    let (num, mult) = match v.as_bytes().last() {
        Some(b'k' | b'K') => (&v[..v.len() - 1], 1_000),
        Some(b'M') => (&v[..v.len() - 1], 1_000_000),
        Some(b'G') => (&v[..v.len() - 1], 1_000_000_000),
        _ => (v, 1),
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| TemplateError::BadValue {
            spec: spec.into(),
            key: key.into(),
            why: format!("{v:?} is not a size (N, Nk, NM, NG)"),
        })
}

fn size32(spec: &str, key: &str, v: &str) -> Result<u32, TemplateError> {
    let n = size(spec, key, v)?;
    u32::try_from(n).map_err(|_| TemplateError::BadValue {
        spec: spec.into(),
        key: key.into(),
        why: format!("{v} is over 4 GB, the most one message may hold"),
    })
}

fn law(spec: &str, key: &str, v: &str) -> Result<SizeLaw, TemplateError> {
    let bad = |why: String| TemplateError::BadValue {
        spec: spec.into(),
        key: key.into(),
        why,
    };
    if let Some(inner) = v.strip_prefix("uniform(").and_then(|r| r.strip_suffix(')')) {
        let (a, b) = inner
            .split_once(',')
            .or_else(|| inner.split_once(';'))
            .ok_or_else(|| bad(format!("{v:?}: uniform(A,B)")))?;
        let (a, b) = (size32(spec, key, a.trim())?, size32(spec, key, b.trim())?);
        if a > b {
            return Err(bad(format!("{v:?}: A is over B")));
        }
        return Ok(SizeLaw::Uniform(a, b));
    }
    if let Some(inner) = v.strip_prefix("exp(").and_then(|r| r.strip_suffix(')')) {
        let m = size(spec, key, inner.trim())? as f64;
        if m <= 0.0 {
            return Err(bad(format!("{v:?}: the mean must be positive")));
        }
        return Ok(SizeLaw::Exp(m));
    }
    Ok(SizeLaw::Fixed(size32(spec, key, v)?))
}

/// Splits `name:k=v,k=v` into the name and its keys; commas inside
/// parentheses belong to the value.
fn split(spec: &str) -> Result<(String, BTreeMap<String, String>), TemplateError> {
    let (name, rest) = spec.split_once(':').unwrap_or((spec, ""));
    let mut keys = BTreeMap::new();
    let mut depth = 0;
    let mut cur = String::new();
    let mut parts = Vec::new();
    for ch in rest.chars() {
        match ch {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(ch);
    }
    if !cur.is_empty() {
        parts.push(cur);
    }
    for p in parts {
        let (k, v) = p.split_once('=').ok_or_else(|| TemplateError::BadValue {
            spec: spec.into(),
            key: p.clone(),
            why: "expected KEY=VALUE".into(),
        })?;
        keys.insert(k.trim().to_string(), v.trim().to_string());
    }
    Ok((name.trim().to_string(), keys))
}

struct Keys<'a> {
    spec: &'a str,
    map: BTreeMap<String, String>,
    known: &'static str,
}

impl Keys<'_> {
    fn take(&mut self, k: &str) -> Option<String> {
        self.map.remove(k)
    }

    fn done(self) -> Result<(), TemplateError> {
        match self.map.into_keys().next() {
            Some(key) => Err(TemplateError::UnknownKey {
                spec: self.spec.into(),
                key,
                known: self.known,
            }),
            None => Ok(()),
        }
    }

    fn num<T: std::str::FromStr>(&mut self, k: &str, default: T) -> Result<T, TemplateError> {
        match self.take(k) {
            None => Ok(default),
            Some(v) => v.parse().map_err(|_| TemplateError::BadValue {
                spec: self.spec.into(),
                key: k.into(),
                why: format!("{v:?} is not a number"),
            }),
        }
    }
}

fn base(name: &str, proto: Proto, port: u16, weight: u32) -> Program {
    Program {
        name: name.into(),
        proto,
        port,
        turns: Vec::new(),
        closer: Side::Client,
        repeat: false,
        data: Arc::from(&b""[..]),
        laws: Vec::new(),
        weight,
        verify: None,
        max_rounds: None,
        http_close: false,
    }
}

fn turn(from: Side, body: Body, expect: Expect) -> Turn {
    Turn {
        from,
        body,
        expect,
        pause_ns: 0,
    }
}

/// A program from a template line (see the module's documentation).
/// `read` reads a file a key names (`verify=`).
pub fn parse(
    spec: &str,
    read: &dyn Fn(&str) -> Result<Vec<u8>, String>,
) -> Result<Program, TemplateError> {
    let (name, map) = split(spec)?;
    let known = match name.as_str() {
        "http" => "size, path, host, requests, verify, port, weight, wait",
        "http-server" => "size, requests, port, weight, wait",
        "rr" => "req, resp, turns, port, weight, wait",
        "bulk" => "size, dir, port, weight, wait",
        "dns" => "name, port, weight, wait",
        _ => {
            return Err(TemplateError::Unknown {
                spec: spec.into(),
                name,
            })
        }
    };
    let mut k = Keys { spec, map, known };
    let default_port = match name.as_str() {
        "dns" => 53,
        "rr" | "bulk" => 9000,
        _ => 80,
    };
    let port: u16 = k.num("port", default_port)?;
    let weight: u32 = k.num("weight", 1)?;
    if weight == 0 {
        return Err(TemplateError::BadValue {
            spec: spec.into(),
            key: "weight".into(),
            why: "0 would never open a connection".into(),
        });
    }
    let p = base(
        spec,
        if name == "dns" {
            Proto::Udp
        } else {
            Proto::Tcp
        },
        port,
        weight,
    );
    let mut p = match name.as_str() {
        "http" => http(&mut k, p, read)?,
        "http-server" => http_server(&mut k, p)?,
        "rr" => rr(&mut k, p)?,
        "bulk" => bulk(&mut k, p)?,
        "dns" => dns(&mut k, p)?,
        _ => unreachable!("names checked above"),
    };
    if let Some(w) = k.take("wait") {
        let d = sluice_core::parse::parse_duration(&w).map_err(|e| TemplateError::BadValue {
            spec: spec.into(),
            key: "wait".into(),
            why: e.to_string(),
        })?;
        // The client's first turn waits: the connection opens, then idles.
        if let Some(t) = p.turns.iter_mut().find(|t| t.from == Side::Client) {
            t.pause_ns = d.0;
        }
    }
    k.done()?;
    Ok(p)
}

impl Keys<'_> {
    fn bad(&self, key: &str, why: impl Into<String>) -> TemplateError {
        TemplateError::BadValue {
            spec: self.spec.into(),
            key: key.into(),
            why: why.into(),
        }
    }

    fn size_or(&mut self, key: &str, default: &str) -> Result<u32, TemplateError> {
        let v = self.take(key).unwrap_or_else(|| default.into());
        size32(self.spec, key, &v)
    }
}

/// `http`: GETs over one connection, each answered with `size` bytes.
fn http(
    k: &mut Keys,
    mut p: Program,
    read: &dyn Fn(&str) -> Result<Vec<u8>, String>,
) -> Result<Program, TemplateError> {
    let sz = k.size_or("size", "1024")?;
    let path = k.take("path").unwrap_or_else(|| format!("/{sz}"));
    let host = k.take("host").unwrap_or_else(|| "sluice".into());
    let requests: u32 = k.num("requests", 1)?;
    if requests == 0 {
        return Err(k.bad("requests", "at least 1"));
    }
    let request = |conn: &str| {
        format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: sluice\r\nAccept: */*\r\nConnection: {conn}\r\n\r\n")
    };
    let (keep, close) = (request("keep-alive"), request("close"));
    let (keep_len, close_len) = (keep.len() as u32, close.len() as u32);
    for i in 0..requests {
        let (start, len) = if i + 1 == requests {
            (keep_len, close_len)
        } else {
            (0, keep_len)
        };
        p.turns.push(turn(
            Side::Client,
            Body::Literal { start, len },
            Expect::Http,
        ));
        p.turns
            .push(turn(Side::Server, Body::HttpResponse(sz), Expect::Http));
    }
    p.data = Arc::from([keep.as_bytes(), close.as_bytes()].concat());
    p.closer = Side::Server;
    if let Some(file) = k.take("verify") {
        let body = read(&file).map_err(|why| k.bad("verify", why))?;
        p.verify = Some(Verify {
            len: body.len() as u64,
            fnv: fnv(FNV_START, &body),
        });
    }
    Ok(p)
}

/// `http-server`: answers any client's requests with `size` bytes.
fn http_server(k: &mut Keys, mut p: Program) -> Result<Program, TemplateError> {
    let sz = k.size_or("size", "1024")?;
    p.turns = vec![
        turn(Side::Client, Body::Pattern(0), Expect::Http),
        turn(Side::Server, Body::HttpResponse(sz), Expect::Http),
    ];
    p.repeat = true;
    p.closer = Side::Client;
    if let Some(r) = k.take("requests") {
        let r: u32 = r
            .parse()
            .ok()
            .filter(|&r| r > 0)
            .ok_or_else(|| k.bad("requests", format!("{r:?}: a count, 1 or more")))?;
        // Closes after r answers, the last saying so when r is 1 (nginx's
        // keepalive_requests).
        p.max_rounds = Some(r);
        p.closer = Side::Server;
        p.http_close = r == 1;
    }
    Ok(p)
}

/// `rr`: requests and answers of lengths drawn per connection.
fn rr(k: &mut Keys, mut p: Program) -> Result<Program, TemplateError> {
    let req = law(
        k.spec,
        "req",
        &k.take("req").unwrap_or_else(|| "100".into()),
    )?;
    let resp = law(
        k.spec,
        "resp",
        &k.take("resp").unwrap_or_else(|| "1000".into()),
    )?;
    let turns: u32 = k.num("turns", 1)?;
    p.laws = vec![req, resp];
    for _ in 0..turns.max(1) {
        let ask = Body::Drawn {
            law: 0,
            answer_law: Some(1),
        };
        p.turns.push(turn(Side::Client, ask, Expect::Sized));
        p.turns
            .push(turn(Side::Server, Body::Answer, Expect::Sized));
    }
    Ok(p)
}

/// `bulk`: one long transfer, up or down.
fn bulk(k: &mut Keys, mut p: Program) -> Result<Program, TemplateError> {
    let sz = k.size_or("size", "1M")?;
    let from = match k.take("dir").as_deref() {
        None | Some("up") => Side::Client,
        Some("down") => Side::Server,
        Some(o) => return Err(k.bad("dir", format!("{o:?}: up or down"))),
    };
    p.turns.push(turn(from, Body::Pattern(sz), Expect::Len(sz)));
    p.closer = from;
    Ok(p)
}

/// `dns`: a query and its answer over UDP.
fn dns(k: &mut Keys, mut p: Program) -> Result<Program, TemplateError> {
    let qname = k.take("name").unwrap_or_else(|| "example.com".into());
    let (query, answer) = dns_pair(k.spec, &qname)?;
    let (ql, al) = (query.len() as u32, answer.len() as u32);
    p.data = Arc::from([query, answer].concat());
    p.turns.push(turn(
        Side::Client,
        Body::Literal { start: 0, len: ql },
        Expect::Datagram,
    ));
    p.turns.push(turn(
        Side::Server,
        Body::Literal { start: ql, len: al },
        Expect::Datagram,
    ));
    Ok(p)
}

/// A DNS query for `name`'s A record and its answer (192.0.2.1, TTL 60).
fn dns_pair(spec: &str, name: &str) -> Result<(Vec<u8>, Vec<u8>), TemplateError> {
    let mut qname = Vec::new();
    for label in name.trim_end_matches('.').split('.') {
        if label.is_empty() || label.len() > 63 {
            return Err(TemplateError::BadValue {
                spec: spec.into(),
                key: "name".into(),
                why: format!("{name:?} is not a domain name"),
            });
        }
        qname.push(label.len() as u8);
        qname.extend_from_slice(label.as_bytes());
    }
    qname.push(0);
    let question = [&qname[..], &[0, 1, 0, 1]].concat();
    let mut q = vec![0x51, 0x1c, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
    q.extend_from_slice(&question);
    let mut a = vec![0x51, 0x1c, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0];
    a.extend_from_slice(&question);
    a.extend_from_slice(&[0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 1]);
    Ok((q, a))
}

/// The head a sluice HTTP server sends, for tests that check it.
pub fn server_head(size: u32) -> String {
    http_head(size, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_files(_: &str) -> Result<Vec<u8>, String> {
        Err("no files here".into())
    }

    #[test]
    fn each_template_builds_and_bad_keys_are_named() {
        for s in [
            "http",
            "http:size=10k,requests=3",
            "http-server:size=1",
            "rr:req=exp(100),resp=uniform(10;20),turns=2",
            "bulk:size=1M,dir=down",
            "dns:name=a.example",
        ] {
            parse(s, &no_files).unwrap_or_else(|e| panic!("{s}: {e}"));
        }
        let e = parse("http:sise=3", &no_files).unwrap_err();
        assert!(e.to_string().contains("\"sise\""), "{e}");
        let e = parse("bulk:size=12Q", &no_files).unwrap_err();
        assert!(e.to_string().contains("size"), "{e}");
        let e = parse("ftp", &no_files).unwrap_err();
        assert!(matches!(e, TemplateError::Unknown { .. }));
        let e = parse("http:verify=/nope", &no_files).unwrap_err();
        assert!(e.to_string().contains("no files here"), "{e}");
        let e = parse("rr:req=uniform(5;2)", &no_files).unwrap_err();
        assert!(e.to_string().contains("A is over B"), "{e}");
    }

    #[test]
    fn an_http_program_asks_to_close_on_its_last_request_only() {
        let p = parse("http:size=5,requests=2,path=/f", &no_files).unwrap();
        let text = |t: &Turn| match t.body {
            Body::Literal { start, len } => {
                String::from_utf8(p.data[start as usize..(start + len) as usize].to_vec()).unwrap()
            }
            _ => panic!(),
        };
        assert_eq!(p.turns.len(), 4);
        assert!(text(&p.turns[0]).contains("Connection: keep-alive\r\n\r\n"));
        assert!(text(&p.turns[2]).starts_with("GET /f HTTP/1.1\r\n"));
        assert!(text(&p.turns[2]).ends_with("Connection: close\r\n\r\n"));
    }
}
