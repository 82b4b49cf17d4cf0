//! SIGINT and SIGTERM: the temporary files of outputs being written are removed before
//! the program exits with 128 + the signal's number (130, 143), as a shell reports it.

/// Starts the thread that waits for SIGINT or SIGTERM. The cleanup runs on that thread,
/// not inside a signal handler, so it may take locks and remove files.
#[cfg(unix)]
pub fn install() {
    use signal_hook::consts::{SIGINT, SIGTERM};
    // Without the handler the signals keep their default action: exit at once.
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
        return;
    };
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            crate::atomic_write::remove_temporaries_and_exit(128 + signal);
        }
    });
}

/// Elsewhere the signals keep their default action.
#[cfg(not(unix))]
pub fn install() {}
