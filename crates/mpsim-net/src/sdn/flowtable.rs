//! An OpenFlow-style flow table of one switch (sans-IO): rules match on the
//! in-port, the 5-tuple with wildcards, TCP flags and the MPTCP option
//! subtype (MP_CAPABLE, MP_JOIN with its token); the highest-priority
//! matching rule wins, ties going to the rule installed first (OpenFlow 1.3
//! section 5.3 leaves overlapping equal priorities undefined; insertion
//! order keeps every run the same). Rules carry idle and hard timeouts
//! (section 5.5) and packet and byte counters. Ports are the engine's link
//! direction ids: a packet arrives over one and leaves over another.
//!
//! Rules that match an exact 5-tuple and nothing else (what the controller
//! apps install per flow) are kept in an ordered map, the others in a list
//! sorted by priority, so a lookup costs a map search plus a scan of the
//! few wildcard rules.

use crate::routing::{ecmp_hash, FlowKey, HashRows};
use mpsim_core::{SimDuration, SimTime};
use std::collections::BTreeMap;

/// Which MPTCP option a rule requires (RFC 8684 section 3: the subtype).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MptcpMatch {
    /// MP_CAPABLE (subtype 0x0), any of its forms.
    Capable,
    /// MP_JOIN (subtype 0x1); with a token, only the SYN carrying it.
    Join { token: Option<u32> },
}

/// What a packet shows the table: the header fields a match reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketFields {
    pub key: FlowKey,
    /// TCP flag bits (RFC 9293 wire values); 0 for UDP.
    pub tcp_flags: u8,
    /// The MPTCP option subtype the packet carries, with the MP_JOIN SYN's
    /// token; None without one.
    pub mptcp: Option<MptcpMatch>,
    /// Bytes on the wire, for the byte counters.
    pub wire_bytes: u32,
}

/// A match: every field None is a wildcard.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Match {
    pub in_port: Option<u32>,
    pub src: Option<mpsim_core::Addr>,
    pub dst: Option<mpsim_core::Addr>,
    pub sport: Option<u16>,
    pub dport: Option<u16>,
    /// IP protocol number (6 TCP, 17 UDP).
    pub proto: Option<u8>,
    /// (mask, value): the flag bits under `mask` must equal `value`.
    pub tcp_flags: Option<(u8, u8)>,
    pub mptcp: Option<MptcpMatch>,
}

impl Match {
    /// The match of exactly this 5-tuple.
    pub fn exact(k: &FlowKey) -> Match {
        Match {
            src: Some(k.src),
            dst: Some(k.dst),
            sport: Some(k.sport),
            dport: Some(k.dport),
            proto: Some(k.proto),
            ..Match::default()
        }
    }

    /// The 5-tuple, when this match is exactly one and nothing else.
    fn as_exact(&self) -> Option<FlowKey> {
        if self.in_port.is_some() || self.tcp_flags.is_some() || self.mptcp.is_some() {
            return None;
        }
        Some(FlowKey { src: self.src?, dst: self.dst?, sport: self.sport?, dport: self.dport?, proto: self.proto? })
    }

    pub fn matches(&self, in_port: u32, p: &PacketFields) -> bool {
        let k = &p.key;
        eq(self.in_port, in_port)
            && eq(self.src, k.src)
            && eq(self.dst, k.dst)
            && eq(self.sport, k.sport)
            && eq(self.dport, k.dport)
            && eq(self.proto, k.proto)
            && self.tcp_flags.is_none_or(|(mask, value)| p.tcp_flags & mask == value & mask)
            && self.mptcp.is_none_or(|m| mptcp_matches(m, p.mptcp))
    }
}

/// A wildcard (None) or an equal value.
fn eq<T: PartialEq>(want: Option<T>, have: T) -> bool {
    want.is_none_or(|w| w == have)
}

fn mptcp_matches(want: MptcpMatch, have: Option<MptcpMatch>) -> bool {
    match (want, have) {
        (MptcpMatch::Capable, Some(MptcpMatch::Capable)) => true,
        (MptcpMatch::Join { token: None }, Some(MptcpMatch::Join { .. })) => true,
        (MptcpMatch::Join { token: Some(t) }, Some(MptcpMatch::Join { token: Some(h) })) => t == h,
        _ => false,
    }
}

/// What a matching rule does with the packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Send it over this link direction.
    Output(u32),
    /// One of these directions per flow, by the switch's seeded 5-tuple
    /// hash (an OpenFlow select group).
    Group(Vec<u32>),
    Drop,
    /// Send it to the SdnController (a packet-in).
    ToController,
}

