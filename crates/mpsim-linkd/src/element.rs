//! The link element's model, free of I/O: per-direction delay, jitter and
//! loss, and the frames in flight ordered by their departure time. The
//! kernel backend's analogue of the simulator's link propagation stage
//! (the rate and the queue are htb and a FIFO on the sending TAP device).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Ethernet types the loss applies to: IPv4 and IPv6. ARP and the rest
/// always pass, as the simulator has no ARP to lose.
const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;

/// A seeded xorshift64* stream: the same seed gives the same losses.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        // splitmix64 of the seed, so that seeds 1, 2, 3 give unrelated streams.
        let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        Rng((z ^ (z >> 31)) | 1)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Random loss of one direction, as the scenario's `loss` key.
#[derive(Clone, Debug, PartialEq)]
pub enum Loss {
    None,
    Bernoulli {
        p: f64,
    },
    /// Two-state Gilbert-Elliott: state changes before each frame.
    Gilbert {
        p_good_bad: f64,
        p_bad_good: f64,
        loss_good: f64,
        loss_bad: f64,
        bad: bool,
    },
}

impl Loss {
    /// `none`, `P` or `g:P_GOOD_BAD:P_BAD_GOOD:LOSS_GOOD:LOSS_BAD`.
    pub fn parse(text: &str) -> Result<Loss, String> {
        let prob = |s: &str| -> Result<f64, String> {
            let p: f64 = s.parse().map_err(|_| format!("not a probability: {s}"))?;
            if (0.0..=1.0).contains(&p) {
                Ok(p)
            } else {
                Err(format!("probability out of [0, 1]: {s}"))
            }
        };
        if text == "none" {
            return Ok(Loss::None);
        }
        if let Some(rest) = text.strip_prefix("g:") {
            let parts: Vec<&str> = rest.split(':').collect();
            if parts.len() != 4 {
                return Err(format!("gilbert loss needs four probabilities: {text}"));
            }
            return Ok(Loss::Gilbert {
                p_good_bad: prob(parts[0])?,
                p_bad_good: prob(parts[1])?,
                loss_good: prob(parts[2])?,
                loss_bad: prob(parts[3])?,
                bad: false,
            });
        }
        Ok(Loss::Bernoulli { p: prob(text)? })
    }

    /// Whether the next frame is lost.
    pub fn drops(&mut self, rng: &mut Rng) -> bool {
        match self {
            Loss::None => false,
            Loss::Bernoulli { p } => *p > 0.0 && rng.unit() < *p,
            Loss::Gilbert { p_good_bad, p_bad_good, loss_good, loss_bad, bad } => {
                let flip = if *bad { *p_bad_good } else { *p_good_bad };
                if rng.unit() < flip {
                    *bad = !*bad;
                }
                let p = if *bad { *loss_bad } else { *loss_good };
                p > 0.0 && rng.unit() < p
            }
        }
    }
}

/// One direction's parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    pub delay_ns: u64,
    /// Uniform extra delay in [0, jitter_ns], as netem's jitter: frames may reorder.
    pub jitter_ns: u64,
    pub loss: Loss,
}

impl Params {
    /// `DELAY_NS,JITTER_NS,LOSS` (LOSS as [`Loss::parse`]).
    pub fn parse(text: &str) -> Result<Params, String> {
        let parts: Vec<&str> = text.splitn(3, ',').collect();
        if parts.len() != 3 {
            return Err(format!("expected DELAY_NS,JITTER_NS,LOSS: {text}"));
        }
        let int = |s: &str| s.parse::<u64>().map_err(|_| format!("not a count of nanoseconds: {s}"));
        Ok(Params { delay_ns: int(parts[0])?, jitter_ns: int(parts[1])?, loss: Loss::parse(parts[2])? })
    }
}

/// Counters of one direction, reported when the element stops.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stats {
    pub frames: u64,
    pub dropped: u64,
    /// Sum and maximum of (actual send time - due time): the element's own delay error.
    pub late_sum_ns: u64,
    pub late_max_ns: u64,
    pub sent: u64,
}

/// A frame waiting for its departure.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct InFlight {
    due_ns: u64,
    seq: u64,
    dir: usize,
    frame: Vec<u8>,
}

/// Both directions of one link: index 0 is a->b, 1 is b->a.
pub struct Element {
    pub params: [Params; 2],
    pub stats: [Stats; 2],
    pub up: bool,
    rng: Rng,
    seq: u64,
    heap: BinaryHeap<Reverse<InFlight>>,
}

impl Element {
    pub fn new(a_to_b: Params, b_to_a: Params, seed: u64) -> Self {
        Element {
            params: [a_to_b, b_to_a],
            stats: [Stats::default(), Stats::default()],
            up: true,
            rng: Rng::new(seed),
            seq: 0,
            heap: BinaryHeap::new(),
        }
    }

    /// A frame read from direction `dir`'s sending device at `now_ns`.
    pub fn on_frame(&mut self, dir: usize, frame: Vec<u8>, now_ns: u64) {
        self.stats[dir].frames += 1;
        let lossy = is_ip(&frame);
        if !self.up || (lossy && self.params[dir].loss.drops(&mut self.rng)) {
            self.stats[dir].dropped += 1;
            return;
        }
        let p = &self.params[dir];
        let jitter_ns = if p.jitter_ns > 0 { (self.rng.unit() * (p.jitter_ns + 1) as f64) as u64 } else { 0 };
        self.seq += 1;
        let due_ns = now_ns + p.delay_ns + jitter_ns;
        self.heap.push(Reverse(InFlight { due_ns, seq: self.seq, dir, frame }));
    }

