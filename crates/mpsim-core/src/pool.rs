//! A slab of packets addressed by index, so queues and in-flight FIFOs move
//! 4-byte handles and the per-packet path allocates nothing once warm.
//!
//! A slot is 88 bytes where a [`Packet`] is 200: it keeps every header
//! field inline and a DSS option (what almost every MPTCP segment carries)
//! compactly, and puts SACK blocks, the other MPTCP options and SCTP
//! chunks in side tables only when a packet has them. Packets in queues
//! and on the wire are most of a large run's memory.

use crate::mptcp::{Dss, DssMapping, MpOption, MptcpOpts};
use crate::packet::{IpEcn, Packet, PacketExt, Proto, SackBlocks, TcpFlags, Timestamps};
use crate::Addr;

/// Handle to a packet in a [`PacketPool`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketId(pub u32);

/// A packet as a pool slot holds it. The fields a hop reads (addresses,
/// ports, ECN, size) are public; [`PacketPool::packet`] gives the whole
/// header back.
#[derive(Clone, Copy, Debug, Default)]
pub struct StoredPacket {
    pub src: Addr,
    pub dst: Addr,
    pub sport: u16,
    pub dport: u16,
    pub proto: Proto,
    pub ecn: IpEcn,
    pub wire_bytes: u32,
    flags: TcpFlags,
    payload_bytes: u32,
    seq: u64,
    ack: u64,
    wnd_bytes: u64,
    ts: Option<Timestamps>,
    // An `InlineDss`, flattened: as a struct of its own it would be padded.
    dss_data_ack: u64,
    dss_dsn: u64,
    dss_ssn: u32,
    dss_len: u16,
    dss_checksum: u16,
    dss_bits: u8,
    /// Where the side tables hold the rest of the packet: `NO_EXTRA`;
    /// `FULL | i`, its [`Extra`] at `i`; or `i`, its SACK blocks at `i`
    /// (an ACK during loss recovery, whose DSS is inline).
    extra: u32,
}

const NO_EXTRA: u32 = u32::MAX;
const FULL: u32 = 1 << 31;

impl StoredPacket {
    fn inline_dss(&self) -> InlineDss {
        InlineDss {
            data_ack: self.dss_data_ack,
            dsn: self.dss_dsn,
            ssn: self.dss_ssn,
            len: self.dss_len,
            checksum: self.dss_checksum,
            bits: self.dss_bits,
        }
    }
}

/// An MPTCP extension with a DSS option or none and no other option, as
/// `Option<Dss>` fields with presence bits.
#[derive(Clone, Copy, Debug, Default)]
struct InlineDss {
    data_ack: u64,
    dsn: u64,
    ssn: u32,
    len: u16,
    checksum: u16,
    bits: u8,
}

/// `ext` is `PacketExt::Mptcp` (else `PacketExt::None`).
const MPTCP: u8 = 1;
const HAS_DSS: u8 = 1 << 1;
const HAS_DATA_ACK: u8 = 1 << 2;
const HAS_MAPPING: u8 = 1 << 3;
const DATA_FIN: u8 = 1 << 4;
const ACK64: u8 = 1 << 5;
const DSN64: u8 = 1 << 6;
const HAS_CHECKSUM: u8 = 1 << 7;

impl InlineDss {
    /// The extension inline, if it has no part that needs the side table.
    fn of(ext: &PacketExt) -> Option<InlineDss> {
        let m = match ext {
            PacketExt::None => return Some(InlineDss::default()),
            PacketExt::Mptcp(m) if m.option == MpOption::None => m,
            _ => return None,
        };
        let Some(d) = m.dss else { return Some(InlineDss { bits: MPTCP, ..Default::default() }) };
        let bit = |on: bool, b: u8| if on { b } else { 0 };
        let map = d.mapping.unwrap_or_default();
        let bits = MPTCP
            | HAS_DSS
            | bit(d.data_ack.is_some(), HAS_DATA_ACK)
            | bit(d.mapping.is_some(), HAS_MAPPING)
            | bit(d.data_fin, DATA_FIN)
            | bit(d.ack64, ACK64)
            | bit(d.dsn64, DSN64)
            | bit(d.checksum.is_some(), HAS_CHECKSUM);
        Some(InlineDss {
            data_ack: d.data_ack.unwrap_or(0),
            dsn: map.dsn,
            ssn: map.ssn,
            len: map.len,
            checksum: d.checksum.unwrap_or(0),
            bits,
        })
    }

