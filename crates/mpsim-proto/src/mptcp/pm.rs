//! The path manager (spec section 12): which subflows a connection opens,
//! accepts and closes, and which addresses it announces (ADD_ADDR,
//! REMOVE_ADDR, spec 9).
//!
//! Sans-IO: a [`PathManager`] owns the host's addresses, the peer's
//! announced ones and the announcements in flight; the connection tells it
//! what subflows exist ([`SubflowAddrs`]) and carries out its decisions.

use super::crypto;
use super::{LocalAddr, MptcpConfig, PathManagerKind, ADD_ADDR_RETRANS_MAX};
use mpsim_core::mptcp::MpOption;
use mpsim_core::{Addr, SimDuration, SimTime};
use std::collections::VecDeque;

/// A subflow of the connection, as the path manager sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct SubflowAddrs {
    pub local: Addr,
    pub remote: Addr,
    /// Opened by MP_JOIN (not the initial subflow).
    pub join: bool,
    /// Not closed, reset or removed.
    pub open: bool,
    /// Fully established: it may carry data.
    pub ready: bool,
}

/// The connection's keys, which sign address announcements (RFC 8684 3.4.1).
#[derive(Clone, Copy, Debug)]
pub(super) struct Keys {
    pub local: u64,
    pub remote: u64,
}

/// Where the connection stands, for the decisions that depend on it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Phase {
    /// Keys exchanged (MPTCP established).
    pub established: bool,
    /// Both DATA_FINs acknowledged.
    pub finished: bool,
}

/// What the connection must do after an interface event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum InterfaceAction {
    Nothing,
    /// Open the subflows `subflows_to_open` names.
    OpenSubflows,
    /// Reset every open subflow from this address.
    ResetSubflowsFrom(Addr),
}

/// An ADD_ADDR sent and not yet echoed.
#[derive(Clone, Copy, Debug)]
struct Unechoed {
    option: MpOption,
    addr_id: u8,
    due: SimTime,
    retransmissions: u8,
}

#[derive(Clone, Debug)]
pub(super) struct PathManager {
    kind: PathManagerKind,
    is_client: bool,
    /// The host's addresses in preference order; the first is the initial one.
    local_addrs: Vec<LocalAddr>,
    /// The local address routing picks towards each peer address.
    route_sources: Vec<(Addr, Addr)>,
    /// The peer's addresses by id; id 0 is the initial subflow's.
    remote_addrs: Vec<(u8, Addr)>,
    /// The peer's port (every subflow goes to it).
    remote_port: u16,
    /// The local port of the next subflow opened.
    next_port: u16,
    /// Announcements and echoes waiting for a segment to carry them.
    announce: VecDeque<MpOption>,
    unechoed: Vec<Unechoed>,
    add_addr_timeout: SimDuration,
    addrs_announced: bool,
    add_addr_accepted: u8,
}

impl PathManager {
    /// The path manager of `cfg`, which gives it its addresses.
    pub fn new(cfg: &mut MptcpConfig, is_client: bool) -> Self {
        PathManager {
            kind: cfg.path_manager,
            is_client,
            local_addrs: std::mem::take(&mut cfg.local_addrs),
            route_sources: std::mem::take(&mut cfg.route_sources),
            remote_addrs: Vec::new(),
            remote_port: 0,
            next_port: cfg.port_base.wrapping_add(1),
            announce: VecDeque::new(),
            unechoed: Vec::new(),
            add_addr_timeout: cfg.add_addr_timeout,
            addrs_announced: false,
            add_addr_accepted: 0,
        }
    }

    /// The peer's initial address and port.
    pub fn set_peer(&mut self, addr: Addr, port: u16) {
        self.remote_port = port;
        self.remote_addrs.push((0, addr));
    }

    pub fn remote_port(&self) -> u16 {
        self.remote_port
    }

    /// The local port of the next subflow.
    pub fn take_port(&mut self) -> u16 {
        let port = self.next_port;
        self.next_port = self.next_port.wrapping_add(1).max(1024);
        port
    }

    pub fn local_id_of(&self, addr: Addr) -> u8 {
        self.local_addrs.iter().find(|a| a.addr == addr).map_or(0, |a| a.id)
    }

