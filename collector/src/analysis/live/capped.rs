//! A label with a bounded number of values: the first `max` names get their own,
//! every later one shares [`OTHER`].
//!
//! Names are admitted as they first appear (the caller offers each update's names
//! longest GPU time first), and never change label afterwards: a series of a
//! counter only ever grows, as Prometheus requires (a name moved out of `other`
//! would make `other` go down, which reads as a counter reset).

use std::collections::BTreeSet;

/// The label value of every name past the first `max`.
pub const OTHER: &str = "other";

/// The names that have a label value of their own.
#[derive(Debug)]
pub struct Capped {
    max: usize,
    named: BTreeSet<String>,
}

impl Capped {
    pub fn new(max: usize) -> Capped {
        Capped {
            max,
            named: BTreeSet::new(),
        }
    }

    /// The label value of `name`, admitting it when there is room.
    pub fn label(&mut self, name: &str) -> String {
        if self.named.contains(name) {
            return name.to_string();
        }
        if self.named.len() < self.max && name != OTHER {
            self.named.insert(name.to_string());
            return name.to_string();
        }
        OTHER.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_names_keep_their_label_and_the_rest_are_other() {
        let mut c = Capped::new(2);
        assert_eq!(c.label("a"), "a");
        assert_eq!(c.label("b"), "b");
        assert_eq!(c.label("c"), OTHER);
        assert_eq!(c.label("a"), "a");
        assert_eq!(c.label("c"), OTHER);
        let mut none = Capped::new(0);
        assert_eq!(none.label("a"), OTHER);
    }
}
