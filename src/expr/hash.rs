//! A fast non-cryptographic hasher for the expression pool's interning table (the rustc
//! "Fx" multiply-rotate scheme). Keys are small fixed-size nodes, never user-chosen strings,
//! so hash flooding is not a concern.

use std::hash::{BuildHasherDefault, Hasher};

#[derive(Default, Clone, Copy)]
pub struct FxHasher {
    hash: u64,
}

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.add(i as u64);
    }

    fn write_u32(&mut self, i: u32) {
        self.add(i as u64);
    }

    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    fn finish(&self) -> u64 {
        // The last step is a multiply, whose low bits depend only on the input's low bits;
        // the table indexes buckets by the low bits, so bring the well-mixed high bits down
        // (constants differ mostly in their high bits).
        self.hash.rotate_left(26)
    }
}

pub type FxBuild = BuildHasherDefault<FxHasher>;
pub type FxHashMap<K, V> = std::collections::HashMap<K, V, FxBuild>;
pub type FxHashSet<K> = std::collections::HashSet<K, FxBuild>;

/// An insertion-ordered map with the fast hasher, for keys mocca makes itself (flat names,
/// ids): iteration order is the insertion order, as with any `IndexMap`.
pub type FxIndexMap<K, V> = indexmap::IndexMap<K, V, FxBuild>;
