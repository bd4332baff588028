//! A set of 32-bit ids kept by the hash of what they stand for (an expression node, a flat
//! name), the things themselves living elsewhere: open addressing with linear probing over one
//! array of 64-bit slots, each holding a 32-bit hash beside its id. A lookup reads one cache
//! line in the common case (the slots after the home slot are adjacent), where a table of
//! control bytes and separate buckets reads two; with millions of entries each read is a
//! cache miss. Used for the expression pool's interning and the DAE's name index.

#[derive(Clone, Debug, Default)]
pub(crate) struct IdTable {
    /// `hash << 32 | (id + 1)`, or 0 for an empty slot. The length is a power of two (or 0).
    slots: Vec<u64>,
    len: usize,
}

impl IdTable {
    const MIN_SLOTS: usize = 64;

    /// The id stored under `hash` for which `is_same` holds.
    pub(crate) fn find(&self, hash: u32, is_same: impl Fn(u32) -> bool) -> Option<u32> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut at = self.home(hash);
        loop {
            let slot = self.slots[at];
            if slot == 0 {
                return None;
            }
            if (slot >> 32) as u32 == hash && is_same(slot as u32 - 1) {
                return Some(slot as u32 - 1);
            }
            at = (at + 1) & mask;
        }
    }

    /// The id stored under `hash` for which `is_same` holds (`Err`), or else `new` stored
    /// under it (`Ok`). One probe for both.
    pub(crate) fn find_or_insert(
        &mut self,
        hash: u32,
        is_same: impl Fn(u32) -> bool,
        new: u32,
    ) -> Result<(), u32> {
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
                return Ok(());
            }
            if (slot >> 32) as u32 == hash && is_same(slot as u32 - 1) {
                return Err(slot as u32 - 1);
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

fn pack(hash: u32, id: u32) -> u64 {
    (u64::from(hash) << 32) | u64::from(id + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_what_it_stored_and_tells_equal_hashes_apart() {
        let mut table = IdTable::default();
        assert_eq!(table.find(7, |_| true), None);
        // Ids 0..1000 under hashes that collide in pairs: the predicate decides.
        for i in 0..1000u32 {
            assert_eq!(table.find_or_insert(i / 2, |id| id == i, i), Ok(()));
        }
        for i in 0..1000u32 {
            assert_eq!(
                table.find_or_insert(i / 2, |id| id == i, u32::MAX - 1),
                Err(i)
            );
            assert_eq!(table.find(i / 2, |id| id == i), Some(i));
        }
        assert_eq!(table.find(5000, |_| true), None);
        assert_eq!(table.len, 1000);
        assert!(table.slots.len().is_power_of_two() && table.len * 4 <= table.slots.len() * 3);
    }
}