    fn ext(&self) -> PacketExt {
        if self.bits & MPTCP == 0 {
            return PacketExt::None;
        }
        let has = |b: u8| self.bits & b != 0;
        let dss = has(HAS_DSS).then(|| Dss {
            data_ack: has(HAS_DATA_ACK).then_some(self.data_ack),
            mapping: has(HAS_MAPPING).then_some(DssMapping { dsn: self.dsn, ssn: self.ssn, len: self.len }),
            data_fin: has(DATA_FIN),
            ack64: has(ACK64),
            dsn64: has(DSN64),
            checksum: has(HAS_CHECKSUM).then_some(self.checksum),
        });
        PacketExt::Mptcp(MptcpOpts { dss, option: MpOption::None })
    }
}

/// What a slot keeps out of line: SACK blocks, or an extension that
/// [`InlineDss`] cannot hold.
#[derive(Clone, Copy, Debug)]
struct Extra {
    sack: SackBlocks,
    ext: PacketExt,
}

#[derive(Default)]
pub struct PacketPool {
    slots: Vec<StoredPacket>,
    free: Vec<u32>,
    extras: Vec<Extra>,
    free_extras: Vec<u32>,
    sacks: Vec<SackBlocks>,
    free_sacks: Vec<u32>,
}

/// Puts `x` in a free entry of `table` (or a new one) and returns its index.
#[inline(always)]
fn put<T>(table: &mut Vec<T>, free: &mut Vec<u32>, x: T) -> u32 {
    if let Some(i) = free.pop() {
        table[i as usize] = x;
        i
    } else {
        table.push(x);
        table.len() as u32 - 1
    }
}

impl PacketPool {
    pub fn with_capacity(n: usize) -> Self {
        PacketPool { slots: Vec::with_capacity(n), free: Vec::with_capacity(n), ..Default::default() }
    }

    /// Copies `p` into a free slot (the header is copied once).
    pub fn alloc(&mut self, p: &Packet) -> PacketId {
        let slot = self.store(p);
        PacketId(put(&mut self.slots, &mut self.free, slot))
    }

    fn store(&mut self, p: &Packet) -> StoredPacket {
        let inline = InlineDss::of(&p.ext);
        let extra = match inline {
            Some(_) if p.sack == SackBlocks::default() => NO_EXTRA,
            Some(_) => put(&mut self.sacks, &mut self.free_sacks, p.sack),
            None => FULL | put(&mut self.extras, &mut self.free_extras, Extra { sack: p.sack, ext: p.ext }),
        };
        let d = inline.unwrap_or_default();
        StoredPacket {
            src: p.src,
            dst: p.dst,
            sport: p.sport,
            dport: p.dport,
            proto: p.proto,
            ecn: p.ecn,
            wire_bytes: p.wire_bytes,
            flags: p.flags,
            payload_bytes: p.payload_bytes,
            seq: p.seq,
            ack: p.ack,
            wnd_bytes: p.wnd_bytes,
            ts: p.ts,
            dss_data_ack: d.data_ack,
            dss_dsn: d.dsn,
            dss_ssn: d.ssn,
            dss_len: d.len,
            dss_checksum: d.checksum,
            dss_bits: d.bits,
            extra,
        }
    }

    /// Frees a slot without copying its packet out.
    pub fn free(&mut self, id: PacketId) {
        self.free_side(id);
        self.free.push(id.0);
    }

