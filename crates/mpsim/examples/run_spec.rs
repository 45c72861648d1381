//! Runs an engine spec (JSON file) and prints the summary: a debugging aid
//! for the engine without Python.

/// The allocator, as in the Python module: jemalloc, which `.cargo/config.toml` builds to
/// back its heap with transparent huge pages. A large fabric's state
/// spans hundreds of megabytes, and on 4 KiB pages its runs took up to
/// half as long again (docs/performance.md, "Link directions, huge pages").
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: run_spec SPEC.json");
        std::process::exit(2);
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(2);
        }
    };
    let mut sim = match mpsim::Simulation::from_json(&text) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(2);
        }
    };
    sim.run_until(mpsim::SimTime(u64::MAX));
    let out = std::io::BufWriter::new(std::io::stdout().lock());
    if let Err(e) = sim.write_summary(out, true) {
        eprintln!("writing the summary: {e}");
        std::process::exit(1);
    }
    println!();
}
