//! Payloads a client stores once (PAYLOAD) and names in its descriptions
//! afterwards (Caliper §5: predefined payloads copied in a preprocessing
//! phase, attached later): a description then carries 4 bytes of id, not
//! the bytes. Bounded per session.

use super::proto::{descs, fields_header_len, Desc, Head, ProtoError};
use std::collections::HashMap;

/// Bytes of stored payloads one session may hold.
pub const MAX_STORED_BYTES: usize = 4 << 20;
/// Payloads one session may hold.
pub const MAX_STORED: usize = 4096;

/// One session's stored payloads.
#[derive(Default)]
pub struct Payloads {
    by_id: HashMap<u32, Vec<u8>>,
    bytes: usize,
}

impl Payloads {
    /// Keeps `bytes` under `id` (a payload stored again under its id
    /// replaces the old one); `at` is the message body's stream offset.
    pub fn store(&mut self, id: u32, bytes: Vec<u8>, at: u64) -> Result<(), ProtoError> {
        let old = self.by_id.get(&id).map_or(0, Vec::len);
        let bytes_after = self.bytes - old + bytes.len();
        if bytes_after > MAX_STORED_BYTES {
            return Err(ProtoError {
                offset: at + 4,
                field: "payload",
                reason: format!(
                    "{} bytes more: a session stores at most {MAX_STORED_BYTES} bytes of payloads",
                    bytes.len()
                ),
            });
        }
        if old == 0 && !self.by_id.contains_key(&id) && self.by_id.len() >= MAX_STORED {
            return Err(ProtoError {
                offset: at,
                field: "id",
                reason: format!("{id}: a session stores at most {MAX_STORED} payloads"),
            });
        }
        self.by_id.insert(id, bytes);
        self.bytes = bytes_after;
        Ok(())
    }

    /// Checks every description of an accepted DESCS `body` (at stream
    /// offset `at`) that names a stored payload: the id is stored and
    /// the headers and payload fit in its total length.
    pub fn check(&self, body: &[u8], at: u64) -> Result<(), ProtoError> {
        for d in descs(body) {
            let Some(id) = d.payload else { continue };
            let off = |i: usize| at + (d.pos + i) as u64;
            let Some(p) = self.by_id.get(&id) else {
                return Err(ProtoError {
                    offset: off(super::proto::DESC_HEAD + head_bytes(&d)),
                    field: "payload_id",
                    reason: format!("{id}: no payload stored under this id (PAYLOAD first)"),
                });
            };
            let built = match d.head {
                Head::Raw(h) => h.len(),
                Head::Fields(f) => fields_header_len(&f),
            };
            if usize::from(d.total_len) < built + p.len() {
                return Err(ProtoError {
                    offset: off(16),
                    field: "total_len",
                    reason: format!(
                        "{} is less than the {built} header and {} bytes of payload {id}",
                        d.total_len,
                        p.len()
                    ),
                });
            }
        }
        Ok(())
    }

    /// The bytes behind `d`'s headers: its prefix, or the payload it
    /// names (checked by [`Payloads::check`]).
    pub fn prefix<'a>(&'a self, d: &Desc<'a>) -> &'a [u8] {
        match d.payload {
            Some(id) => self.by_id.get(&id).map_or(&[], Vec::as_slice),
            None => d.prefix,
        }
    }
}

/// Bytes of a description's head block as it was sent.
fn head_bytes(d: &Desc<'_>) -> usize {
    match d.head {
        Head::Raw(h) => h.len(),
        Head::Fields(_) => super::proto::FIELDS_LEN,
    }
}
