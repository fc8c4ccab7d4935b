//! Where a run's threads and memory go (FLOR §5.4 core affinity per unit,
//! §5.4.1 NUMA): the node, then the CPUs of the TX threads, the planners
//! and the helpers within it, by one policy:
//!
//! - Node: `--numa-node N`; else, on a host of several nodes, the node of
//!   the output interface's device; else none (one node, or a virtual
//!   interface: said so).
//! - TX threads: `--cpu`; else the node's (or host's) last CPUs, TX
//!   thread i on the i-th from the end, when there are more CPUs than TX
//!   threads (a TX thread that shares its CPU is late by whatever runs
//!   there).
//! - Planners: `--planner-cpu`; else the CPUs just below the TX threads',
//!   one each, when more remain than planners (one CPU is left to the
//!   rest of the system).
//! - Helpers (aggregator, IO): with a node, its CPUs the others left (or
//!   the node's, if none is left); without, any CPU but the TX threads'.
//! - Memory: with a node, new pages preferred there and the process's
//!   pages moved to it.

use crate::{bad_input, Failure};
use anyhow::anyhow;
use sluice_engine::Placement;
use sluice_job::command::RunOpts;
use sluice_job::values::CpuList;

/// The placement `o` asks for with `planners` planner threads; memory is
/// not touched (see [`apply_memory`]).
pub fn place(o: &RunOpts, planners: usize) -> Result<Placement, Failure> {
    place_on(
        o,
        planners,
        &sluice_sys::numa::nodes(),
        sluice_sys::numa::iface_node,
    )
}

fn place_on(
    o: &RunOpts,
    planners: usize,
    nodes: &[(usize, Vec<usize>)],
    iface_node: impl Fn(&str) -> Option<usize>,
) -> Result<Placement, Failure> {
    let s = &o.send;
    let (node, why) = node_of(o, nodes, iface_node)?;
    let online = sluice_sys::cpus::online_cpus();
    let pool: Vec<usize> = match node {
        Some(n) => nodes
            .iter()
            .find(|(i, _)| *i == n)
            .map(|(_, c)| c.clone())
            .unwrap_or_default(),
        None => (0..online).collect(),
    };
    if pool.is_empty() {
        return Err(bad_input(anyhow!(
            "--numa-node {}: the node has no CPUs (memory alone)",
            node.unwrap_or(0)
        )));
    }
    let within = |opt: &str, cpus: &[usize]| -> Result<(), Failure> {
        match (node, cpus.iter().find(|c| !pool.contains(c))) {
            (Some(n), Some(c)) => Err(bad_input(anyhow!(
                "{opt} {c}: not a CPU of NUMA node {n} ({}); give CPUs of the node, or another --numa-node",
                CpuList(pool.clone())
            ))),
            _ => Ok(()),
        }
    };
    let tx = match &s.cpu {
        Some(c) => {
            within("--cpu", &c.0)?;
            c.0.clone()
        }
        None if s.no_pin || pool.len() <= s.threads => Vec::new(),
        None => (0..s.threads).map(|i| pool[pool.len() - 1 - i]).collect(),
    };
    let free: Vec<usize> = pool.iter().copied().filter(|c| !tx.contains(c)).collect();
    let planner = match &s.planner_cpu {
        Some(c) => {
            within("--planner-cpu", &c.0)?;
            c.0.clone()
        }
        None if s.no_pin || free.len() <= planners => Vec::new(),
        None => (0..planners).map(|i| free[free.len() - 1 - i]).collect(),
    };
    let helper = match node {
        None => Vec::new(),
        Some(_) => {
            let rest: Vec<usize> = free
                .iter()
                .copied()
                .filter(|c| !planner.contains(c))
                .collect();
            if rest.is_empty() {
                pool.clone()
            } else {
                rest
            }
        }
    };
    Ok(Placement {
        nodes: nodes.len(),
        node,
        why,
        tx_cpus: tx,
        planner_cpus: planner,
        helper_cpus: helper,
        memory: match node {
            Some(n) => format!("to be kept on node {n}"),
            None => "placed by the kernel".to_string(),
        },
    })
}

