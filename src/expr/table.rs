//! The pool's interning table: open addressing with linear probing over one array of 64-bit
//! slots, each holding a node's 32-bit hash beside its id. A lookup reads one cache line in the
//! common case (the slots after the home slot are adjacent), where a table of control bytes
//! and separate buckets reads two; with millions of nodes each read is a cache miss.

use super::ExprId;

#[derive(Clone, Debug, Default)]
pub(super) struct InternTable {
    /// `hash << 32 | (id + 1)`, or 0 for an empty slot. The length is a power of two (or 0).
    slots: Vec<u64>,
    len: usize,
}

/// What [`InternTable::find_or_insert`] did.
pub(super) enum Interned {
    Found(ExprId),
    Inserted,
}

impl InternTable {
    const MIN_SLOTS: usize = 64;

    /// The id stored under `hash` for which `is_node` holds, or else `new` stored under it.
    pub(super) fn find_or_insert(
        &mut self,
        hash: u32,
        is_node: impl Fn(ExprId) -> bool,
        new: ExprId,
    ) -> Interned {
        // Grown before probing, so the slot found empty below is where `new` goes.
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut at = self.home(hash);
        loop {
            let slot = self.slots[at];
            if slot == 0 {
                self.slots[at] = pack(hash, new);
                self.len += 1;
                return Interned::Inserted;
            }
            if (slot >> 32) as u32 == hash {
                let id = ExprId(slot as u32 - 1);
                if is_node(id) {
                    return Interned::Found(id);
                }
            }
            at = (at + 1) & mask;
        }
    }

    /// The home slot: Fibonacci hashing of the 32-bit hash, so its high bits (well mixed by
    /// the multiplication) pick among the slots whatever the table's size.
    fn home(&self, hash: u32) -> usize {
        let bits = self.slots.len().trailing_zeros();
        (u64::from(hash).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize
    }

    /// Doubles the slots, placing every entry again from its stored hash (no node is read).
    fn grow(&mut self) {
        let size = (self.slots.len() * 2).max(Self::MIN_SLOTS);
        let old = std::mem::replace(&mut self.slots, vec![0; size]);
        let mask = size - 1;
        for slot in old.into_iter().filter(|&s| s != 0) {
            let mut at = self.home((slot >> 32) as u32);
            while self.slots[at] != 0 {
                at = (at + 1) & mask;
            }
            self.slots[at] = slot;
        }
    }
}

fn pack(hash: u32, id: ExprId) -> u64 {
    (u64::from(hash) << 32) | u64::from(id.0 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_what_it_stored_and_tells_equal_hashes_apart() {
        let mut table = InternTable::default();
        // Ids 0..1000 under hashes that collide in pairs: the predicate decides.
        for i in 0..1000u32 {
            let stored = table.find_or_insert(i / 2, |id| id.0 == i, ExprId(i));
            assert!(matches!(stored, Interned::Inserted));
        }
        for i in 0..1000u32 {
            match table.find_or_insert(i / 2, |id| id.0 == i, ExprId(u32::MAX - 1)) {
                Interned::Found(id) => assert_eq!(id, ExprId(i)),
                Interned::Inserted => panic!("{i} was stored"),
            }
        }
        assert_eq!(table.len, 1000);
        assert!(table.slots.len().is_power_of_two() && table.len * 4 <= table.slots.len() * 3);
    }
}
