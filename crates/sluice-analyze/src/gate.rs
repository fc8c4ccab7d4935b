//! `--fail-if`: thresholds on the figures of an analysis, so that a CI job
//! can gate on a run. A condition names a figure of the `--json` output by
//! its name (`p99_ns`) or dotted path (`comparison.gap_err.percentiles.p99_ns`); a name
//! found more than once is taken from the comparison with the reference
//! (the judgement), and must otherwise be unique. A figure that could not
//! be computed (JSON `null`) crosses every threshold: a gate never passes
//! on a value it does not have.

use serde_json::Value;
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Op {
    Gt,
    Ge,
    Lt,
    Le,
    Eq,
}

impl Op {
    fn text(self) -> &'static str {
        match self {
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Eq => "==",
        }
    }

    fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Gt => a > b,
            Op::Ge => a >= b,
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Eq => a == b,
        }
    }
}

/// One `KEY OP NUMBER` condition; the run fails when it holds.
#[derive(Clone, Debug, PartialEq)]
pub struct Condition {
    pub key: String,
    pub op: Op,
    pub value: f64,
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}{}", self.key, self.op.text(), self.value)
    }
}

/// A condition that held, with the figure that made it hold (None: null).
#[derive(Clone, Debug, PartialEq)]
pub struct Crossed {
    pub condition: Condition,
    pub path: String,
    pub actual: Option<f64>,
}

impl fmt::Display for Crossed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.actual {
            Some(v) => write!(f, "{} ({} = {v})", self.condition, self.path),
            None => write!(
                f,
                "{} ({} is null: not computable)",
                self.condition, self.path
            ),
        }
    }
}

/// Parses `lost>0,p99_ns>50000,rate_err_pct>0.1`.
pub fn parse(spec: &str) -> Result<Vec<Condition>, String> {
    let mut out = Vec::new();
    for part in spec.split(',').map(str::trim) {
        if part.is_empty() {
            continue;
        }
        let bad =
            || format!("'{part}': expected KEY OP NUMBER, OP one of > >= < <= == (e.g. lost>0)");
        let (at, op, len) = [
            (">=", Op::Ge),
            ("<=", Op::Le),
            ("==", Op::Eq),
            (">", Op::Gt),
            ("<", Op::Lt),
        ]
        .iter()
        .filter_map(|(t, op)| part.find(t).map(|i| (i, *op, t.len())))
        .min_by_key(|(i, _, len)| (*i, std::cmp::Reverse(*len)))
        .ok_or_else(bad)?;
        let key = part[..at].trim();
        let value = part[at + len..].trim();
        if key.is_empty()
            || !key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        {
            return Err(bad());
        }
        let value: f64 = value
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite())
            .ok_or_else(|| format!("'{part}': '{value}' is not a number"))?;
        out.push(Condition {
            key: key.to_string(),
            op,
            value,
        });
    }
    if out.is_empty() {
        return Err("no condition given (e.g. lost>0,p99_ns>50000)".into());
    }
    Ok(out)
}

/// Every numeric or null leaf: (dotted path, value).
fn leaves(v: &Value, path: &str, out: &mut Vec<(String, Option<f64>)>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                leaves(x, &p, out);
            }
        }
        Value::Number(n) => out.push((path.to_string(), n.as_f64())),
        Value::Null => out.push((path.to_string(), None)),
        _ => {}
    }
}

fn resolve(key: &str, all: &[(String, Option<f64>)]) -> Result<(String, Option<f64>), String> {
    let found: Vec<&(String, Option<f64>)> = if key.contains('.') {
        all.iter().filter(|(p, _)| p == key).collect()
    } else {
        let named: Vec<_> = all
            .iter()
            .filter(|(p, _)| p.rsplit('.').next() == Some(key))
            .collect();
        let judged: Vec<_> = named
            .iter()
            .copied()
            .filter(|(p, _)| p.starts_with("comparison."))
            .collect();
        if named.len() > 1 && judged.len() == 1 {
            judged
        } else {
            named
        }
    };
    match found.as_slice() {
        [one] => Ok((*one).clone()),
        [] => {
            let mut names: Vec<&str> = all
                .iter()
                .map(|(p, _)| p.rsplit('.').next().unwrap_or(p))
                .collect();
            names.sort_unstable();
            names.dedup();
            Err(format!(
                "no figure named '{key}' in this analysis (it has: {})",
                names.join(", ")
            ))
        }
        many => Err(format!(
            "'{key}' names more than one figure ({}): give its dotted path",
            many.iter()
                .map(|(p, _)| p.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// The conditions that hold for the analysis `report` (its JSON form).
pub fn check(conditions: &[Condition], report: &Value) -> Result<Vec<Crossed>, String> {
    let mut all = Vec::new();
    leaves(report, "", &mut all);
    let mut out = Vec::new();
    for c in conditions {
        let (path, actual) = resolve(&c.key, &all)?;
        let holds = actual.is_none_or(|a| c.op.holds(a, c.value));
        if holds {
            out.push(Crossed {
                condition: c.clone(),
                path,
                actual,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_conditions_and_refuses_what_is_not_one() {
        let c = parse("lost>0, p99_ns>=50000,rate_err_pct<-0.1,x==2").unwrap();
        assert_eq!(c.len(), 4);
        assert_eq!(
            (c[0].key.as_str(), c[0].op, c[0].value),
            ("lost", Op::Gt, 0.0)
        );
        assert_eq!(c[1].op, Op::Ge);
        assert_eq!((c[2].op, c[2].value), (Op::Lt, -0.1));
        assert_eq!(c[3].op, Op::Eq);
        for bad in ["lost", "lost>", ">3", "lost>abc", "lo st>1", "", "a>inf"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn figures_are_found_by_name_path_or_the_comparison() {
        let r = json!({
            "stats": {"ipg": {"p99_ns": 10}, "packets": 5},
            "comparison": {"lost": 2, "rate_err_pct": null, "gap_err": {"p99_ns": 70000}},
        });
        let hit = check(&parse("lost>0,p99_ns>50000,packets<3").unwrap(), &r).unwrap();
        assert_eq!(hit.len(), 2);
        assert_eq!(hit[0].path, "comparison.lost");
        assert_eq!(hit[1].path, "comparison.gap_err.p99_ns");
        assert_eq!(hit[1].actual, Some(70000.0));
        // A figure that could not be computed fails the gate.
        let hit = check(&parse("rate_err_pct>0.1").unwrap(), &r).unwrap();
        assert_eq!(hit[0].actual, None);
        // Dotted paths reach the others; unknown names are named.
        let hit = check(&parse("stats.ipg.p99_ns>5").unwrap(), &r).unwrap();
        assert_eq!(hit[0].actual, Some(10.0));
        let e = check(&parse("loss>0").unwrap(), &r).unwrap_err();
        assert!(e.contains("'loss'") && e.contains("lost"), "{e}");
        let twice = json!({"a": {"x": 1}, "b": {"x": 2}});
        let e = check(&parse("x>0").unwrap(), &twice).unwrap_err();
        assert!(e.contains("a.x") && e.contains("b.x"), "{e}");
        // Conditions that do not hold are not reported.
        assert!(check(&parse("lost>5").unwrap(), &r).unwrap().is_empty());
    }
}