    /// Subflows from `addr` are backup ones.
    pub fn is_backup(&self, addr: Addr) -> bool {
        self.local_addrs.iter().any(|a| a.addr == addr && a.backup)
    }

    /// Extra subflows (MP_JOIN) still open: closed ones no longer count
    /// against `max_subflows`, as Linux decrements its counter when a
    /// subflow closes (`mptcp_pm_subflow_check_next`, net/mptcp/pm.c).
    fn open_joins(subs: &[SubflowAddrs]) -> usize {
        subs.iter().filter(|s| s.join && s.open).count()
    }

    /// The subflows to open now (client side), as (local address, remote
    /// address id, remote address), given those that exist.
    pub fn subflows_to_open(&self, subs: &[SubflowAddrs]) -> Vec<(LocalAddr, u8, Addr)> {
        if !self.is_client {
            return Vec::new();
        }
        let initial_remote = self.remote_addrs.first().map(|&(_, a)| a).unwrap_or_default();
        let is_open = |l: Addr, ra: Addr| subs.iter().any(|s| s.open && s.local == l && s.remote == ra);
        let wanted: Vec<(LocalAddr, u8, Addr)> = match self.kind {
            PathManagerKind::Default => vec![],
            PathManagerKind::Fullmesh => {
                let remotes = &self.remote_addrs;
                self.local_addrs.iter().filter(|a| a.up).flat_map(|&l| remotes.iter().map(move |&(id, ra)| (l, id, ra))).collect()
            }
            PathManagerKind::Ndiffports(n) => {
                let live = subs.iter().filter(|s| s.open).count();
                let l = self.local_addrs[0];
                // Every subflow between the initial pair: none is "open already".
                return (live..n.max(1) as usize).map(|_| (l, 0, initial_remote)).collect();
            }
            PathManagerKind::Endpoints { max_subflows, .. } => {
                let room = (max_subflows as usize).saturating_sub(Self::open_joins(subs));
                let mut v: Vec<(LocalAddr, u8, Addr)> =
                    self.local_addrs.iter().skip(1).filter(|a| a.up).map(|&l| (l, 0, initial_remote)).collect();
                v.extend(self.remote_addrs.iter().skip(1).map(|&(id, ra)| (self.source_towards(ra), id, ra)));
                // Subflows already open take no room twice.
                v.retain(|&(l, _, ra)| !is_open(l.addr, ra));
                v.truncate(room);
                v
            }
        };
        let mut chosen: Vec<(LocalAddr, u8, Addr)> = Vec::new();
        for w in wanted {
            let (l, _, ra) = w;
            if !is_open(l.addr, ra) && !chosen.iter().any(|&(c, _, cr)| c.addr == l.addr && cr == ra) {
                chosen.push(w);
            }
        }
        chosen
    }

    /// The local address a subflow to announced address `remote` leaves
    /// from. Linux connects it from the unspecified address when no
    /// fullmesh endpoint exists (`fill_local_addresses_vec`,
    /// net/mptcp/pm_kernel.c), so the route lookup for `remote` picks the
    /// source (RFC 8684 section 3.4.1).
    fn source_towards(&self, remote: Addr) -> LocalAddr {
        let routed = self.route_sources.iter().find(|&&(peer, _)| peer == remote).map(|&(_, local)| local);
        routed.and_then(|local| self.local_addrs.iter().find(|a| a.addr == local)).copied().unwrap_or(self.local_addrs[0])
    }

    /// An MP_JOIN may be accepted, with the subflows that exist.
    pub fn accepts_join(&self, subs: &[SubflowAddrs]) -> bool {
        match self.kind {
            PathManagerKind::Endpoints { max_subflows, .. } => Self::open_joins(subs) < max_subflows as usize,
            _ => true,
        }
    }

    /// ADD_ADDR for every local address but the initial subflow's one
    /// (fullmesh, signal endpoints), once per connection (later changes go
    /// through `set_local_addr_up`).
    pub fn announce_local_addrs(&mut self, initial: Option<Addr>, keys: Keys) {
        if std::mem::replace(&mut self.addrs_announced, true) {
            return;
        }
        let announces = match self.kind {
            PathManagerKind::Fullmesh => true,
            PathManagerKind::Endpoints { .. } => !self.is_client,
            _ => false,
        };
        if !announces {
            return;
        }
        let addrs: Vec<LocalAddr> = self.local_addrs.iter().copied().filter(|a| Some(a.addr) != initial && a.up).collect();
        for a in addrs {
            self.announce_addr(a, keys);
        }
    }

