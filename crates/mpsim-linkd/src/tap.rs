//! The few system calls the element needs: enter a network namespace,
//! attach a TAP device, switch its carrier, read and write frames, wait
//! with nanosecond timeouts. Each `unsafe` block wraps one libc call whose
//! pointers come from live Rust values of the right size.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Enter the network namespace at `path` (e.g. /run/netns/NAME).
pub fn enter_netns(path: &str) -> io::Result<()> {
    let file = std::fs::File::open(path)?;
    // SAFETY: a valid open fd; setns does not keep it.
    let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
    check(rc).map(|_| ())
}

/// Create (or attach to) TAP device `name` in the current namespace. The
/// device is not persistent: it disappears when this process ends, so a
/// killed element leaves no device behind.
pub fn open_tap(name: &str) -> io::Result<OwnedFd> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("bad device name: {name}")));
    }
    let path = CString::new("/dev/net/tun").map_err(io::Error::other)?;
    // SAFETY: a NUL-terminated path.
    let fd = check(unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC) })?;
    // SAFETY: open returned a new fd that nothing else owns.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: ifreq is plain data; all zero is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(name.bytes()) {
        *dst = src as libc::c_char;
    }
    req.ifr_ifru.ifru_flags = (libc::IFF_TAP | libc::IFF_NO_PI) as libc::c_short;
    // SAFETY: TUNSETIFF reads and writes one ifreq, which `req` is.
    check(unsafe { libc::ioctl(owned.as_raw_fd(), libc::TUNSETIFF, &mut req) })?;
    Ok(owned)
}

/// Carrier on or off: off is a pulled cable (the kernel marks the routes
/// over it linkdown and stops transmitting), as the scenario's `up = false`.
pub fn set_carrier(fd: RawFd, on: bool) -> io::Result<()> {
    let value: libc::c_int = on.into();
    // SAFETY: TUNSETCARRIER reads one int through the pointer.
    check(unsafe { libc::ioctl(fd, libc::TUNSETCARRIER, &value) }).map(|_| ())
}

/// One frame into `buf`; Ok(None) when there is none now.
pub fn read_frame(fd: RawFd, buf: &mut [u8]) -> io::Result<Option<usize>> {
    // SAFETY: buf is valid for buf.len() bytes.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        let err = io::Error::last_os_error();
        return if err.kind() == io::ErrorKind::WouldBlock { Ok(None) } else { Err(err) };
    }
    Ok(Some(n as usize))
}

/// Hand one frame to the device's stack (it arrives as received).
pub fn write_frame(fd: RawFd, frame: &[u8]) -> io::Result<()> {
    // SAFETY: frame is valid for frame.len() bytes.
    let n = unsafe { libc::write(fd, frame.as_ptr().cast(), frame.len()) };
    check(n as libc::c_int).map(|_| ())
}

/// CLOCK_MONOTONIC in nanoseconds.
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Wait until one of `fds` is readable or `timeout_ns` passes (None: no
/// timeout). Returns the readable flags, one per fd.
pub fn wait(fds: &[RawFd], timeout_ns: Option<u64>) -> io::Result<Vec<bool>> {
    let mut polls: Vec<libc::pollfd> = fds.iter().map(|&fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 }).collect();
    let ts = timeout_ns
        .map(|ns| libc::timespec { tv_sec: (ns / 1_000_000_000) as libc::time_t, tv_nsec: (ns % 1_000_000_000) as libc::c_long });
    let ts_ptr = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: polls and ts outlive the call; a null sigmask keeps the current one.
    let rc = unsafe { libc::ppoll(polls.as_mut_ptr(), polls.len() as libc::nfds_t, ts_ptr, std::ptr::null()) };
    if rc < 0 {
        let err = io::Error::last_os_error();
        if err.kind() == io::ErrorKind::Interrupted {
            return Ok(vec![false; fds.len()]);
        }
        return Err(err);
    }
    Ok(polls.iter().map(|p| p.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0).collect())
}

/// Timers as exact as the kernel gives (the default 50 us slack would be
/// added to every frame's delay), real-time priority so that a busy machine
/// does not delay the frames, and death with the parent so that no element
/// outlives its run. The priority is best effort: without it the element
/// still works, with larger delay errors under load.
pub fn prepare_process() {
    // SAFETY: plain integer arguments.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
        let param = libc::sched_param { sched_priority: 20 };
        libc::sched_setscheduler(0, libc::SCHED_FIFO, &param);
    }
}

fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}