    /// The departure time of the next frame, if any.
    pub fn next_due_ns(&self) -> Option<u64> {
        self.heap.peek().map(|Reverse(f)| f.due_ns)
    }

    /// The next frame due at `now_ns`: (direction, frame).
    pub fn poll_due(&mut self, now_ns: u64) -> Option<(usize, Vec<u8>)> {
        if self.next_due_ns()? > now_ns {
            return None;
        }
        // peek said there is one
        let Reverse(f) = self.heap.pop()?;
        let late_ns = now_ns - f.due_ns;
        let s = &mut self.stats[f.dir];
        s.sent += 1;
        s.late_sum_ns += late_ns;
        s.late_max_ns = s.late_max_ns.max(late_ns);
        Some((f.dir, f.frame))
    }

    /// The link goes down (frames in flight are lost, as on a cut cable) or up.
    pub fn set_up(&mut self, up: bool) {
        self.up = up;
        if !up {
            for Reverse(f) in self.heap.drain() {
                self.stats[f.dir].dropped += 1;
            }
        }
    }
}

fn is_ip(frame: &[u8]) -> bool {
    if frame.len() < 14 {
        return false;
    }
    let ethertype = u16::from_be_bytes([frame[12], frame[13]]);
    ethertype == ETHERTYPE_IPV4 || ethertype == ETHERTYPE_IPV6
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip_frame(tag: u8) -> Vec<u8> {
        let mut f = vec![0u8; 60];
        f[12] = 0x08;
        f[14] = tag;
        f
    }

    fn params(delay_ns: u64, jitter_ns: u64, loss: Loss) -> Params {
        Params { delay_ns, jitter_ns, loss }
    }

    #[test]
    fn a_frame_leaves_after_the_delay_and_not_before() {
        let mut e = Element::new(params(10_000_000, 0, Loss::None), params(0, 0, Loss::None), 1);
        e.on_frame(0, ip_frame(1), 5);
        assert_eq!(e.next_due_ns(), Some(10_000_005));
        assert!(e.poll_due(10_000_004).is_none());
        let (dir, f) = e.poll_due(10_000_105).expect("due");
        assert_eq!((dir, f[14]), (0, 1));
        assert_eq!(e.stats[0].late_max_ns, 100);
    }

    #[test]
    fn frames_keep_their_order_without_jitter() {
        let mut e = Element::new(params(1000, 0, Loss::None), params(1000, 0, Loss::None), 1);
        for tag in 0..50u8 {
            e.on_frame(0, ip_frame(tag), 7);
        }
        let tags: Vec<u8> = std::iter::from_fn(|| e.poll_due(2000)).map(|(_, f)| f[14]).collect();
        assert_eq!(tags, (0..50).collect::<Vec<u8>>());
    }

    #[test]
    fn jitter_stays_within_its_bound() {
        let mut e = Element::new(params(1000, 500, Loss::None), params(0, 0, Loss::None), 3);
        for _ in 0..1000 {
            e.on_frame(0, ip_frame(0), 0);
            let due = e.next_due_ns().expect("one in flight");
            assert!((1000..=1500).contains(&due), "due {due}");
            e.poll_due(due);
        }
    }

    #[test]
    fn bernoulli_loss_drops_about_its_share_and_spares_arp() {
        let mut e = Element::new(params(0, 0, Loss::Bernoulli { p: 0.1 }), params(0, 0, Loss::None), 9);
        for _ in 0..20_000 {
            e.on_frame(0, ip_frame(0), 0);
        }
        let share = e.stats[0].dropped as f64 / 20_000.0;
        assert!((0.09..0.11).contains(&share), "share {share}");
        let mut arp = vec![0u8; 60];
        arp[12] = 0x08;
        arp[13] = 0x06;
        let before = e.stats[0].dropped;
        for _ in 0..1000 {
            e.on_frame(0, arp.clone(), 0);
        }
        assert_eq!(e.stats[0].dropped, before);
    }

    #[test]
    fn the_same_seed_drops_the_same_frames() {
        let run = |seed| {
            let mut e = Element::new(params(0, 0, Loss::parse("0.3").expect("valid")), params(0, 0, Loss::None), seed);
            (0..200)
                .map(|_| {
                    let before = e.stats[0].dropped;
                    e.on_frame(0, ip_frame(0), 0);
                    e.stats[0].dropped > before
                })
                .collect::<Vec<bool>>()
        };
        assert_eq!(run(4), run(4));
        assert_ne!(run(4), run(5));
    }

    #[test]
    fn a_down_link_loses_what_is_in_flight_and_what_arrives() {
        let mut e = Element::new(params(1000, 0, Loss::None), params(1000, 0, Loss::None), 1);
        e.on_frame(0, ip_frame(0), 0);
        e.set_up(false);
        e.on_frame(1, ip_frame(0), 0);
        assert!(e.poll_due(5000).is_none());
        assert_eq!(e.stats[0].dropped + e.stats[1].dropped, 2);
        e.set_up(true);
        e.on_frame(1, ip_frame(0), 0);
        assert!(e.poll_due(5000).is_some());
    }

    #[test]
    fn params_parse_the_command_line_forms() {
        assert_eq!(Params::parse("10,0,none"), Ok(params(10, 0, Loss::None)));
        assert_eq!(Params::parse("1,2,0.5"), Ok(params(1, 2, Loss::Bernoulli { p: 0.5 })));
        let g = Params::parse("0,0,g:0.1:0.2:0:1").expect("valid");
        assert!(matches!(g.loss, Loss::Gilbert { .. }));
        assert!(Params::parse("1,2").is_err());
        assert!(Params::parse("1,2,1.5").is_err());
        assert!(Params::parse("x,2,none").is_err());
    }
}
