//! The session tree view (`getTree`, docs/design.md, "The session file and its tree").

use crate::session::Session;

/// Children lists for every entry, with roots, built in one pass.
#[derive(Debug, Clone)]
pub struct Tree {
    roots: Vec<usize>,
    children: Vec<Vec<usize>>,
}

/// One node of a pre-order walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeNode {
    /// Position of the entry in [`Session::entries`].
    pub index: usize,
    /// Distance from its root.
    pub depth: usize,
    /// Number of children.
    pub children: usize,
}

impl Tree {
    /// Builds the tree: roots in file order (entries without a parent, with a
    /// parent that does not exist, or pointing at themselves); children
    /// sorted by entry timestamp, oldest first, ties in file order.
    pub fn new(session: &Session) -> Self {
        let n = session.len();
        let mut roots = Vec::new();
        let mut children = vec![Vec::new(); n];
        for i in 0..n {
            match session.parent_index(i) {
                Some(p) => children[p].push(i),
                None => roots.push(i),
            }
        }
        let keys: Vec<i64> = session
            .entries()
            .iter()
            .map(|e| e.timestamp_ms().unwrap_or(i64::MAX))
            .collect();
        for list in &mut children {
            if list.len() > 1 {
                list.sort_by_key(|&c| keys[c]);
            }
        }
        Self { roots, children }
    }

    /// Root positions, in file order.
    pub fn roots(&self) -> &[usize] {
        &self.roots
    }

    /// Children of entry `i`, sorted.
    pub fn children(&self, i: usize) -> &[usize] {
        &self.children[i]
    }

    /// Every node in pre-order (iterative, so deep trees are fine).
    pub fn walk(&self) -> Vec<TreeNode> {
        let mut out = Vec::with_capacity(self.children.len());
        let mut stack: Vec<(usize, usize)> = self.roots.iter().rev().map(|&r| (r, 0)).collect();
        while let Some((i, depth)) = stack.pop() {
            out.push(TreeNode {
                index: i,
                depth,
                children: self.children[i].len(),
            });
            for &c in self.children[i].iter().rev() {
                stack.push((c, depth + 1));
            }
        }
        out
    }
}

impl Session {
    /// The tree over every entry.
    pub fn tree(&self) -> Tree {
        Tree::new(self)
    }
}
