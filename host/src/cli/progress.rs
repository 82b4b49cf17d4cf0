//! Progress bars on stderr: the CLI's [`Progress`] reporter.

use std::sync::RwLock;

use indicatif::{ProgressBar, ProgressStyle};

use crate::progress::Progress;

/// One indicatif bar per stage of work; nothing at all with `--quiet`.
pub struct Bars {
    quiet: bool,
    bar: RwLock<ProgressBar>,
}

impl Bars {
    /// Bars on stderr, or none when `quiet`.
    pub fn new(quiet: bool) -> Self {
        Bars {
            quiet,
            bar: RwLock::new(ProgressBar::hidden()),
        }
    }

    fn bar(&self) -> ProgressBar {
        self.bar
            .read()
            .map_or_else(|_| ProgressBar::hidden(), |b| b.clone())
    }
}

impl Progress for Bars {
    fn start(&self, stage: &str, total: u64) {
        if self.quiet {
            return;
        }
        let style =
            ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len}, {elapsed} (eta {eta})")
                .unwrap_or_else(|_| ProgressStyle::default_bar());
        let bar = ProgressBar::new(total)
            .with_style(style)
            .with_message(stage.to_string());
        if let Ok(mut slot) = self.bar.write() {
            slot.finish_and_clear();
            *slot = bar;
        }
    }

    fn set_total(&self, total: u64) {
        self.bar().set_length(total);
    }

    fn advance(&self, steps: u64) {
        self.bar().inc(steps);
    }

    fn finish(&self) {
        self.bar().finish_and_clear();
    }

    /// On stderr, above any bar, with or without a terminal; nothing with `--quiet`.
    fn note(&self, text: &str) {
        if !self.quiet {
            self.bar().suspend(|| super::output::warn(text));
        }
    }
}

impl Drop for Bars {
    fn drop(&mut self) {
        self.bar().finish_and_clear();
    }
}
