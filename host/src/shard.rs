//! Splitting independent work over processes — Gram-matrix entries, cross-validation
//! folds — for an existing scheduler (Slurm job arrays, Kubernetes Indexed Jobs): which
//! share a process computes, and a fingerprint that ties each share to its inputs so
//! that a merge can refuse shares of other data or settings.
//!
//! ```
//! use mil_toolkit::shard::Shard;
//!
//! let shard: Shard = "1/3".parse()?;
//! // Six jobs, the last two ten times as costly: shares of equal estimated work.
//! let costs = [1.0, 1.0, 1.0, 1.0, 10.0, 10.0];
//! let ranges: Vec<_> = (0..3).map(|i| Shard { index: i, count: 3 }.range(&costs)).collect();
//! assert_eq!(ranges, vec![0..4, 4..5, 5..6]);
//! assert_eq!(shard.range(&costs), 4..5);
//! # Ok::<(), mil_toolkit::Error>(())
//! ```

use std::ops::Range;

use crate::error::{Error, Result};

/// Share `index` (from 0) of `count` shares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// Which share, 0 ≤ index < count.
    pub index: usize,
    /// How many shares.
    pub count: usize,
}

/// Largest number of shares.
pub const MAX_SHARDS: usize = 100_000;

impl Shard {
    /// The whole work as one share.
    pub const ALL: Shard = Shard { index: 0, count: 1 };

    /// Checks 0 ≤ index < count ≤ [`MAX_SHARDS`].
    pub fn new(index: usize, count: usize) -> Result<Shard> {
        if count == 0 || count > MAX_SHARDS || index >= count {
            return Err(Error::parameter(
                "shard",
                format!("{index}/{count}"),
                format!("needs 0 ≤ i < n ≤ {MAX_SHARDS}"),
            ));
        }
        Ok(Shard { index, count })
    }

    /// The share a scheduler assigns this process: `auto` reads Slurm's
    /// `SLURM_ARRAY_TASK_ID`, `SLURM_ARRAY_TASK_MIN` and `SLURM_ARRAY_TASK_COUNT`;
    /// `auto/N` takes the count N and the index from Slurm or from Kubernetes'
    /// `JOB_COMPLETION_INDEX`. `var` looks up an environment variable.
    pub fn from_scheduler(spec: &str, var: impl Fn(&str) -> Option<String>) -> Result<Shard> {
        let bad = |why: String| Error::parameter("shard", spec, why);
        let number = |name: &str| -> Result<Option<usize>> {
            var(name)
                .map(|v| {
                    v.trim()
                        .parse::<usize>()
                        .map_err(|_| bad(format!("{name} = {v:?} is not a count")))
                })
                .transpose()
        };
        let given_count = match spec.strip_prefix("auto") {
            Some("") => None,
            Some(rest) => Some(
                rest.strip_prefix('/')
                    .and_then(|n| n.parse::<usize>().ok())
                    .ok_or_else(|| bad("write auto, auto/N or i/n".into()))?,
            ),
            None => return Err(bad("write auto, auto/N or i/n".into())),
        };
        let slurm_id = number("SLURM_ARRAY_TASK_ID")?;
        let index = match (slurm_id, number("JOB_COMPLETION_INDEX")?) {
            (Some(id), _) => id - number("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0).min(id),
            (None, Some(i)) => i,
            (None, None) => {
                return Err(bad(
                    "neither SLURM_ARRAY_TASK_ID nor JOB_COMPLETION_INDEX is set".into(),
                ))
            }
        };
        let count =
            match given_count {
                Some(n) => n,
                None if slurm_id.is_some() => number("SLURM_ARRAY_TASK_COUNT")?
                    .ok_or_else(|| bad("SLURM_ARRAY_TASK_COUNT is not set".into()))?,
                None => return Err(bad(
                    "Kubernetes gives no shard count: write auto/N with N the Job's completions"
                        .into(),
                )),
            };
        Shard::new(index, count)
    }

    /// The share a `--shard` argument names: `i/n`, or `auto`/`auto/N` read from this
    /// process's environment ([`Shard::from_scheduler`]).
    pub fn from_arg(spec: &str) -> Result<Shard> {
        if spec.starts_with("auto") {
            Shard::from_scheduler(spec, |v| std::env::var(v).ok())
        } else {
            spec.parse()
        }
    }

    /// This share's contiguous range of jobs whose estimated costs are `costs`: the
    /// jobs are cut where the running total crosses index/count and (index+1)/count of
    /// the whole, so each share gets about the same estimated work (not the same number
    /// of jobs), every job lands in exactly one share, and shares are in job order.
    pub fn range(&self, costs: &[f64]) -> Range<usize> {
        let total: f64 = costs.iter().sum();
        let cut = |k: usize| -> usize {
            if k == 0 {
                return 0;
            }
            if k >= self.count {
                return costs.len();
            }
            let target = total * k as f64 / self.count as f64;
            let mut sum = 0.0;
            for (j, c) in costs.iter().enumerate() {
                // A job belongs to the share its midpoint falls in.
                if sum + 0.5 * c >= target {
                    return j;
                }
                sum += c;
            }
            costs.len()
        };
        cut(self.index)..cut(self.index + 1)
    }
}

impl std::str::FromStr for Shard {
    type Err = Error;

