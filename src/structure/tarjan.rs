//! Tarjan's strongly connected components, iterative (no recursion: 10⁶-node chains work).

/// Components of the digraph `succ`, each a list of nodes, in reverse topological order of the
/// edges: if `a → b` (a needs b), b's component comes first. That is evaluation order.
pub fn strongly_connected(n: usize, succ: &dyn Fn(usize, &mut Vec<usize>)) -> Vec<Vec<usize>> {
    const UNSEEN: usize = usize::MAX;
    let mut index = vec![UNSEEN; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut components = Vec::new();
    let mut counter = 0;
    // Each frame: a node and its successors with the position reached.
    let mut frames: Vec<(usize, Vec<usize>, usize)> = Vec::new();
    for root in 0..n {
        if index[root] != UNSEEN {
            continue;
        }
        let mut kids = Vec::new();
        succ(root, &mut kids);
        index[root] = counter;
        low[root] = counter;
        counter += 1;
        stack.push(root);
        on_stack[root] = true;
        frames.push((root, kids, 0));
        while let Some((v, kids, pos)) = frames.last_mut() {
            let v = *v;
            if *pos < kids.len() {
                let w = kids[*pos];
                *pos += 1;
                if index[w] == UNSEEN {
                    let mut w_kids = Vec::new();
                    succ(w, &mut w_kids);
                    index[w] = counter;
                    low[w] = counter;
                    counter += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    frames.push((w, w_kids, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            frames.pop();
            if let Some((parent, _, _)) = frames.last() {
                low[*parent] = low[*parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut component = Vec::new();
                loop {
                    let w = stack.pop().expect("v is on the stack");
                    on_stack[w] = false;
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                component.reverse();
                components.push(component);
            }
        }
    }
    components
}