/// A rule as a flow-mod installs it.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    /// Higher wins.
    pub priority: u16,
    pub matches: Match,
    pub action: Action,
    /// Removed after this long without a matching packet; None: never.
    pub idle_timeout: Option<SimDuration>,
    /// Removed this long after installation whatever the traffic; None: never.
    pub hard_timeout: Option<SimDuration>,
}

/// A rule in the table with its state.
#[derive(Clone, Debug)]
pub struct Entry {
    pub rule: Rule,
    /// Installation order in this table: the tie-break among equal priorities.
    pub seq: u64,
    pub installed: SimTime,
    pub last_hit: SimTime,
    pub packets: u64,
    pub bytes: u64,
}

impl Entry {
    fn expired(&self, now: SimTime) -> bool {
        let idle = self.rule.idle_timeout.is_some_and(|t| now.saturating_since(self.last_hit) >= t);
        let hard = self.rule.hard_timeout.is_some_and(|t| now.saturating_since(self.installed) >= t);
        idle || hard
    }
}

/// What the table decided for a packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Output(u32),
    Drop,
    ToController,
    /// No rule matched (OpenFlow 1.3's table-miss: the engine sends a packet-in).
    Miss,
}

/// One switch's table.
#[derive(Clone, Debug)]
pub struct FlowTable {
    exact: BTreeMap<(u128, u8), Entry>,
    /// Sorted by (priority descending, seq ascending).
    wildcard: Vec<Entry>,
    next_seq: u64,
    /// The switch's ECMP hash, for group actions.
    hash: HashRows,
    /// When the last sweep ran.
    swept: SimTime,
}

fn tuple_key(k: &FlowKey) -> (u128, u8) {
    (((k.src.0 as u128) << 64) | ((k.dst.0 as u128) << 32) | ((k.sport as u128) << 16) | k.dport as u128, k.proto)
}

impl FlowTable {
    pub fn new(hash: HashRows) -> FlowTable {
        FlowTable { exact: BTreeMap::new(), wildcard: Vec::new(), next_seq: 0, hash, swept: SimTime::ZERO }
    }

    pub fn len(&self) -> usize {
        self.exact.len() + self.wildcard.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds a rule; one with the same match and priority is replaced,
    /// counters and all (OpenFlow 1.3 section 6.4, OFPFC_ADD).
    pub fn install(&mut self, now: SimTime, rule: Rule) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let entry = Entry { rule, seq, installed: now, last_hit: now, packets: 0, bytes: 0 };
        if let Some(k) = entry.rule.matches.as_exact() {
            let key = tuple_key(&k);
            // Exact rules of another priority for the same tuple: keep the higher.
            if self.exact.get(&key).is_some_and(|e| e.rule.priority > entry.rule.priority && !e.expired(now)) {
                return;
            }
            self.exact.insert(key, entry);
            return;
        }
        self.wildcard.retain(|e| !(e.rule.matches == entry.rule.matches && e.rule.priority == entry.rule.priority));
        let at = self.wildcard.iter().position(|e| e.rule.priority < entry.rule.priority).unwrap_or(self.wildcard.len());
        self.wildcard.insert(at, entry);
    }

    /// Looks a packet up, counting it on the rule that takes it; expired
    /// rules met on the way are removed first.
    pub fn lookup(&mut self, now: SimTime, in_port: u32, p: &PacketFields) -> Verdict {
        let key = tuple_key(&p.key);
        if self.exact.get(&key).is_some_and(|e| e.expired(now)) {
            self.exact.remove(&key);
        }
        let exact_priority = self.exact.get(&key).map(|e| e.rule.priority);
        self.wildcard.retain(|e| !e.expired(now));
        let wild = self
            .wildcard
            .iter()
            .position(|e| exact_priority.is_none_or(|x| e.rule.priority > x) && e.rule.matches.matches(in_port, p));
        let entry = match (wild, exact_priority) {
            (Some(i), _) => &mut self.wildcard[i],
            (None, Some(_)) => match self.exact.get_mut(&key) {
                Some(e) => e,
                None => return Verdict::Miss,
            },
            (None, None) => return Verdict::Miss,
        };
        entry.packets += 1;
        entry.bytes += p.wire_bytes as u64;
        entry.last_hit = now;
        match &entry.rule.action {
            Action::Output(d) => Verdict::Output(*d),
            Action::Drop => Verdict::Drop,
            Action::ToController => Verdict::ToController,
            Action::Group(dirs) if dirs.is_empty() => Verdict::Drop,
            Action::Group(dirs) => {
                // Hash-threshold selection, as the static ECMP groups (RFC 2992 section 4).
                let h = ecmp_hash(&self.hash, &p.key) as usize;
                Verdict::Output(dirs[(h * dirs.len()) >> 16])
            }
        }
    }