    fn announce_addr(&mut self, a: LocalAddr, keys: Keys) {
        let hmac = crypto::add_addr_hmac64(keys.local, keys.remote, a.id, a.addr.0, None);
        self.announce.push_back(MpOption::AddAddr { addr_id: a.id, addr: a.addr.0, port: None, hmac64: Some(hmac), echo: false });
    }

    /// The peer announced `addr` as `id`: echo it and, if accepted, learn
    /// it. Returns true if the subflows to open may have changed.
    pub fn on_add_addr(&mut self, keys: Keys, id: u8, addr: Addr, port: Option<u16>, hmac: Option<u64>) -> bool {
        let expected = crypto::add_addr_hmac64(keys.remote, keys.local, id, addr.0, port);
        if hmac != Some(expected) {
            return false; // RFC 8684: drop an ADD_ADDR whose HMAC does not verify
        }
        self.announce.push_back(MpOption::AddAddr { addr_id: id, addr: addr.0, port, hmac64: None, echo: true });
        if self.remote_addrs.contains(&(id, addr)) {
            return false; // a retransmission: our echo was lost
        }
        if let PathManagerKind::Endpoints { max_add_addr_accepted, .. } = self.kind {
            if self.add_addr_accepted >= max_add_addr_accepted {
                return false;
            }
        }
        self.add_addr_accepted = self.add_addr_accepted.saturating_add(1);
        self.remote_addrs.retain(|&(i, _)| i != id);
        self.remote_addrs.push((id, addr));
        true
    }

    /// The peer echoed our ADD_ADDR of `addr` as `addr_id`.
    pub fn on_echo(&mut self, addr_id: u8, addr: u32) {
        self.unechoed.retain(|u| !matches!(u.option, MpOption::AddAddr { addr_id: i, addr: a, .. } if i == addr_id && a == addr));
    }

    /// The peer removed its address `id` (never the initial one); the
    /// connection resets the subflows to it.
    pub fn on_remove_addr(&mut self, id: u8) {
        self.remote_addrs.retain(|&(i, _)| i != id || i == 0);
    }

    /// The interface with `addr` becomes a backup one or a regular one.
    pub fn set_backup(&mut self, addr: Addr, backup: bool) {
        if let Some(a) = self.local_addrs.iter_mut().find(|a| a.addr == addr) {
            a.backup = backup;
        }
    }

    /// The host's interface with address `addr` went down or came up.
    pub fn set_local_addr_up(
        &mut self,
        addr: Addr,
        up: bool,
        subs: &[SubflowAddrs],
        phase: Phase,
        keys: Keys,
    ) -> InterfaceAction {
        let Some(i) = self.local_addrs.iter().position(|a| a.addr == addr) else { return InterfaceAction::Nothing };
        if self.local_addrs[i].up == up {
            return InterfaceAction::Nothing;
        }
        self.local_addrs[i].up = up;
        if matches!(self.kind, PathManagerKind::Endpoints { .. }) {
            // Upstream Linux's in-kernel path manager does not follow
            // interfaces (closing subflows is mptcpd's job): a subflow on a
            // dead interface goes stale after its RTO and recovers when the
            // interface returns; only a missing subflow is opened again.
            return if up { InterfaceAction::OpenSubflows } else { InterfaceAction::Nothing };
        }
        let a = self.local_addrs[i];
        self.forget_announcements_of(a.id);
        if up {
            let initial = subs.first().is_some_and(|s| s.local == addr);
            if phase.established && !initial && self.kind == PathManagerKind::Fullmesh && !phase.finished {
                self.announce_addr(a, keys);
            }
            return InterfaceAction::OpenSubflows;
        }
        // Only the out-of-tree fullmesh follows interfaces; with the others
        // the subflows wait, retransmitting, for the interface to return.
        if self.kind != PathManagerKind::Fullmesh {
            return InterfaceAction::Nothing;
        }
        // Never close the last way out: a connection whose every subflow
        // uses this address keeps them, retransmitting, until it returns.
        if !subs.iter().any(|s| s.open && s.ready && s.local != addr) {
            return InterfaceAction::Nothing;
        }
        if phase.established {
            self.announce.push_back(MpOption::RemoveAddr { ids: [a.id, 0, 0, 0], n: 1 });
        }
        InterfaceAction::ResetSubflowsFrom(addr)
    }

