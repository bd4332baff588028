//! An instance's elements by name, in declaration order. Most instances have a handful (a pin
//! has two), so up to [`ElementMap::SCANNED`] names are found by scanning; only larger ones (a
//! model's top level: one element per component) build a hash index. A hash table per small
//! instance cost an allocation and a hashed probe each, for hundreds of thousands of them.

use std::borrow::Cow;
use std::ops::{Index, IndexMut};

use crate::expr::hash::FxHashMap;

pub struct ElementMap<'a, E> {
    entries: Vec<(Cow<'a, str>, E)>,
    /// Name → slot, once there are more than `SCANNED` entries.
    index: Option<FxHashMap<Cow<'a, str>, usize>>,
}

impl<E> Default for ElementMap<'_, E> {
    fn default() -> Self {
        ElementMap {
            entries: Vec::new(),
            index: None,
        }
    }
}

impl<'a, E> ElementMap<'a, E> {
    const SCANNED: usize = 8;

    pub fn with_capacity(n: usize) -> ElementMap<'a, E> {
        ElementMap {
            entries: Vec::with_capacity(n),
            index: None,
        }
    }

    /// Adds an element under a name not yet present (names come from a map of unique names).
    pub fn push(&mut self, name: Cow<'a, str>, elem: E) {
        let slot = self.entries.len();
        if let Some(index) = &mut self.index {
            index.insert(name.clone(), slot);
        } else if slot == Self::SCANNED {
            let mut index: FxHashMap<Cow<'a, str>, usize> = self
                .entries
                .iter()
                .enumerate()
                .map(|(k, (n, _))| (n.clone(), k))
                .collect();
            index.insert(name.clone(), slot);
            self.index = Some(index);
        }
        self.entries.push((name, elem));
    }

    /// The slot and element named `name`.
    pub fn get_full(&self, name: &str) -> Option<(usize, &E)> {
        let slot = match &self.index {
            Some(index) => *index.get(name)?,
            None => self.entries.iter().position(|(n, _)| n == name)?,
        };
        Some((slot, &self.entries[slot].1))
    }

    pub fn get(&self, name: &str) -> Option<&E> {
        self.get_full(name).map(|(_, elem)| elem)
    }

    pub fn values(&self) -> impl Iterator<Item = &E> {
        self.entries.iter().map(|(_, elem)| elem)
    }
}

impl<E> Index<usize> for ElementMap<'_, E> {
    type Output = E;

    fn index(&self, slot: usize) -> &E {
        &self.entries[slot].1
    }
}

impl<E> IndexMut<usize> for ElementMap<'_, E> {
    fn index_mut(&mut self, slot: usize) -> &mut E {
        &mut self.entries[slot].1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names found by scanning and, past `SCANNED`, through the index give the same slots.
    #[test]
    fn finds_each_name_at_its_slot_below_and_above_the_scanned_size() {
        let mut map = ElementMap::default();
        for k in 0..20usize {
            map.push(Cow::Owned(format!("e{k}")), k * 10);
            for j in 0..=k {
                assert_eq!(map.get_full(&format!("e{j}")), Some((j, &(j * 10))));
            }
            assert!(map.get("missing").is_none());
        }
        map[3] = 7;
        assert_eq!(map.get("e3"), Some(&7));
        assert_eq!(
            map.values().sum::<usize>(),
            (0..20).map(|k| k * 10).sum::<usize>() - 23
        );
    }
}
