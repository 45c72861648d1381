//! Applications, sans-IO: each turns inputs (start, connection events,
//! timers) into commands (open a connection, write, close, set a timer,
//! record a request). The engine owns the connections and carries the
//! commands out, so the same application runs over TCP or MPTCP.

use crate::workload::{SizeDist, Think};
use mpsim_core::rng::SimRng;
use mpsim_core::{SimDuration, SimTime};

/// Which end of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Client,
    Server,
}

/// Bytes to write meaning "without end".
pub const UNLIMITED_BYTES: u64 = u64::MAX;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AppCmd {
    /// Open connection `conn` (ids are the application's, from 0).
    Connect { conn: u32 },
    /// Write `bytes` (or [`UNLIMITED_BYTES`]) on `side` of `conn`.
    Write { conn: u32, side: Side, bytes: u64 },
    /// Stop writing new data on `side` (what was written stays queued).
    Pause { conn: u32, side: Side },
    /// Send FIN on `side` after what was written.
    Close { conn: u32, side: Side },
    /// One UDP datagram of `bytes` payload from client to server.
    Datagram { bytes: u32 },
    /// Call back with `AppInput::Timer { tag }` at `at`.
    Timer { at: SimTime, tag: u32 },
    /// A request finished (http).
    RequestDone { index: u32, size_bytes: u64, start: SimTime, end: SimTime },
    /// The flow completed its work.
    Finished,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AppInput {
    Start,
    /// The scenario's `stop` time.
    Stop,
    Connected {
        conn: u32,
        side: Side,
    },
    Delivered {
        conn: u32,
        side: Side,
        bytes: u64,
    },
    PeerClosed {
        conn: u32,
        side: Side,
    },
    Failed {
        conn: u32,
    },
    Timer {
        tag: u32,
    },
    /// The client moved to another interface (handover): reopen.
    Reconnect,
}

/// Behaviour of one application.
pub trait App: Send + Sync {
    fn on_input(&mut self, now: SimTime, input: AppInput, out: &mut Vec<AppCmd>);
}

/// Bulk transfer of `size` bytes (or without end) in one direction.
pub struct Bulk {
    size_bytes: Option<u64>,
    /// The side that sends: `Server` for download, `Client` for upload.
    sender: Side,
    conn: u32,
    delivered_bytes: u64,
    /// Delivered on earlier connections (handover).
    done: bool,
    stopped: bool,
}

impl Bulk {
    pub fn download(size_bytes: Option<u64>) -> Self {
        Bulk { size_bytes, sender: Side::Server, conn: 0, delivered_bytes: 0, done: false, stopped: false }
    }
    pub fn upload(size_bytes: Option<u64>) -> Self {
        Bulk { sender: Side::Client, ..Self::download(size_bytes) }
    }
    fn remaining(&self) -> u64 {
        self.size_bytes.map_or(UNLIMITED_BYTES, |s| s - self.delivered_bytes.min(s))
    }
}

impl App for Bulk {
    fn on_input(&mut self, _now: SimTime, input: AppInput, out: &mut Vec<AppCmd>) {
        match input {
            AppInput::Start => out.push(AppCmd::Connect { conn: self.conn }),
            AppInput::Connected { conn, side } if conn == self.conn && side == self.sender && !self.stopped => {
                out.push(AppCmd::Write { conn, side, bytes: self.remaining() });
                if self.size_bytes.is_some() {
                    out.push(AppCmd::Close { conn, side });
                }
            }
            AppInput::Delivered { bytes, side, .. } if side != self.sender => {
                self.delivered_bytes += bytes;
                if !self.done && self.size_bytes.is_some_and(|s| self.delivered_bytes >= s) {
                    self.done = true;
                    out.push(AppCmd::Finished);
                }
            }
            AppInput::PeerClosed { conn, side } => out.push(AppCmd::Close { conn, side }),
            AppInput::Stop => {
                self.stopped = true;
                out.push(AppCmd::Pause { conn: self.conn, side: self.sender });
                out.push(AppCmd::Close { conn: self.conn, side: self.sender });
            }
            AppInput::Reconnect if !self.done && !self.stopped => {
                self.conn += 1;
                out.push(AppCmd::Connect { conn: self.conn });
            }
            _ => {}
        }
    }
}

/// Short flows: request/response exchanges (spec: `app = "http"`).
pub struct Http {
    sizes: SizeDist,
    max_bytes: Option<u64>,
    total: u32,
    think: Think,
    new_connection: bool,
    request_bytes: u64,
    rng: SimRng,
    index: u32,
    /// The response size of the request under way.
    size_bytes: u64,
    conn: u32,
    start: SimTime,
    request_received: u64,
    response_delivered: u64,
    connected: bool,
    stopped: bool,
}

const TAG_NEXT_REQUEST: u32 = 1;

impl Http {
    /// The listed sizes in turn, `repeat` times, a fixed `gap` between a
    /// response and the next request.
    pub fn new(sizes_bytes: Vec<u64>, repeat: u32, gap: SimDuration, new_connection: bool, request_bytes: u64) -> Self {
        let total = sizes_bytes.len() as u32 * repeat.max(1);
        let sizes = if sizes_bytes.is_empty() { SizeDist::List(vec![1]) } else { SizeDist::List(sizes_bytes) };
        Self::closed_loop(sizes, None, total, Think::Fixed(gap), new_connection, request_bytes, SimRng::new(0, 0))
    }

    /// `total` requests with sizes from `sizes` (capped at `max_bytes`) and
    /// think times from `think`, drawn from `rng`.
    pub fn closed_loop(
        sizes: SizeDist,
        max_bytes: Option<u64>,
        total: u32,
        think: Think,
        new_connection: bool,
        request_bytes: u64,
        rng: SimRng,
    ) -> Self {
        Http {
            sizes,
            max_bytes,
            total,
            think,
            new_connection,
            request_bytes: request_bytes.max(1),
            rng,
            index: 0,
            size_bytes: 0,
            conn: 0,
            start: SimTime::ZERO,
            request_received: 0,
            response_delivered: 0,
            connected: false,
            stopped: false,
        }
    }

    fn size(&self) -> u64 {
        self.size_bytes
    }

    fn begin(&mut self, now: SimTime, out: &mut Vec<AppCmd>) {
        self.start = now;
        self.size_bytes = self.sizes.draw(self.index, self.max_bytes, &mut self.rng);
        self.request_received = 0;
        self.response_delivered = 0;
        if self.new_connection || !self.connected {
            if self.connected {
                self.conn += 1;
            }
            self.connected = false;
            out.push(AppCmd::Connect { conn: self.conn });
        } else {
            out.push(AppCmd::Write { conn: self.conn, side: Side::Client, bytes: self.request_bytes });
        }
    }

    fn on_response_complete(&mut self, now: SimTime, out: &mut Vec<AppCmd>) {
        out.push(AppCmd::RequestDone { index: self.index, size_bytes: self.size(), start: self.start, end: now });
        if self.new_connection {
            out.push(AppCmd::Close { conn: self.conn, side: Side::Client });
        }
        self.index += 1;
        if self.index >= self.total {
            out.push(AppCmd::Finished);
            if !self.new_connection {
                out.push(AppCmd::Close { conn: self.conn, side: Side::Client });
            }
        } else if !self.stopped {
            out.push(AppCmd::Timer { at: now + self.think.draw(&mut self.rng), tag: TAG_NEXT_REQUEST });
        }
    }
}

impl App for Http {
    fn on_input(&mut self, now: SimTime, input: AppInput, out: &mut Vec<AppCmd>) {
        match input {
            AppInput::Start if self.total > 0 => self.begin(now, out),
            AppInput::Timer { tag: TAG_NEXT_REQUEST } if !self.stopped => self.begin(now, out),
            AppInput::Connected { conn, side: Side::Client } if conn == self.conn => {
                self.connected = true;
                out.push(AppCmd::Write { conn, side: Side::Client, bytes: self.request_bytes });
            }
            AppInput::Delivered { conn, side: Side::Server, bytes } if conn == self.conn => {
                self.request_received += bytes;
                if self.request_received >= self.request_bytes {
                    self.request_received -= self.request_bytes;
                    out.push(AppCmd::Write { conn, side: Side::Server, bytes: self.size() });
                    if self.new_connection {
                        out.push(AppCmd::Close { conn, side: Side::Server });
                    }
                }
            }
            AppInput::Delivered { conn, side: Side::Client, bytes } if conn == self.conn => {
                self.response_delivered += bytes;
                if self.response_delivered >= self.size() {
                    self.on_response_complete(now, out);
                }
            }
            AppInput::PeerClosed { conn, side } => out.push(AppCmd::Close { conn, side }),
            AppInput::Stop => self.stopped = true,
            _ => {}
        }
    }
}

/// Constant bit rate datagrams, client to server.
pub struct Cbr {
    interval: SimDuration,
    packet_bytes: u32,
    running: bool,
    epoch: u32,
}

impl Cbr {
    pub fn new(rate_bps: u64, packet_bytes: u32) -> Self {
        let interval = SimDuration::transmission(packet_bytes as u64, rate_bps.max(1));
        Cbr { interval, packet_bytes, running: false, epoch: 0 }
    }
}

impl App for Cbr {
    fn on_input(&mut self, now: SimTime, input: AppInput, out: &mut Vec<AppCmd>) {
        match input {
            AppInput::Start => {
                self.running = true;
                self.epoch += 1;
                out.push(AppCmd::Datagram { bytes: self.packet_bytes });
                out.push(AppCmd::Timer { at: now + self.interval, tag: self.epoch });
            }
            AppInput::Timer { tag } if self.running && tag == self.epoch => {
                out.push(AppCmd::Datagram { bytes: self.packet_bytes });
                out.push(AppCmd::Timer { at: now + self.interval, tag });
            }
            AppInput::Stop => self.running = false,
            _ => {}
        }
    }
}

/// Alternates `on` and `off` periods of an inner bulk or cbr application.
pub struct OnOff {
    inner: Box<dyn App>,
    on: SimDuration,
    off: SimDuration,
    /// The inner application uses a connection (bulk) rather than datagrams.
    connected_inner: bool,
    sender: Side,
    is_on: bool,
    stopped: bool,
}

/// Tags at or above this value belong to the on/off switch, not the inner app.
const TAG_SWITCH: u32 = 1 << 30;

impl OnOff {
    pub fn new(inner: Box<dyn App>, on: SimDuration, off: SimDuration, connected_inner: bool, sender: Side) -> Self {
        OnOff { inner, on, off, connected_inner, sender, is_on: false, stopped: false }
    }
}

impl App for OnOff {
    fn on_input(&mut self, now: SimTime, input: AppInput, out: &mut Vec<AppCmd>) {
        match input {
            AppInput::Start => {
                self.is_on = true;
                self.inner.on_input(now, AppInput::Start, out);
                out.push(AppCmd::Timer { at: now + self.on, tag: TAG_SWITCH });
            }
            AppInput::Timer { tag: TAG_SWITCH } if !self.stopped => {
                self.is_on = !self.is_on;
                let next = if self.is_on { self.on } else { self.off };
                out.push(AppCmd::Timer { at: now + next, tag: TAG_SWITCH });
                match (self.connected_inner, self.is_on) {
                    (true, true) => out.push(AppCmd::Write { conn: 0, side: self.sender, bytes: UNLIMITED_BYTES }),
                    (true, false) => out.push(AppCmd::Pause { conn: 0, side: self.sender }),
                    (false, true) => self.inner.on_input(now, AppInput::Start, out),
                    (false, false) => self.inner.on_input(now, AppInput::Stop, out),
                }
            }
            AppInput::Stop => {
                self.stopped = true;
                self.inner.on_input(now, AppInput::Stop, out);
            }
            AppInput::Connected { .. } if !self.is_on => {
                // Connected during an off period: write nothing yet.
            }
            other => self.inner.on_input(now, other, out),
        }
    }
}

/// A streaming-like competitor: one connection, a chunk of
/// `bitrate * chunk` bytes written every `chunk` period.
pub struct Video {
    chunk_bytes: u64,
    chunk: SimDuration,
    connected: bool,
    stopped: bool,
}

impl Video {
    pub fn new(bitrate_bps: u64, chunk: SimDuration) -> Self {
        let chunk_bytes = ((bitrate_bps as f64 / 8.0) * chunk.as_secs_f64()).round().max(1.0) as u64;
        Video { chunk_bytes, chunk, connected: false, stopped: false }
    }
}

impl App for Video {
    fn on_input(&mut self, now: SimTime, input: AppInput, out: &mut Vec<AppCmd>) {
        match input {
            AppInput::Start => out.push(AppCmd::Connect { conn: 0 }),
            AppInput::Connected { side: Side::Server, .. } => {
                self.connected = true;
                out.push(AppCmd::Write { conn: 0, side: Side::Server, bytes: self.chunk_bytes });
                out.push(AppCmd::Timer { at: now + self.chunk, tag: 0 });
            }
            AppInput::Timer { .. } if self.connected && !self.stopped => {
                out.push(AppCmd::Write { conn: 0, side: Side::Server, bytes: self.chunk_bytes });
                out.push(AppCmd::Timer { at: now + self.chunk, tag: 0 });
            }
            AppInput::Stop => {
                self.stopped = true;
                out.push(AppCmd::Close { conn: 0, side: Side::Server });
            }
            AppInput::PeerClosed { conn, side } => out.push(AppCmd::Close { conn, side }),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(app: &mut dyn App, t: f64, input: AppInput) -> Vec<AppCmd> {
        let mut out = vec![];
        app.on_input(SimTime::from_secs_f64(t), input, &mut out);
        out
    }

    #[test]
    fn download_writes_on_the_server_and_finishes_on_the_last_byte() {
        let mut a = Bulk::download(Some(1000));
        assert_eq!(feed(&mut a, 0.0, AppInput::Start), vec![AppCmd::Connect { conn: 0 }]);
        assert!(feed(&mut a, 0.0, AppInput::Connected { conn: 0, side: Side::Client }).is_empty());
        let w = feed(&mut a, 0.0, AppInput::Connected { conn: 0, side: Side::Server });
        assert_eq!(w[0], AppCmd::Write { conn: 0, side: Side::Server, bytes: 1000 });
        assert!(feed(&mut a, 1.0, AppInput::Delivered { conn: 0, side: Side::Client, bytes: 600 }).is_empty());
        assert_eq!(feed(&mut a, 2.0, AppInput::Delivered { conn: 0, side: Side::Client, bytes: 400 }), vec![AppCmd::Finished]);
    }

    #[test]
    fn handover_resumes_with_the_remaining_bytes() {
        let mut a = Bulk::download(Some(1000));
        feed(&mut a, 0.0, AppInput::Start);
        feed(&mut a, 1.0, AppInput::Delivered { conn: 0, side: Side::Client, bytes: 300 });
        assert_eq!(feed(&mut a, 2.0, AppInput::Reconnect), vec![AppCmd::Connect { conn: 1 }]);
        let w = feed(&mut a, 2.1, AppInput::Connected { conn: 1, side: Side::Server });
        assert_eq!(w[0], AppCmd::Write { conn: 1, side: Side::Server, bytes: 700 });
    }

    #[test]
    fn http_runs_its_requests_with_gaps_on_new_connections() {
        let mut a = Http::new(vec![5000], 2, SimDuration::from_millis(100), true, 100);
        assert_eq!(feed(&mut a, 0.0, AppInput::Start), vec![AppCmd::Connect { conn: 0 }]);
        feed(&mut a, 0.1, AppInput::Connected { conn: 0, side: Side::Client });
        let resp = feed(&mut a, 0.2, AppInput::Delivered { conn: 0, side: Side::Server, bytes: 100 });
        assert_eq!(resp[0], AppCmd::Write { conn: 0, side: Side::Server, bytes: 5000 });
        let done = feed(&mut a, 0.3, AppInput::Delivered { conn: 0, side: Side::Client, bytes: 5000 });
        assert!(matches!(done[0], AppCmd::RequestDone { index: 0, size_bytes: 5000, .. }));
        assert!(matches!(done.last(), Some(AppCmd::Timer { .. })));
        assert_eq!(feed(&mut a, 0.4, AppInput::Timer { tag: TAG_NEXT_REQUEST }), vec![AppCmd::Connect { conn: 1 }]);
        feed(&mut a, 0.5, AppInput::Connected { conn: 1, side: Side::Client });
        feed(&mut a, 0.6, AppInput::Delivered { conn: 1, side: Side::Server, bytes: 100 });
        let last = feed(&mut a, 0.7, AppInput::Delivered { conn: 1, side: Side::Client, bytes: 5000 });
        assert!(last.contains(&AppCmd::Finished));
    }

    #[test]
    fn cbr_sends_at_its_rate_until_stopped() {
        let mut a = Cbr::new(1_200_000, 1500); // one packet per 10 ms
        let first = feed(&mut a, 0.0, AppInput::Start);
        assert_eq!(first[1], AppCmd::Timer { at: SimTime::from_secs_f64(0.01), tag: 1 });
        assert_eq!(feed(&mut a, 0.01, AppInput::Timer { tag: 1 }).len(), 2);
        feed(&mut a, 0.015, AppInput::Stop);
        assert!(feed(&mut a, 0.02, AppInput::Timer { tag: 1 }).is_empty());
    }

    #[test]
    fn onoff_pauses_and_resumes_a_bulk_sender() {
        let mut a =
            OnOff::new(Box::new(Bulk::download(None)), SimDuration::from_secs(5), SimDuration::from_secs(10), true, Side::Server);
        feed(&mut a, 0.0, AppInput::Start);
        let w = feed(&mut a, 0.1, AppInput::Connected { conn: 0, side: Side::Server });
        assert_eq!(w[0], AppCmd::Write { conn: 0, side: Side::Server, bytes: UNLIMITED_BYTES });
        let off = feed(&mut a, 5.0, AppInput::Timer { tag: TAG_SWITCH });
        assert!(off.contains(&AppCmd::Pause { conn: 0, side: Side::Server }));
        let on = feed(&mut a, 15.0, AppInput::Timer { tag: TAG_SWITCH });
        assert!(on.contains(&AppCmd::Write { conn: 0, side: Side::Server, bytes: UNLIMITED_BYTES }));
    }
}
