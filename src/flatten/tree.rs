//! Nested arrays of values, as subscripting and array expressions produce them.

#[derive(Clone, Debug, PartialEq)]
pub enum Tree<T> {
    Leaf(T),
    Node(Vec<Tree<T>>),
}

impl<T: Clone> Tree<T> {
    pub fn leaves(&self) -> Vec<T> {
        let mut out = Vec::new();
        self.collect(&mut out);
        out
    }

    fn collect(&self, out: &mut Vec<T>) {
        match self {
            Tree::Leaf(x) => {
                #[cfg(test)]
                element_work::add(1);
                out.push(x.clone());
            }
            Tree::Node(kids) => kids.iter().for_each(|k| k.collect(out)),
        }
    }

    /// The number of scalar elements.
    #[cfg(test)]
    pub fn count(&self) -> usize {
        match self {
            Tree::Leaf(_) => 1,
            Tree::Node(kids) => kids.iter().map(Tree::count).sum(),
        }
    }

    pub fn shape(&self) -> Vec<usize> {
        match self {
            Tree::Leaf(_) => Vec::new(),
            Tree::Node(kids) => {
                let mut s = vec![kids.len()];
                if let Some(first) = kids.first() {
                    s.extend(first.shape());
                }
                s
            }
        }
    }

    pub fn map<U, E>(&self, f: &mut impl FnMut(&T) -> Result<U, E>) -> Result<Tree<U>, E> {
        Ok(match self {
            Tree::Leaf(x) => Tree::Leaf(f(x)?),
            Tree::Node(kids) => {
                Tree::Node(kids.iter().map(|k| k.map(f)).collect::<Result<_, _>>()?)
            }
        })
    }

    /// Follows a row-major element path (0-based indices).
    pub fn select(&self, path: &[usize]) -> Option<&Tree<T>> {
        match (path.split_first(), self) {
            (None, _) => Some(self),
            (Some((&i, rest)), Tree::Node(kids)) => kids.get(i)?.select(rest),
            (Some(_), Tree::Leaf(_)) => None,
        }
    }
}

/// Row-major multi-indices (0-based) of an array of shape `dims`.
pub fn indices(dims: &[usize]) -> Vec<Vec<usize>> {
    let mut out = vec![Vec::new()];
    for &n in dims {
        out = out
            .into_iter()
            .flat_map(|prefix| {
                (0..n).map(move |i| {
                    let mut p = prefix.clone();
                    p.push(i);
                    p
                })
            })
            .collect();
    }
    out
}

/// `[1,2]` → `"[1,2]"` (1-based, Modelica's spelling of an element name suffix).
pub fn subscript_suffix(index: &[usize]) -> String {
    if index.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = index.iter().map(|i| (i + 1).to_string()).collect();
    format!("[{}]", parts.join(","))
}

/// `cat(dim, parts…)`: the parts joined along dimension `dim` (1-based); `None` when a part has
/// fewer dimensions or the other dimensions differ.
pub fn concatenate<T: Clone>(parts: Vec<Tree<T>>, dim: usize) -> Option<Tree<T>> {
    let mut kids_of = Vec::with_capacity(parts.len());
    for part in parts {
        match part {
            Tree::Node(kids) => kids_of.push(kids),
            Tree::Leaf(_) => return None,
        }
    }
    if dim <= 1 {
        return Some(Tree::Node(kids_of.into_iter().flatten().collect()));
    }
    let n = kids_of.first().map_or(0, Vec::len);
    if kids_of.iter().any(|k| k.len() != n) {
        return None;
    }
    let mut columns: Vec<Vec<Tree<T>>> = (0..n).map(|_| Vec::new()).collect();
    for kids in kids_of {
        for (column, kid) in columns.iter_mut().zip(kids) {
            column.push(kid);
        }
    }
    let joined = columns
        .into_iter()
        .map(|column| concatenate(column, dim - 1))
        .collect::<Option<Vec<_>>>()?;
    Some(Tree::Node(joined))
}

/// Array elements the flattener handles one by one (listed by [`Tree::leaves`], or in a bound
/// expression's value), counted per thread in unit tests, which check that the count grows
/// linearly with the size of the arrays.
#[cfg(test)]
pub mod element_work {
    use std::cell::Cell;

    thread_local!(static COUNT: Cell<usize> = const { Cell::new(0) });

    pub fn add(n: usize) {
        COUNT.with(|c| c.set(c.get() + n));
    }

    /// The count so far, which starts again from zero.
    pub fn take() -> usize {
        COUNT.with(|c| c.replace(0))
    }
}
