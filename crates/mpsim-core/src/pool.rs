//! A slab of packets addressed by index, so queues and in-flight FIFOs move
//! 4-byte handles and the per-packet path allocates nothing once warm.

use crate::packet::Packet;

/// Handle to a packet in a [`PacketPool`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketId(pub u32);

#[derive(Default)]
pub struct PacketPool {
    slots: Vec<Packet>,
    free: Vec<u32>,
}

impl PacketPool {
    pub fn with_capacity(n: usize) -> Self {
        PacketPool { slots: Vec::with_capacity(n), free: Vec::with_capacity(n) }
    }

    /// Copies `p` into a free slot (the header is copied once).
    pub fn alloc(&mut self, p: &Packet) -> PacketId {
        if let Some(i) = self.free.pop() {
            self.slots[i as usize] = *p;
            PacketId(i)
        } else {
            self.slots.push(*p);
            PacketId(self.slots.len() as u32 - 1)
        }
    }

    /// Frees a slot without copying its packet out.
    pub fn free(&mut self, id: PacketId) {
        self.free.push(id.0);
    }

    pub fn get(&self, id: PacketId) -> &Packet {
        &self.slots[id.0 as usize]
    }

    pub fn get_mut(&mut self, id: PacketId) -> &mut Packet {
        &mut self.slots[id.0 as usize]
    }

    /// Returns the packet and frees its slot.
    pub fn take(&mut self, id: PacketId) -> Packet {
        self.free.push(id.0);
        self.slots[id.0 as usize]
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
        assert_eq!((d, pool.get(d).seq, pool.live()), (a, 4, 2));
    }
}
