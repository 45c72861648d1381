//! The binary refuses incomplete arguments with one line and status 2.
//! (Being an integration test also makes `cargo test` build the binary
//! that the kernel backend's Python tests run.)

use std::process::Command;

#[test]
fn missing_arguments_are_one_line_and_status_2() {
    let out = Command::new(env!("CARGO_BIN_EXE_mpsim-linkd")).output().expect("the binary runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("mpsim-linkd: missing --"), "{err}");
}