    /// `i/n` (share i of n, from 0).
    fn from_str(s: &str) -> Result<Shard> {
        let bad = || Error::parameter("shard", s, "write i/n with 0 ≤ i < n, or auto");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        Shard::new(
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        )
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Checks that the shares `shares` — (index, count) of the files `names` — are all the
/// shares of one count, each exactly once; the error names the file at fault.
pub fn check_complete(shares: &[(usize, usize)], names: &[String]) -> Result<()> {
    let count = shares
        .first()
        .map(|s| s.1)
        .ok_or_else(|| Error::parameter("shards", 0, "give at least one share"))?;
    if count == 0 {
        return Err(Error::data(&names[0], "one of 0 shares"));
    }
    // Keyed by share index, so a damaged count never sizes an allocation.
    let mut seen: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
    for (f, &(index, n)) in shares.iter().enumerate() {
        let name = &names[f];
        if n != count {
            return Err(Error::data(
                name,
                format!("one of {n} shares, where {} is one of {count}", names[0]),
            ));
        }
        if index >= count {
            return Err(Error::data(name, format!("shard {index} of {count}")));
        }
        if let Some(&other) = seen.get(&index) {
            return Err(Error::data(
                name,
                format!("shard {index}/{count} is also {}", names[other]),
            ));
        }
        seen.insert(index, f);
    }
    // Fewer than `count` shares were given, so the first gap is at most `shares.len()`.
    match (0..count).find(|i| !seen.contains_key(i)) {
        Some(missing) => Err(Error::data(
            &names[0],
            format!("shard {missing}/{count} is missing"),
        )),
        None => Ok(()),
    }
}

/// A checksum of a share file's content: the FNV-1a hash of its JSON with the checksum
/// field left empty. JSON numbers round-trip exactly, so a share read back hashes to the
/// value it was written with unless its content was damaged or edited.
pub fn content_checksum<T: serde::Serialize>(value: &T) -> Result<String> {
    // Hashed as it is written: a model's JSON can be hundreds of megabytes.
    let mut hash = Fingerprint::default();
    serde_json::to_writer(&mut hash, value).map_err(|e| Error::Numerical {
        method: "share serialisation",
        reason: e.to_string(),
    })?;
    Ok(hash.hex())
}

impl std::io::Write for Fingerprint {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        *self = self.bytes(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A 64-bit FNV-1a hash, for fingerprints of data and settings (not for security).
#[derive(Debug, Clone, Copy)]
pub struct Fingerprint(u64);

impl Default for Fingerprint {
    fn default() -> Self {
        Fingerprint(0xcbf2_9ce4_8422_2325)
    }
}

impl Fingerprint {
    /// Adds bytes.
    pub fn bytes(mut self, bytes: &[u8]) -> Self {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
        self
    }

    /// Adds a data set: its dimension, bag boundaries, ids, labels and every feature's bits.
    pub fn dataset(mut self, data: &crate::Dataset) -> Self {
        self = self.bytes(&(data.dim() as u64).to_le_bytes());
        for &s in data.bag_starts() {
            self = self.bytes(&(s as u64).to_le_bytes());
        }
        for id in data.bag_ids() {
            self = self.bytes(id.as_bytes()).bytes(&[0]);
        }
        for &l in data.labels().unwrap_or(&[]) {
            self = self.bytes(&(l as u64).to_le_bytes());
        }
        for &v in data.features() {
            self = self.bytes(&v.to_bits().to_le_bytes());
        }
        self
    }

    /// The hash as 16 hex digits.
    pub fn hex(self) -> String {
        format!("{:016x}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn share_counts_never_size_an_allocation() {
        let names = vec!["a".to_string(), "b".to_string()];
        // Two shares each claiming to be one of 2³²: the first missing share is named.
        let e = check_complete(&[(0, 1 << 32), (1, 1 << 32)], &names)
            .unwrap_err()
            .to_string();
        assert!(e.contains("shard 2/4294967296 is missing"), "{e}");
        let e = check_complete(&[(0, 0)], &names[..1])
            .unwrap_err()
            .to_string();
        assert!(e.contains("0 shares"), "{e}");
    }

    #[test]
    fn shares_cover_every_job_once_in_order() {
        let costs: Vec<f64> = (0..97)
            .map(|j| 1.0 + (j % 7) as f64 * (j % 3) as f64)
            .collect();
        for n in [1, 2, 4, 7, 97, 200] {
            let ranges: Vec<_> = (0..n)
                .map(|i| Shard { index: i, count: n }.range(&costs))
                .collect();
            assert_eq!(ranges[0].start, 0);
            assert_eq!(ranges[n - 1].end, costs.len());
            for w in ranges.windows(2) {
                assert_eq!(w[0].end, w[1].start, "n = {n}");
            }
            // No share holds much more than its part plus one job.
            let total: f64 = costs.iter().sum();
            let largest = costs.iter().cloned().fold(0.0, f64::max);
            for r in &ranges {
                let work: f64 = costs[r.clone()].iter().sum();
                assert!(work <= total / n as f64 + largest, "n = {n}: {work}");
            }
        }
    }

    #[test]
    fn parses_and_reads_the_scheduler() {
        assert_eq!(
            "2/7".parse::<Shard>().unwrap(),
            Shard { index: 2, count: 7 }
        );
        for bad in ["7/7", "1/0", "x/2", "3", "-1/4"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        let slurm = |name: &str| match name {
            "SLURM_ARRAY_TASK_ID" => Some("5".to_string()),
            "SLURM_ARRAY_TASK_MIN" => Some("4".to_string()),
            "SLURM_ARRAY_TASK_COUNT" => Some("4".to_string()),
            _ => None,
        };
        assert_eq!(
            Shard::from_scheduler("auto", slurm).unwrap(),
            Shard { index: 1, count: 4 }
        );
        let k8s = |name: &str| (name == "JOB_COMPLETION_INDEX").then(|| "3".to_string());
        assert_eq!(
            Shard::from_scheduler("auto/5", k8s).unwrap(),
            Shard { index: 3, count: 5 }
        );
        assert!(Shard::from_scheduler("auto", k8s).is_err());
        assert!(Shard::from_scheduler("auto/3", |_| None).is_err());
        assert!(
            Shard::from_scheduler("auto/3", k8s).is_err(),
            "index 3 of 3"
        );
    }
}