    /// Removes every expired rule (the switch's periodic sweep).
    pub fn expire(&mut self, now: SimTime) {
        self.exact.retain(|_, e| !e.expired(now));
        self.wildcard.retain(|e| !e.expired(now));
        self.swept = now;
    }

    /// Sweeps if the last sweep is at least `period` old: a lookup removes
    /// the expired rules it meets, the sweep the ones nobody looks up, and
    /// sweeping on every miss would cost the whole table each time.
    pub fn expire_every(&mut self, now: SimTime, period: SimDuration) {
        if now.saturating_since(self.swept) >= period {
            self.expire(now);
        }
    }

    /// The rules in the order a lookup considers them at equal priority:
    /// wildcard rules by priority, then the exact ones in tuple order.
    pub fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.wildcard.iter().chain(self.exact.values())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routing::hash_rows;
    use mpsim_core::{Addr, NodeId};

    fn key(sport: u16) -> FlowKey {
        FlowKey { src: Addr(0x0a00_0001), dst: Addr(0x0a00_0102), sport, dport: 80, proto: 6 }
    }

    fn pkt(sport: u16) -> PacketFields {
        PacketFields { key: key(sport), tcp_flags: 0x10, mptcp: None, wire_bytes: 100 }
    }

    fn rule(priority: u16, matches: Match, action: Action) -> Rule {
        Rule { priority, matches, action, idle_timeout: None, hard_timeout: None }
    }

    fn table() -> FlowTable {
        FlowTable::new(hash_rows(1, NodeId(3)))
    }

    #[test]
    fn an_empty_table_misses() {
        assert_eq!(table().lookup(SimTime::ZERO, 0, &pkt(1)), Verdict::Miss);
    }

    #[test]
    fn an_installed_exact_rule_forwards_later_packets_and_counts_them() {
        let mut t = table();
        t.install(SimTime::ZERO, rule(10, Match::exact(&key(1)), Action::Output(7)));
        assert_eq!(t.lookup(SimTime(5), 0, &pkt(1)), Verdict::Output(7));
        assert_eq!(t.lookup(SimTime(6), 0, &pkt(1)), Verdict::Output(7));
        assert_eq!(t.lookup(SimTime(7), 0, &pkt(2)), Verdict::Miss);
        let e = t.entries().next().expect("one rule");
        assert_eq!((e.packets, e.bytes), (2, 200));
    }

    #[test]
    fn the_higher_priority_rule_wins_whatever_the_order() {
        let mut t = table();
        let any_tcp = Match { proto: Some(6), ..Match::default() };
        t.install(SimTime::ZERO, rule(5, any_tcp, Action::Output(1)));
        t.install(SimTime::ZERO, rule(20, Match::exact(&key(1)), Action::Output(2)));
        t.install(SimTime::ZERO, rule(30, Match { sport: Some(9), ..Match::default() }, Action::Drop));
        assert_eq!(t.lookup(SimTime(1), 0, &pkt(1)), Verdict::Output(2));
        assert_eq!(t.lookup(SimTime(1), 0, &pkt(4)), Verdict::Output(1));
        assert_eq!(t.lookup(SimTime(1), 0, &pkt(9)), Verdict::Drop);
        // A wildcard rule above the exact one takes its packets.
        t.install(SimTime::ZERO, rule(25, Match { dport: Some(80), ..Match::default() }, Action::ToController));
        assert_eq!(t.lookup(SimTime(1), 0, &pkt(1)), Verdict::ToController);
    }

    #[test]
    fn equal_priorities_go_to_the_rule_installed_first() {
        let mut t = table();
        t.install(SimTime::ZERO, rule(5, Match { sport: Some(1), ..Match::default() }, Action::Output(1)));
        t.install(SimTime::ZERO, rule(5, Match { dport: Some(80), ..Match::default() }, Action::Output(2)));
        assert_eq!(t.lookup(SimTime(1), 0, &pkt(1)), Verdict::Output(1));
    }