    /// An announcement about address `id` not yet sent is out of date.
    fn forget_announcements_of(&mut self, id: u8) {
        self.announce.retain(|o| match *o {
            MpOption::RemoveAddr { ids, n } => !ids[..n as usize].contains(&id),
            MpOption::AddAddr { addr_id, echo: false, .. } => addr_id != id,
            _ => true,
        });
        self.unechoed.retain(|u| u.addr_id != id);
    }

    /// The next announcement to send.
    #[inline(always)]
    pub fn next_announcement(&self) -> Option<MpOption> {
        self.announce.front().copied()
    }

    /// The next announcement left for the peer: an ADD_ADDR's echo is
    /// awaited from now on.
    pub fn on_announcement_sent(&mut self, now: SimTime) {
        let Some(option) = self.announce.pop_front() else { return };
        let MpOption::AddAddr { addr_id, echo: false, .. } = option else { return };
        let due = now + self.add_addr_timeout;
        match self.unechoed.iter_mut().find(|u| u.addr_id == addr_id) {
            Some(u) => {
                u.option = option;
                u.due = due;
            }
            None => self.unechoed.push(Unechoed { option, addr_id, due, retransmissions: 0 }),
        }
    }

    /// The connection is closing: nothing more is announced again.
    pub fn stop_retransmitting(&mut self) {
        self.unechoed.clear();
    }

    /// When an unechoed ADD_ADDR goes out again.
    #[inline(always)]
    pub fn poll_timeout(&self) -> Option<SimTime> {
        self.unechoed.iter().map(|u| u.due).min()
    }

