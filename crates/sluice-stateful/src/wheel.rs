//! A hashed timing wheel: each connection has at most one timer, linked
//! into the slot of its due tick; arming, re-arming and cancelling are
//! O(1), and advancing visits only the slots of the ticks passed and the
//! timers in them, never every connection. A timer further out than one
//! revolution stays in its slot and is passed over until its turn.
//!
//! Links live here, in arrays indexed by connection id, not in the
//! records, so the connection table's records stay plain data.

const NIL: u32 = u32::MAX;

#[derive(Clone, Copy)]
struct Link {
    next: u32,
    prev: u32,
    /// Due tick; `u64::MAX` when not armed.
    due: u64,
}

const UNARMED: Link = Link {
    next: NIL,
    prev: NIL,
    due: u64::MAX,
};

pub struct Wheel {
    heads: Vec<u32>,
    mask: u64,
    links: Vec<Link>,
    /// The last tick advanced to.
    cursor: u64,
    armed: usize,
}

impl Wheel {
    /// A wheel of `slots` (rounded up to a power of two) starting at tick
    /// `now`.
    pub fn new(slots: usize, now: u64) -> Wheel {
        let slots = slots.next_power_of_two().max(2);
        Wheel {
            heads: vec![NIL; slots],
            mask: slots as u64 - 1,
            links: Vec::new(),
            cursor: now,
            armed: 0,
        }
    }

    /// Timers armed.
    pub fn len(&self) -> usize {
        self.armed
    }

    pub fn is_empty(&self) -> bool {
        self.armed == 0
    }

    /// Due tick of `id`'s timer, if armed.
    pub fn due(&self, id: u32) -> Option<u64> {
        self.links
            .get(id as usize)
            .map(|l| l.due)
            .filter(|&d| d != u64::MAX)
    }

    /// Arms `id`'s timer for tick `due` (the next tick if `due` has
    /// passed), replacing any timer it had.
    pub fn arm(&mut self, id: u32, due: u64) {
        let i = id as usize;
        if i >= self.links.len() {
            self.links.resize(i + 1, UNARMED);
        }
        if self.links[i].due != u64::MAX {
            if self.links[i].due == due.max(self.cursor + 1) {
                return;
            }
            self.unlink(id);
        }
        let due = due.max(self.cursor + 1);
        let slot = (due & self.mask) as usize;
        let head = self.heads[slot];
        self.links[i] = Link {
            next: head,
            prev: NIL,
            due,
        };
        if head != NIL {
            self.links[head as usize].prev = id;
        }
        self.heads[slot] = id;
        self.armed += 1;
    }

    /// Disarms `id`'s timer, if armed.
    pub fn cancel(&mut self, id: u32) {
        if self
            .links
            .get(id as usize)
            .is_some_and(|l| l.due != u64::MAX)
        {
            self.unlink(id);
        }
    }

    fn unlink(&mut self, id: u32) {
        let l = self.links[id as usize];
        if l.prev != NIL {
            self.links[l.prev as usize].next = l.next;
        } else {
            self.heads[(l.due & self.mask) as usize] = l.next;
        }
        if l.next != NIL {
            self.links[l.next as usize].prev = l.prev;
        }
        self.links[id as usize] = UNARMED;
        self.armed -= 1;
    }

    /// Advances to tick `now`, appending to `fired` every timer due by
    /// then (each disarmed).
    pub fn advance(&mut self, now: u64, fired: &mut Vec<u32>) {
        if now <= self.cursor {
            return;
        }
        let slots = self.mask + 1;
        let first = self.cursor + 1;
        // Past a whole revolution every slot is visited once.
        let last = now.min(self.cursor + slots);
        for t in first..=last {
            let mut id = self.heads[(t & self.mask) as usize];
            while id != NIL {
                let l = self.links[id as usize];
                if l.due <= now {
                    self.unlink(id);
                    fired.push(id);
                }
                id = l.next;
            }
        }
        self.cursor = now;
    }

    /// The earliest tick at which a timer may fire, looking at most
    /// `horizon` ticks ahead (a bound, not a scan of every timer): None
    /// when nothing is armed.
    pub fn next_tick(&self, horizon: u64) -> Option<u64> {
        if self.armed == 0 {
            return None;
        }
        for t in self.cursor + 1..=self.cursor + horizon.min(self.mask + 1) {
            if self.heads[(t & self.mask) as usize] != NIL {
                return Some(t);
            }
        }
        Some(self.cursor + horizon)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timers_fire_at_their_tick_in_any_order_of_arming() {
        let mut w = Wheel::new(8, 0);
        w.arm(1, 5);
        w.arm(2, 3);
        w.arm(3, 20); // past one revolution of 8
        let mut f = Vec::new();
        w.advance(2, &mut f);
        assert!(f.is_empty());
        w.advance(4, &mut f);
        assert_eq!(f, vec![2]);
        w.advance(12, &mut f);
        assert_eq!(f, vec![2, 1]);
        assert_eq!(w.len(), 1);
        w.advance(19, &mut f);
        assert_eq!(f.len(), 2, "20 is not due at 19 though its slot passed");
        w.advance(100, &mut f);
        assert_eq!(f, vec![2, 1, 3]);
        assert!(w.is_empty());
    }

    #[test]
    fn rearming_and_cancelling_move_and_remove_the_one_timer() {
        let mut w = Wheel::new(16, 10);
        w.arm(0, 15);
        w.arm(0, 12);
        w.arm(1, 12);
        w.cancel(1);
        w.cancel(1);
        assert_eq!(w.len(), 1);
        assert_eq!(w.due(0), Some(12));
        // A tick already passed is the next one.
        w.arm(2, 3);
        assert_eq!(w.due(2), Some(11));
        let mut f = Vec::new();
        w.advance(15, &mut f);
        f.sort();
        assert_eq!(f, vec![0, 2]);
        assert_eq!(w.next_tick(64), None);
    }

    #[test]
    fn a_million_timers_fire_once_each() {
        let mut w = Wheel::new(4096, 0);
        for id in 0..1_000_000u32 {
            w.arm(id, u64::from(id % 10_000) + 1);
        }
        let mut f = Vec::new();
        let mut t = 0;
        while !w.is_empty() {
            t += 7;
            w.advance(t, &mut f);
        }
        assert_eq!(f.len(), 1_000_000);
        f.sort_unstable();
        f.dedup();
        assert_eq!(f.len(), 1_000_000);
    }
}