    #[test]
    fn an_idle_rule_expires_and_traffic_keeps_one_alive() {
        let mut t = table();
        let idle = Some(SimDuration(100));
        t.install(SimTime::ZERO, Rule { idle_timeout: idle, ..rule(1, Match::exact(&key(1)), Action::Output(3)) });
        t.install(SimTime::ZERO, Rule { idle_timeout: idle, ..rule(1, Match::exact(&key(2)), Action::Output(3)) });
        for at in [50, 120, 190] {
            assert_eq!(t.lookup(SimTime(at), 0, &pkt(1)), Verdict::Output(3));
        }
        assert_eq!(t.lookup(SimTime(190), 0, &pkt(2)), Verdict::Miss, "idle since 0");
        assert_eq!(t.lookup(SimTime(290), 0, &pkt(1)), Verdict::Miss, "idle since 190");
        assert!(t.is_empty());
    }

    #[test]
    fn a_hard_timeout_removes_a_busy_rule() {
        let mut t = table();
        let r = Rule { hard_timeout: Some(SimDuration(100)), ..rule(1, Match::exact(&key(1)), Action::Output(3)) };
        t.install(SimTime::ZERO, r);
        assert_eq!(t.lookup(SimTime(99), 0, &pkt(1)), Verdict::Output(3));
        assert_eq!(t.lookup(SimTime(100), 0, &pkt(1)), Verdict::Miss);
    }

    #[test]
    fn the_sweep_removes_expired_rules_nobody_looks_up() {
        let mut t = table();
        let r =
            Rule { idle_timeout: Some(SimDuration(10)), ..rule(1, Match { sport: Some(1), ..Match::default() }, Action::Drop) };
        t.install(SimTime::ZERO, r.clone());
        t.install(SimTime::ZERO, Rule { matches: Match::exact(&key(5)), ..r });
        t.expire(SimTime(9));
        assert_eq!(t.len(), 2);
        t.expire_every(SimTime(10), SimDuration(5));
        assert_eq!(t.len(), 2, "swept at 9: not due before 14");
        t.expire_every(SimTime(14), SimDuration(5));
        assert!(t.is_empty());
    }

    #[test]
    fn in_port_flags_and_mptcp_subtypes_are_matched() {
        let mut t = table();
        let join7 = Match { mptcp: Some(MptcpMatch::Join { token: Some(7) }), ..Match::default() };
        let syn = Match { tcp_flags: Some((0x12, 0x02)), ..Match::default() };
        let capable = Match { mptcp: Some(MptcpMatch::Capable), in_port: Some(4), ..Match::default() };
        t.install(SimTime::ZERO, rule(30, join7, Action::Drop));
        t.install(SimTime::ZERO, rule(20, capable, Action::Output(1)));
        t.install(SimTime::ZERO, rule(10, syn, Action::ToController));
        let with = |mptcp, flags| PacketFields { mptcp, tcp_flags: flags, ..pkt(1) };
        assert_eq!(t.lookup(SimTime(1), 0, &with(Some(MptcpMatch::Join { token: Some(7) }), 0x02)), Verdict::Drop);
        // Another token: not the join rule; a SYN without ACK: the SYN rule.
        assert_eq!(t.lookup(SimTime(1), 0, &with(Some(MptcpMatch::Join { token: Some(8) }), 0x02)), Verdict::ToController);
        assert_eq!(t.lookup(SimTime(1), 4, &with(Some(MptcpMatch::Capable), 0x12)), Verdict::Output(1));
        assert_eq!(t.lookup(SimTime(1), 5, &with(Some(MptcpMatch::Capable), 0x12)), Verdict::Miss, "other in-port, SYN-ACK");
    }

    #[test]
    fn a_group_spreads_flows_over_its_ports_the_same_way_every_time() {
        let mut t = table();
        t.install(SimTime::ZERO, rule(1, Match::default(), Action::Group(vec![10, 11, 12, 13])));
        let mut counts = [0u32; 4];
        for sport in 0..1000u16 {
            let Verdict::Output(d) = t.lookup(SimTime(1), 0, &pkt(40000 + sport)) else { panic!("group outputs") };
            assert_eq!(t.lookup(SimTime(1), 0, &pkt(40000 + sport)), Verdict::Output(d), "per flow");
            counts[(d - 10) as usize] += 1;
        }
        assert!(counts.iter().all(|&c| (225..=275).contains(&c)), "{counts:?}");
    }
}
