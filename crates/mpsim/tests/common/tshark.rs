//! Wireshark's command-line reader, for the tests that check captures.

use std::process::Command;

/// Whether tshark is installed; if not, says that `test` is skipped.
pub fn installed_or_skip(test: &str) -> bool {
    let installed = Command::new("tshark").arg("-v").output().is_ok_and(|o| o.status.success());
    if !installed {
        eprintln!("tshark not installed: {test} skipped");
    }
    installed
}