    fn free_side(&mut self, id: PacketId) {
        match self.slots[id.0 as usize].extra {
            NO_EXTRA => {}
            e if e & FULL != 0 => self.free_extras.push(e & !FULL),
            e => self.free_sacks.push(e),
        }
    }

    /// The fields a hop reads.
    pub fn get(&self, id: PacketId) -> &StoredPacket {
        &self.slots[id.0 as usize]
    }

    /// The whole header.
    pub fn packet(&self, id: PacketId) -> Packet {
        let s = &self.slots[id.0 as usize];
        let (sack, ext) = match s.extra {
            NO_EXTRA => (SackBlocks::default(), s.inline_dss().ext()),
            e if e & FULL != 0 => {
                let x = &self.extras[(e & !FULL) as usize];
                (x.sack, x.ext)
            }
            e => (self.sacks[e as usize], s.inline_dss().ext()),
        };
        Packet {
            src: s.src,
            dst: s.dst,
            sport: s.sport,
            dport: s.dport,
            proto: s.proto,
            flags: s.flags,
            seq: s.seq,
            ack: s.ack,
            wnd_bytes: s.wnd_bytes,
            sack,
            ts: s.ts,
            payload_bytes: s.payload_bytes,
            wire_bytes: s.wire_bytes,
            ext,
            ecn: s.ecn,
        }
    }

    /// Changes the packet in slot `id` (a router rewriting a header).
    pub fn update(&mut self, id: PacketId, change: impl FnOnce(&mut Packet)) {
        let mut p = self.packet(id);
        change(&mut p);
        self.free_side(id);
        self.slots[id.0 as usize] = self.store(&p);
    }

    /// Sets the ECN field (a queue marking CE), which is kept inline.
    pub fn set_ecn(&mut self, id: PacketId, ecn: IpEcn) {
        self.slots[id.0 as usize].ecn = ecn;
    }

    /// Returns the packet and frees its slot.
    pub fn take(&mut self, id: PacketId) -> Packet {
        let p = self.packet(id);
        self.free(id);
        p
    }

