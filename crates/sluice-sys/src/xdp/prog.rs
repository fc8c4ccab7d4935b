//! The XDP program of an AF_XDP receiver, and its loader: no compiler and
//! no BPF library at run time. The program is eleven instructions
//! assembled below: ARP frames go on to the kernel's stack (so the
//! interface keeps answering for its addresses); every other frame is
//! redirected to the XDP socket of the queue it arrived on, through an
//! `XSKMAP`, and passes to the stack where that queue has none. It is
//! attached with a BPF link, so it goes when the receiver drops its file
//! descriptors, even if the process dies.
//!
//! The attributes of the `bpf(2)` commands are laid out as the kernel's
//! `union bpf_attr` (include/uapi/linux/bpf.h); the unused tail is zero,
//! which the kernel requires.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const BPF_MAP_CREATE: i64 = 0;
const BPF_MAP_UPDATE_ELEM: i64 = 2;
const BPF_PROG_LOAD: i64 = 5;
const BPF_LINK_CREATE: i64 = 28;
const BPF_MAP_TYPE_XSKMAP: u32 = 17;
const BPF_PROG_TYPE_XDP: u32 = 6;
const BPF_XDP: u32 = 37;
const XDP_FLAGS_SKB_MODE: u32 = 1 << 1;
const XDP_FLAGS_DRV_MODE: u32 = 1 << 2;
/// `union bpf_attr` is smaller than this on every kernel with AF_XDP.
const ATTR_BYTES: usize = 128;
/// `bpf_redirect_map`'s helper number.
const REDIRECT_MAP: i32 = 51;
const XDP_PASS: i32 = 2;
/// 0x0806 (ARP) as a 16-bit load from the frame reads it on a
/// little-endian machine; the program is built for the host's order.
const ETH_P_ARP_LOADED: i32 = u16::from_be_bytes(0x0806u16.to_be_bytes()) as i32;

/// How the program runs on the interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attach {
    /// In the driver (native XDP): before any socket buffer exists.
    Driver,
    /// Generic XDP, after the kernel built the socket buffer: every
    /// driver has it.
    Generic,
}

/// The program attached to an interface, with its socket map.
pub struct Steering {
    map: OwnedFd,
    /// Dropping the link detaches the program.
    _link: OwnedFd,
    _prog: OwnedFd,
    pub attach: Attach,
}

/// One BPF instruction: opcode, registers (source high nibble,
/// destination low), offset, immediate.
fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> [u8; 8] {
    let mut b = [0u8; 8];
    b[0] = code;
    b[1] = (src << 4) | dst;
    b[2..4].copy_from_slice(&off.to_ne_bytes());
    b[4..8].copy_from_slice(&imm.to_ne_bytes());
    b
}

/// The program's instructions, with `map` as the socket map's descriptor.
fn program(map: i32) -> Vec<u8> {
    const LDXW: u8 = 0x61; // dst = *(u32 *)(src + off)
    const LDXH: u8 = 0x69; // dst = *(u16 *)(src + off)
    const MOV_X: u8 = 0xbf; // dst = src
    const MOV_K: u8 = 0xb7; // dst = imm
    const ADD_K: u8 = 0x07; // dst += imm
    const JGT_X: u8 = 0x2d; // if dst > src goto +off
    const JEQ_K: u8 = 0x15; // if dst == imm goto +off
    const LD_IMM64: u8 = 0x18; // two slots: dst = imm64 (a map's fd here)
    const CALL: u8 = 0x85;
    const EXIT: u8 = 0x95;
    const PSEUDO_MAP_FD: u8 = 1;
    // struct xdp_md: data at 0, data_end at 4, rx_queue_index at 16.
    [
        insn(LDXW, 2, 1, 0, 0),                   // 0: r2 = data
        insn(LDXW, 3, 1, 4, 0),                   // 1: r3 = data_end
        insn(MOV_X, 4, 2, 0, 0),                  // 2: r4 = data
        insn(ADD_K, 4, 0, 0, 14),                 // 3: r4 += Ethernet header
        insn(JGT_X, 4, 3, 2, 0),                  // 4: runt: to 7 (redirect)
        insn(LDXH, 5, 2, 12, 0),                  // 5: r5 = EtherType
        insn(JEQ_K, 5, 0, 6, ETH_P_ARP_LOADED),   // 6: ARP: to 13 (pass)
        insn(LDXW, 2, 1, 16, 0),                  // 7: r2 = rx_queue_index
        insn(LD_IMM64, 1, PSEUDO_MAP_FD, 0, map), // 8: r1 = the map
        insn(0, 0, 0, 0, 0),                      // 9: (its upper half)
        insn(MOV_K, 3, 0, 0, XDP_PASS),           // 10: r3 = pass when no socket
        insn(CALL, 0, 0, 0, REDIRECT_MAP),        // 11: r0 = redirect
        insn(EXIT, 0, 0, 0, 0),                   // 12
        insn(MOV_K, 0, 0, 0, XDP_PASS),           // 13: r0 = pass
        insn(EXIT, 0, 0, 0, 0),                   // 14
    ]
    .concat()
}

