//! The Internet checksum (RFC 1071), shared by the MPTCP DSS checksum and
//! the pcap writer's IP, TCP and UDP headers.

/// Sum of big-endian 16-bit words; an odd last byte is padded with zero.
/// Sums of even-length parts add up to the sum of their concatenation. A
/// u64 accumulator cannot overflow for any slice that fits in memory.
pub fn sum_be16(bytes: &[u8]) -> u64 {
    let mut chunks = bytes.chunks_exact(2);
    let mut sum: u64 = chunks.by_ref().map(|w| u16::from_be_bytes([w[0], w[1]]) as u64).sum();
    if let [last] = chunks.remainder() {
        sum += (*last as u64) << 8;
    }
    sum
}

/// Folds the carries of a one's-complement sum into 16 bits.
pub fn fold(mut sum: u64) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1071_example_sums_to_ddf2() {
        // RFC 1071 section 3: 00 01 f2 03 f4 f5 f6 f7 -> folded sum 0xddf2.
        assert_eq!(fold(sum_be16(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7])), 0xddf2);
    }

    #[test]
    fn an_odd_byte_is_padded() {
        assert_eq!(sum_be16(&[0x12]), 0x1200);
    }
}
