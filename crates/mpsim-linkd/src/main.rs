//! mpsim-linkd: one link of the kernel backend. It owns two TAP devices,
//! one in each end's network namespace, and carries every frame from one
//! to the other after the direction's propagation delay (plus jitter),
//! dropping frames at the direction's loss rate. The rate and the queue
//! are not here: htb and a FIFO on each TAP device's egress shape frames
//! before the element reads them, as the simulator's link serialises
//! before it propagates.
//!
//! Usage: mpsim-linkd --a-netns PATH --a-dev NAME --b-netns PATH --b-dev NAME
//!                    --a-to-b DELAY_NS,JITTER_NS,LOSS --b-to-a ... [--seed N]
//! It prints `ready` once both devices exist, then reads commands on
//! stdin, one a line: `up`, `down`, `set a_to_b|b_to_a DELAY_NS,JITTER_NS,LOSS`.
//! At the end of stdin it prints one JSON line of counters and exits.

mod element;
mod tap;

use element::{Element, Params};
use std::io::{self, BufRead, Write};
use std::os::fd::{AsRawFd, OwnedFd};

const MAX_FRAME_BYTES: usize = 65_536;
const DIRS: [&str; 2] = ["a_to_b", "b_to_a"];

struct Args {
    netns: [String; 2],
    dev: [String; 2],
    params: [Params; 2],
    seed: u64,
}

fn main() {
    let args = match parse_args(std::env::args().skip(1).collect()) {
        Ok(args) => args,
        Err(message) => {
            eprintln!("mpsim-linkd: {message}");
            std::process::exit(2);
        }
    };
    tap::prepare_process();
    if let Err(err) = run(args) {
        eprintln!("mpsim-linkd: {err}");
        std::process::exit(1);
    }
}

fn parse_args(argv: Vec<String>) -> Result<Args, String> {
    let get = |key: &str| -> Result<String, String> {
        let at = argv.iter().position(|a| a == key).ok_or(format!("missing {key}"))?;
        argv.get(at + 1).cloned().ok_or(format!("{key} needs a value"))
    };
    let seed = match get("--seed") {
        Ok(s) => s.parse().map_err(|_| format!("--seed: not a number: {s}"))?,
        Err(_) => 1,
    };
    Ok(Args {
        netns: [get("--a-netns")?, get("--b-netns")?],
        dev: [get("--a-dev")?, get("--b-dev")?],
        params: [Params::parse(&get("--a-to-b")?)?, Params::parse(&get("--b-to-a")?)?],
        seed,
    })
}

fn run(args: Args) -> io::Result<()> {
    let mut taps: Vec<OwnedFd> = Vec::with_capacity(2);
    for side in 0..2 {
        tap::enter_netns(&args.netns[side])?;
        taps.push(tap::open_tap(&args.dev[side])?);
    }
    let [a_to_b, b_to_a] = args.params;
    let mut element = Element::new(a_to_b, b_to_a, args.seed);
    println!("ready");
    io::stdout().flush()?;
    let commands = spawn_command_reader();
    let fds = [taps[0].as_raw_fd(), taps[1].as_raw_fd(), commands.fd];
    let mut buf = vec![0u8; MAX_FRAME_BYTES];
    loop {
        let timeout_ns = element.next_due_ns().map(|due| due.saturating_sub(tap::now_ns()));
        let ready = tap::wait(&fds, timeout_ns)?;
        for dir in 0..2 {
            if ready[dir] {
                read_all(fds[dir], dir, &mut buf, &mut element)?;
            }
        }
        send_due(&mut element, &fds)?;
        if ready[2] && !handle_commands(&commands, &mut element, &fds)? {
            break;
        }
    }
    println!("{}", stats_json(&element));
    io::stdout().flush()
}

/// Frames waiting on one device, each stamped with the time it was read.
fn read_all(fd: i32, dir: usize, buf: &mut [u8], element: &mut Element) -> io::Result<()> {
    while let Some(n) = tap::read_frame(fd, buf)? {
        element.on_frame(dir, buf[..n].to_vec(), tap::now_ns());
    }
    Ok(())
}

fn send_due(element: &mut Element, fds: &[i32; 3]) -> io::Result<()> {
    while let Some((dir, frame)) = element.poll_due(tap::now_ns()) {
        // A frame of direction a->b leaves through b's device, and the reverse.
        if let Err(err) = tap::write_frame(fds[1 - dir], &frame) {
            // The far device may be down for a moment (carrier off): the frame is lost, as on a wire.
            if err.raw_os_error() != Some(libc::EIO) {
                return Err(err);
            }
        }
    }
    Ok(())
}

/// Commands arrive on a pipe fed by a thread reading stdin, so the main
/// loop can poll them with the devices.
struct Commands {
    fd: i32,
    lines: std::sync::mpsc::Receiver<Option<String>>,
    _pipe: OwnedFd,
}

fn spawn_command_reader() -> Commands {
    let (read_end, write_end) = pipe();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut wake = std::fs::File::from(write_end);
        for line in io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if tx.send(Some(line)).is_err() || wake.write_all(b"x").is_err() {
                return;
            }
        }
        let _ = tx.send(None);
        let _ = wake.write_all(b"x");
    });
    Commands { fd: read_end.as_raw_fd(), lines: rx, _pipe: read_end }
}

fn pipe() -> (OwnedFd, OwnedFd) {
    let (r, w) = std::io::pipe().expect("a pipe: only fails when out of file descriptors at start-up");
    (r.into(), w.into())
}

/// Apply the commands received; false at the end of stdin.
fn handle_commands(commands: &Commands, element: &mut Element, fds: &[i32; 3]) -> io::Result<bool> {
    let mut sink = [0u8; 64];
    let _ = tap::read_frame(commands.fd, &mut sink);
    while let Ok(msg) = commands.lines.try_recv() {
        let Some(line) = msg else { return Ok(false) };
        if let Err(message) = apply(line.trim(), element, fds) {
            eprintln!("mpsim-linkd: {message}");
        }
    }
    Ok(true)
}

fn apply(line: &str, element: &mut Element, fds: &[i32; 3]) -> Result<(), String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    match words.as_slice() {
        ["up"] | ["down"] => {
            let up = words[0] == "up";
            element.set_up(up);
            for fd in &fds[..2] {
                tap::set_carrier(*fd, up).map_err(|e| format!("carrier: {e}"))?;
            }
            Ok(())
        }
        ["set", dir, spec] => {
            let d = DIRS.iter().position(|x| x == dir).ok_or(format!("no direction {dir}"))?;
            element.params[d] = Params::parse(spec)?;
            Ok(())
        }
        _ => Err(format!("unknown command: {line}")),
    }
}

fn stats_json(element: &Element) -> String {
    let dir = |d: usize| {
        let s = &element.stats[d];
        let mean = s.late_sum_ns.checked_div(s.sent).unwrap_or(0);
        format!(
            "\"{}\":{{\"frames\":{},\"dropped\":{},\"sent\":{},\"late_mean_ns\":{},\"late_max_ns\":{}}}",
            DIRS[d], s.frames, s.dropped, s.sent, mean, s.late_max_ns
        )
    };
    format!("{{{},{}}}", dir(0), dir(1))
}