    /// ADD_ADDRs whose echo did not come in time go out again, at most
    /// `ADD_ADDR_RETRANS_MAX` times (spec 9).
    pub fn handle_timeout(&mut self, now: SimTime) {
        let mut again = Vec::new();
        let timeout = self.add_addr_timeout;
        self.unechoed.retain(|u| {
            if u.due > now {
                return true;
            }
            if u.retransmissions < ADD_ADDR_RETRANS_MAX {
                again.push(Unechoed { retransmissions: u.retransmissions + 1, due: now + timeout, ..*u });
            }
            false
        });
        for u in again {
            self.announce.push_back(u.option);
            self.unechoed.push(u);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mptcp::tests::config;

    const KEYS: Keys = Keys { local: 11, remote: 22 };
    const PEER: Addr = Addr(100);
    const LIVE: Phase = Phase { established: true, finished: false };

    fn local(addr: u32, id: u8) -> LocalAddr {
        LocalAddr { addr: Addr(addr), id, backup: false, up: true }
    }

    /// A client path manager of `kind` with local addresses 1, 2, 3.
    fn client(kind: PathManagerKind) -> PathManager {
        let mut cfg = MptcpConfig { path_manager: kind, ..config(Addr(1), 1) };
        cfg.local_addrs = vec![local(1, 0), local(2, 1), local(3, 2)];
        let mut pm = PathManager::new(&mut cfg, true);
        pm.set_peer(PEER, 80);
        pm
    }

    fn sub(local: u32, remote: Addr, join: bool) -> SubflowAddrs {
        SubflowAddrs { local: Addr(local), remote, join, open: true, ready: true }
    }

    fn opened(pm: &PathManager, subs: &[SubflowAddrs]) -> Vec<(u32, Addr)> {
        pm.subflows_to_open(subs).iter().map(|&(l, _, r)| (l.addr.0, r)).collect()
    }

    /// The peer's ADD_ADDR of `addr` as `id`, signed with its keys.
    fn add_addr(pm: &mut PathManager, id: u8, addr: Addr) -> bool {
        let hmac = crypto::add_addr_hmac64(KEYS.remote, KEYS.local, id, addr.0, None);
        pm.on_add_addr(KEYS, id, addr, None, Some(hmac))
    }

    #[test]
    fn fullmesh_opens_a_subflow_per_address_pair_not_yet_open() {
        let mut pm = client(PathManagerKind::Fullmesh);
        let initial = [sub(1, PEER, false)];
        assert_eq!(opened(&pm, &initial), vec![(2, PEER), (3, PEER)]);
        assert!(add_addr(&mut pm, 5, Addr(200)));
        assert_eq!(opened(&pm, &initial), vec![(1, Addr(200)), (2, PEER), (2, Addr(200)), (3, PEER), (3, Addr(200))]);
    }

    #[test]
    fn a_server_opens_no_subflow() {
        let mut cfg = MptcpConfig { path_manager: PathManagerKind::Fullmesh, ..config(Addr(1), 1) };
        cfg.local_addrs.push(local(2, 1));
        let mut pm = PathManager::new(&mut cfg, false);
        pm.set_peer(PEER, 80);
        assert!(pm.subflows_to_open(&[sub(1, PEER, false)]).is_empty());
    }

    #[test]
    fn ndiffports_opens_subflows_between_the_initial_pair_up_to_n() {
        let pm = client(PathManagerKind::Ndiffports(3));
        assert_eq!(opened(&pm, &[sub(1, PEER, false)]), vec![(1, PEER), (1, PEER)]);
        let closed = SubflowAddrs { open: false, ..sub(1, PEER, true) };
        assert_eq!(opened(&pm, &[sub(1, PEER, false), closed, sub(1, PEER, true)]), vec![(1, PEER)]);
    }

    #[test]
    fn endpoints_open_at_most_max_subflows_and_closed_ones_do_not_count() {
        let pm = client(PathManagerKind::Endpoints { max_subflows: 1, max_add_addr_accepted: 0 });
        let initial = sub(1, PEER, false);
        assert_eq!(opened(&pm, &[initial]), vec![(2, PEER)]);
        // The one extra subflow is open: no room.
        assert!(opened(&pm, &[initial, sub(2, PEER, true)]).is_empty());
        assert!(!pm.accepts_join(&[initial, sub(2, PEER, true)]));
        // It closed: room again, for the first address without a subflow.
        let closed = SubflowAddrs { open: false, ..sub(2, PEER, true) };
        assert_eq!(opened(&pm, &[initial, closed]), vec![(2, PEER)]);
        assert!(pm.accepts_join(&[initial, closed]));
    }

    #[test]
    fn endpoints_accept_at_most_max_add_addr_accepted_announcements() {
        let mut pm = client(PathManagerKind::Endpoints { max_subflows: 8, max_add_addr_accepted: 1 });
        assert!(add_addr(&mut pm, 5, Addr(200)));
        assert!(!add_addr(&mut pm, 6, Addr(201)));
        let targets: Vec<Addr> = opened(&pm, &[sub(1, PEER, false)]).iter().map(|&(_, r)| r).collect();
        assert!(targets.contains(&Addr(200)) && !targets.contains(&Addr(201)), "{targets:?}");
    }

    #[test]
    fn a_subflow_to_an_announced_address_leaves_from_the_routed_source() {
        let mut cfg = MptcpConfig {
            path_manager: PathManagerKind::Endpoints { max_subflows: 2, max_add_addr_accepted: 2 },
            ..config(Addr(1), 1)
        };
        cfg.local_addrs = vec![local(1, 0), LocalAddr { up: false, ..local(3, 2) }];
        cfg.route_sources = vec![(Addr(200), Addr(3))];
        let mut pm = PathManager::new(&mut cfg, true);
        pm.set_peer(PEER, 80);
        assert!(add_addr(&mut pm, 5, Addr(200)));
        assert_eq!(opened(&pm, &[sub(1, PEER, false)]), vec![(3, Addr(200))]);
    }

    #[test]
    fn an_add_addr_with_a_bad_hmac_is_dropped_and_a_repeated_one_only_echoed() {
        let mut pm = client(PathManagerKind::Fullmesh);
        assert!(!pm.on_add_addr(KEYS, 5, Addr(200), None, Some(1)));
        assert_eq!(pm.next_announcement(), None);
        assert!(add_addr(&mut pm, 5, Addr(200)));
        assert!(!add_addr(&mut pm, 5, Addr(200)));
        let echoes = std::iter::from_fn(|| {
            let o = pm.next_announcement();
            pm.on_announcement_sent(SimTime::ZERO);
            o
        });
        assert_eq!(echoes.filter(|o| matches!(o, MpOption::AddAddr { echo: true, .. })).count(), 2);
    }

    #[test]
    fn fullmesh_resets_the_subflows_of_an_interface_that_goes_down_unless_it_is_the_last_way_out() {
        let mut pm = client(PathManagerKind::Fullmesh);
        let subs = [sub(1, PEER, false), sub(2, PEER, true)];
        assert_eq!(pm.set_local_addr_up(Addr(2), false, &subs, LIVE, KEYS), InterfaceAction::ResetSubflowsFrom(Addr(2)));
        assert!(matches!(pm.next_announcement(), Some(MpOption::RemoveAddr { ids: [1, ..], n: 1 })));
        // Down again: nothing changes.
        assert_eq!(pm.set_local_addr_up(Addr(2), false, &subs, LIVE, KEYS), InterfaceAction::Nothing);
        // Every subflow uses address 1: it keeps them.
        let only = [sub(1, PEER, false)];
        assert_eq!(pm.set_local_addr_up(Addr(1), false, &only, LIVE, KEYS), InterfaceAction::Nothing);
    }

    #[test]
    fn fullmesh_announces_an_interface_that_comes_back_and_opens_its_subflows() {
        let mut pm = client(PathManagerKind::Fullmesh);
        let subs = [sub(1, PEER, false), sub(2, PEER, true)];
        pm.set_local_addr_up(Addr(2), false, &subs, LIVE, KEYS);
        let subs = [sub(1, PEER, false)];
        assert_eq!(pm.set_local_addr_up(Addr(2), true, &subs, LIVE, KEYS), InterfaceAction::OpenSubflows);
        // The REMOVE_ADDR not yet sent is out of date; the ADD_ADDR replaces it.
        assert!(matches!(pm.next_announcement(), Some(MpOption::AddAddr { addr_id: 1, echo: false, .. })));
        assert_eq!(opened(&pm, &subs), vec![(2, PEER), (3, PEER)]);
    }

    #[test]
    fn endpoints_do_not_follow_interfaces_down_and_reopen_when_they_return() {
        let mut pm = client(PathManagerKind::Endpoints { max_subflows: 2, max_add_addr_accepted: 0 });
        let subs = [sub(1, PEER, false), sub(2, PEER, true)];
        assert_eq!(pm.set_local_addr_up(Addr(2), false, &subs, LIVE, KEYS), InterfaceAction::Nothing);
        assert_eq!(pm.set_local_addr_up(Addr(2), true, &subs, LIVE, KEYS), InterfaceAction::OpenSubflows);
    }

    #[test]
    fn an_unechoed_add_addr_goes_out_again_three_times() {
        let mut cfg = MptcpConfig { path_manager: PathManagerKind::Fullmesh, ..config(Addr(1), 1) };
        cfg.local_addrs.push(local(2, 1));
        let timeout = cfg.add_addr_timeout;
        let mut pm = PathManager::new(&mut cfg, false);
        pm.announce_local_addrs(Some(Addr(1)), KEYS);
        let mut now = SimTime::ZERO;
        let mut sent_at = Vec::new();
        while let Some(at) = pm.next_announcement().map(|_| now).or_else(|| pm.poll_timeout()) {
            now = at;
            pm.handle_timeout(now);
            if pm.next_announcement().is_some() {
                pm.on_announcement_sent(now);
                sent_at.push(now);
            }
        }
        let expected: Vec<SimTime> =
            (0..=ADD_ADDR_RETRANS_MAX as u64).map(|k| SimTime::ZERO + timeout.saturating_mul(k)).collect();
        assert_eq!(sent_at, expected);
        // An echo stops the retransmissions.
        let mut pm = PathManager::new(&mut MptcpConfig { local_addrs: vec![local(1, 0), local(2, 1)], ..cfg }, false);
        pm.announce_local_addrs(Some(Addr(1)), KEYS);
        pm.on_announcement_sent(now);
        pm.on_echo(1, 2);
        assert_eq!(pm.poll_timeout(), None);
    }
}