/// The NUMA node the run is placed on, and why: `--numa-node`, else the
/// output interface's device's node where the host has several.
fn node_of(
    o: &RunOpts,
    nodes: &[(usize, Vec<usize>)],
    iface_node: impl Fn(&str) -> Option<usize>,
) -> Result<(Option<usize>, String), Failure> {
    let ids = || {
        nodes
            .iter()
            .map(|(n, _)| n.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let iface = o.to.iface();
    Ok(match o.send.numa_node {
        Some(n) => {
            if !nodes.iter().any(|(i, _)| *i == n) {
                return Err(bad_input(anyhow!(
                    "--numa-node {n}: this host's NUMA nodes are {}",
                    ids()
                )));
            }
            (Some(n), "--numa-node".to_string())
        }
        None if nodes.len() > 1 => match iface.map(|i| (i, iface_node(i))) {
            Some((i, Some(n))) => (Some(n), format!("the node of {i}'s device")),
            Some((i, None)) => (None, format!("{i} has no NUMA node (a virtual device)")),
            None => (None, "the output is not an interface".to_string()),
        },
        None => (None, "one node: nothing to choose".to_string()),
    })
}

/// Keeps the process's memory on the placement's node (the calling
/// thread's policy, inherited by the threads it spawns later), saying in
/// `p.memory` what was done; nothing without a node.
pub fn apply_memory(p: &mut Placement) {
    let Some(n) = p.node else { return };
    let all: Vec<usize> = sluice_sys::numa::nodes().iter().map(|(i, _)| *i).collect();
    p.memory = match sluice_sys::numa::keep_memory_on(n, &all) {
        Ok(0) => format!("preferred on node {n}"),
        Ok(left) => format!("preferred on node {n}; {left} pages could not be moved there"),
        Err(e) => format!("not kept on node {n}: {e}"),
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_job::send::SendOpts;
    use sluice_sink::SinkSpec;

    fn opts(f: impl FnOnce(&mut SendOpts)) -> RunOpts {
        let mut s = SendOpts::default();
        f(&mut s);
        RunOpts::new(SinkSpec::Xdp("eth9".into()), s)
    }

    /// Two nodes of 8 CPUs, eth9 on node 1.
    fn two(o: &RunOpts, planners: usize) -> Result<Placement, Failure> {
        let nodes = [(0, (0..8).collect()), (1, (8..16).collect())];
        place_on(o, planners, &nodes, |i| (i == "eth9").then_some(1))
    }

    #[test]
    fn threads_go_to_the_interface_node_by_default() {
        let p = two(&opts(|s| s.threads = 2), 2).unwrap();
        assert_eq!(
            (p.node, p.why.as_str()),
            (Some(1), "the node of eth9's device")
        );
        assert_eq!(p.tx_cpus, [15, 14]);
        assert_eq!(p.planner_cpus, [13, 12]);
        assert_eq!(p.helper_cpus, (8..12).collect::<Vec<_>>());
        // --numa-node overrides; --cpu must then be on it.
        let p = two(&opts(|s| s.numa_node = Some(0)), 1).unwrap();
        assert_eq!(
            (p.node, p.tx_cpus, p.planner_cpus),
            (Some(0), vec![7], vec![6])
        );
        let e = two(
            &opts(|s| {
                s.numa_node = Some(0);
                s.cpu = Some(CpuList(vec![9]));
            }),
            1,
        )
        .unwrap_err()
        .error;
        assert!(
            e.to_string()
                .contains("--cpu 9: not a CPU of NUMA node 0 (0,1,2,3,4,5,6,7)"),
            "{e}"
        );
        let e = two(&opts(|s| s.numa_node = Some(2)), 1).unwrap_err().error;
        assert!(
            e.to_string()
                .contains("--numa-node 2: this host's NUMA nodes are 0, 1"),
            "{e}"
        );
    }

    #[test]
    fn one_node_says_so_and_pins_what_it_can() {
        let nodes = [(0, vec![0, 1])];
        let p = place_on(&opts(|_| {}), 1, &nodes, |_| None).unwrap();
        assert_eq!(
            (p.node, p.why.as_str()),
            (None, "one node: nothing to choose")
        );
        assert!(p.helper_cpus.is_empty());
        let p = place_on(&opts(|s| s.no_pin = true), 4, &nodes, |_| None).unwrap();
        assert!(p.tx_cpus.is_empty() && p.planner_cpus.is_empty());
        assert!(p.line().starts_with("placement: 1 NUMA node, no node chosen (one node: nothing to choose); TX threads on any CPU"), "{}", p.line());
        // A virtual interface on a host of two nodes: no node, and why.
        let p = two(
            &RunOpts::new(SinkSpec::Xdp("veth0".into()), SendOpts::default()),
            1,
        )
        .unwrap();
        assert_eq!(
            (p.node, p.why.as_str()),
            (None, "veth0 has no NUMA node (a virtual device)")
        );
    }
}