    /// Packets currently allocated.
    pub fn live(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// Slots ever allocated (the pool's high-water mark).
    pub fn capacity_used(&self) -> usize {
        self.slots.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mptcp::MAX_REMOVE_IDS;

    #[test]
    fn freed_slots_are_reused() {
        let mut pool = PacketPool::default();
        let a = pool.alloc(&Packet { seq: 1, ..Default::default() });
        let _b = pool.alloc(&Packet { seq: 2, ..Default::default() });
        assert_eq!(pool.take(a).seq, 1);
        let c = pool.alloc(&Packet { seq: 3, ..Default::default() });
        assert_eq!(c, a);
        assert_eq!(pool.live(), 2);
        assert_eq!(pool.capacity_used(), 2);
        pool.free(c);
        let d = pool.alloc(&Packet { seq: 4, ..Default::default() });
        assert_eq!((d, pool.packet(d).seq, pool.live()), (a, 4, 2));
    }

    #[test]
    fn a_slot_is_under_half_a_packet() {
        assert!(std::mem::size_of::<StoredPacket>() <= 88);
    }

    fn dss(data_ack: Option<u64>, mapping: Option<DssMapping>, flags: u8, checksum: Option<u16>) -> Dss {
        Dss { data_ack, mapping, data_fin: flags & 1 != 0, ack64: flags & 2 != 0, dsn64: flags & 4 != 0, checksum }
    }

    /// Every shape of header, inline or in the side table.
    fn packets() -> Vec<Packet> {
        let base = Packet {
            src: Addr(0x0a00_0001),
            dst: Addr(0x0a00_0102),
            sport: 4000,
            dport: 80,
            proto: Proto::Tcp,
            flags: TcpFlags(TcpFlags::ACK | TcpFlags::PSH),
            seq: 1 << 40,
            ack: 77,
            wnd_bytes: 1 << 33,
            sack: SackBlocks::default(),
            ts: Some(Timestamps { val_ms: 5, ecr_ms: 6 }),
            payload_bytes: 1400,
            wire_bytes: 1480,
            ext: PacketExt::None,
            ecn: IpEcn::Ect0,
        };
        let mut sack = SackBlocks::default();
        sack.push(10, 20);
        sack.push(30, 40);
        let map = Some(DssMapping { dsn: u64::MAX - 3, ssn: 9, len: 1400 });
        let mut out = vec![base, Packet { ts: None, ecn: IpEcn::Ce, sack, ..base }];
        // A SACK option truncated to fewer blocks than it holds keeps them.
        out.push(Packet { sack: SackBlocks { len: 1, ..sack }, ..base });
        out.push(Packet { sack: SackBlocks { len: 0, ..sack }, ..base });
        for flags in 0..8 {
            for (data_ack, mapping, checksum) in
                [(None, None, None), (Some(3), map, Some(0)), (Some(u64::MAX), None, Some(7)), (None, map, None)]
            {
                let d = dss(data_ack, mapping, flags, checksum);
                out.push(Packet { ext: PacketExt::Mptcp(MptcpOpts { dss: Some(d), option: MpOption::None }), ..base });
                let join = MpOption::JoinSyn { token: 1, nonce: 2, addr_id: 3, backup: true };
                out.push(Packet { ext: PacketExt::Mptcp(MptcpOpts { dss: Some(d), option: join }), sack, ..base });
            }
        }
        out.push(Packet { ext: PacketExt::Mptcp(MptcpOpts::default()), ..base });
        let remove = MpOption::RemoveAddr { ids: [1; MAX_REMOVE_IDS], n: 2 };
        out.push(Packet { ext: PacketExt::Mptcp(MptcpOpts { dss: None, option: remove }), ..base });
        out.push(Packet {
            proto: Proto::Sctp,
            ext: PacketExt::Sctp(crate::sctp::Chunk::Heartbeat { path: 1, sent_ps: 9 }),
            ..base
        });
        out
    }

    fn same(a: &Packet, b: &Packet) -> bool {
        format!("{a:?}") == format!("{b:?}")
    }

    #[test]
    fn every_header_comes_back_as_it_went_in() {
        let mut pool = PacketPool::default();
        let all = packets();
        let ids: Vec<PacketId> = all.iter().map(|p| pool.alloc(p)).collect();
        for (p, &id) in all.iter().zip(&ids) {
            assert!(same(&pool.packet(id), p), "{p:?}");
            assert_eq!((pool.get(id).dst, pool.get(id).wire_bytes), (p.dst, p.wire_bytes));
        }
        // Slots and side entries freed in any order are reused and stay apart.
        for &id in ids.iter().step_by(2) {
            pool.free(id);
        }
        let again: Vec<PacketId> = all.iter().rev().map(|p| pool.alloc(p)).collect();
        for (p, &id) in all.iter().rev().zip(&again) {
            assert!(same(&pool.packet(id), p), "{p:?}");
        }
        for (p, &id) in all.iter().zip(&ids).skip(1).step_by(2) {
            assert!(same(&pool.packet(id), p), "{p:?}");
        }
    }

    #[test]
    fn an_update_may_move_a_header_in_or_out_of_the_side_table() {
        let mut pool = PacketPool::default();
        let all = packets();
        let id = pool.alloc(&all[1]);
        pool.update(id, |p| *p = all[5]);
        assert!(same(&pool.packet(id), &all[5]));
        pool.update(id, |p| p.ext = PacketExt::None);
        assert!(matches!(pool.packet(id).ext, PacketExt::None));
        pool.set_ecn(id, IpEcn::Ce);
        assert_eq!(pool.take(id).ecn, IpEcn::Ce);
        assert_eq!(pool.live(), 0);
    }
}
