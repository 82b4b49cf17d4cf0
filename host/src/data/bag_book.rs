//! The bag ids and labels of a reader that builds a data set bag by bag (the CSV and
//! ARFF readers): ids checked for reappearance, labels interned, then turned into class
//! indices by [`index_labels`].

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{BuildHasher, BuildHasherDefault};

use super::show;
use crate::error::{Error, Result};

/// Per bag, only what the data set keeps: its id and a class-name index. Ids are checked
/// for reappearance by their hashes, a hit confirmed against the ids, so a file of many
/// bags is not scanned once per bag.
#[derive(Debug, Default)]
pub(crate) struct BagBook {
    ids: Vec<String>,
    seen: HashSet<u64>,
    /// Each bag's label as an index into `label_texts`, the distinct label strings.
    labels: Vec<usize>,
    label_texts: Vec<String>,
    label_index: HashMap<String, usize>,
}

impl BagBook {
    /// The index of the bag already added with `id`, if any; remembers `id` as seen.
    pub fn earlier(&mut self, id: &str) -> Option<usize> {
        let hash =
            BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default().hash_one(id);
        if self.seen.insert(hash) {
            return None;
        }
        self.ids.iter().position(|b| b == id)
    }

    /// Adds a bag (after [`BagBook::earlier`] found no bag of this id).
    pub fn push(&mut self, id: &str, label: &str) {
        let index = match self.label_index.get(label) {
            Some(&i) => i,
            None => {
                self.label_texts.push(label.to_string());
                self.label_index
                    .insert(label.to_string(), self.label_texts.len() - 1);
                self.label_texts.len() - 1
            }
        };
        self.ids.push(id.to_string());
        self.labels.push(index);
    }

    /// The id and label of the last bag added.
    pub fn last(&self) -> Option<(&str, &str)> {
        let id = self.ids.last()?;
        let label = &self.label_texts[*self.labels.last()?];
        Some((id, label))
    }

    /// Bags added.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// The ids, the class of each bag and the class names ([`index_labels`]; `name`
    /// names the file in errors).
    #[allow(clippy::type_complexity)]
    pub fn finish(self, name: &str) -> Result<(Vec<String>, Option<Vec<usize>>, Vec<String>)> {
        let raw: Vec<&str> = self
            .labels
            .iter()
            .map(|&i| self.label_texts[i].as_str())
            .collect();
        let (labels, class_names) = index_labels(name, &raw)?;
        Ok((self.ids, labels, class_names))
    }
}

/// Turns per-bag label strings into class indices, classes sorted numerically.
/// All `?` gives an unlabelled set; a mixture is an error.
pub(crate) fn index_labels<S: AsRef<str>>(
    name: &str,
    raw: &[S],
) -> Result<(Option<Vec<usize>>, Vec<String>)> {
    let unlabelled = raw.iter().filter(|l| l.as_ref() == "?").count();
    if unlabelled == raw.len() {
        return Ok((None, Vec::new()));
    }
    if unlabelled > 0 {
        return Err(Error::data(
            name,
            format!(
                "{unlabelled} of {} bags are unlabelled (`?`); label all or none",
                raw.len()
            ),
        ));
    }
    let values = raw
        .iter()
        .map(|l| {
            let l = l.as_ref();
            l.parse::<i64>()
                .map_err(|_| Error::data(name, format!("label `{}` is not an integer", show(l))))
        })
        .collect::<Result<Vec<i64>>>()?;
    // Keyed by value, so `1`, `01` and `+1` are one class (named as first written).
    let mut classes: BTreeMap<i64, String> = BTreeMap::new();
    for (&v, l) in values.iter().zip(raw) {
        classes.entry(v).or_insert_with(|| l.as_ref().to_string());
    }
    let index: BTreeMap<i64, usize> = classes.keys().enumerate().map(|(i, &v)| (v, i)).collect();
    let labels = values
        .iter()
        .filter_map(|v| index.get(v).copied())
        .collect();
    Ok((Some(labels), classes.into_values().collect()))
}