/// Calls `bpf(cmd, attr)`; a returned descriptor is owned.
fn bpf(cmd: i64, attr: &mut [u8; ATTR_BYTES]) -> io::Result<i64> {
    // SAFETY: attr is a live, writable buffer of ATTR_BYTES bytes, the
    // size passed; the kernel reads (and for some commands writes) no
    // more than that, and keeps no pointer to it after the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            attr.as_mut_ptr(),
            ATTR_BYTES as libc::c_uint,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

fn owned(fd: i64) -> OwnedFd {
    // SAFETY: a descriptor the kernel just returned, owned by nobody else.
    unsafe { OwnedFd::from_raw_fd(fd as i32) }
}

fn put32(a: &mut [u8; ATTR_BYTES], at: usize, v: u32) {
    a[at..at + 4].copy_from_slice(&v.to_ne_bytes());
}

fn put64(a: &mut [u8; ATTR_BYTES], at: usize, v: u64) {
    a[at..at + 8].copy_from_slice(&v.to_ne_bytes());
}

impl Steering {
    /// Loads the program with a map of `queues` sockets and attaches it
    /// to interface `ifindex`, in the driver where it takes it, else
    /// generic.
    pub fn attach(ifindex: u32, queues: u32) -> io::Result<Steering> {
        let what = |s: &str, e: io::Error| io::Error::new(e.kind(), format!("{s}: {e}"));
        let mut a = [0u8; ATTR_BYTES];
        put32(&mut a, 0, BPF_MAP_TYPE_XSKMAP);
        put32(&mut a, 4, 4); // key: the queue
        put32(&mut a, 8, 4); // value: a socket's descriptor
        put32(&mut a, 12, queues.max(1));
        let map = owned(bpf(BPF_MAP_CREATE, &mut a).map_err(|e| what("creating the XSKMAP", e))?);
        let code = program(map.as_raw_fd());
        let license = c"Dual MIT/GPL";
        let mut log = vec![0u8; 4096];
        let mut a = [0u8; ATTR_BYTES];
        put32(&mut a, 0, BPF_PROG_TYPE_XDP);
        put32(&mut a, 4, (code.len() / 8) as u32);
        put64(&mut a, 8, code.as_ptr() as u64);
        put64(&mut a, 16, license.as_ptr() as u64);
        put32(&mut a, 24, 1); // log level: the verifier says why on refusal
        put32(&mut a, 28, log.len() as u32);
        put64(&mut a, 32, log.as_mut_ptr() as u64);
        a[48..58].copy_from_slice(b"sluice_xsk");
        put32(&mut a, 68, BPF_XDP);
        let prog = match bpf(BPF_PROG_LOAD, &mut a) {
            Ok(fd) => owned(fd),
            Err(e) => {
                let end = log.iter().position(|&b| b == 0).unwrap_or(0);
                let said = String::from_utf8_lossy(&log[..end]);
                return Err(what(
                    &format!("loading the XDP program ({})", said.trim()),
                    e,
                ));
            }
        };
        let link = |flags: u32| {
            let mut a = [0u8; ATTR_BYTES];
            put32(&mut a, 0, prog.as_raw_fd() as u32);
            put32(&mut a, 4, ifindex);
            put32(&mut a, 8, BPF_XDP);
            put32(&mut a, 12, flags);
            bpf(BPF_LINK_CREATE, &mut a).map(owned)
        };
        let (link, attach) = match link(XDP_FLAGS_DRV_MODE) {
            Ok(l) => (l, Attach::Driver),
            Err(_) => (
                link(XDP_FLAGS_SKB_MODE).map_err(|e| what("attaching the XDP program", e))?,
                Attach::Generic,
            ),
        };
        Ok(Steering {
            map,
            _link: link,
            _prog: prog,
            attach,
        })
    }

    /// Steers queue `queue`'s frames to socket `xsk`.
    pub fn steer(&self, queue: u32, xsk: i32) -> io::Result<()> {
        let (key, value) = (queue, xsk as u32);
        let mut a = [0u8; ATTR_BYTES];
        put32(&mut a, 0, self.map.as_raw_fd() as u32);
        put64(&mut a, 8, std::ptr::addr_of!(key) as u64);
        put64(&mut a, 16, std::ptr::addr_of!(value) as u64);
        bpf(BPF_MAP_UPDATE_ELEM, &mut a)
            .map(|_| ())
            .map_err(|e| io::Error::new(e.kind(), format!("adding queue {queue}'s socket: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_is_fifteen_slots_with_the_map_in_its_wide_load() {
        let p = program(7);
        assert_eq!(p.len(), 15 * 8);
        // Slot 8 loads the map: pseudo map fd in the source nibble.
        assert_eq!(p[64], 0x18);
        assert_eq!(p[65], (1 << 4) | 1);
        assert_eq!(i32::from_ne_bytes(p[68..72].try_into().unwrap()), 7);
        // Both exits return.
        assert_eq!(p[12 * 8], 0x95);
        assert_eq!(p[14 * 8], 0x95);
        // Jumps land on the instruction they name.
        let off =
            |slot: usize| i16::from_ne_bytes(p[slot * 8 + 2..slot * 8 + 4].try_into().unwrap());
        assert_eq!(4 + 1 + off(4) as usize, 7);
        assert_eq!(6 + 1 + off(6) as usize, 13);
    }
}
