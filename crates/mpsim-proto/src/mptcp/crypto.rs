//! Keys, tokens, IDSNs, HMACs and the DSS checksum (spec section 2).
//!
//! Pure functions used by the MPTCP connection (token and IDSN derivation,
//! MP_JOIN and ADD_ADDR authentication) and by the pcap writer (so the
//! files it writes authenticate in Wireshark). Every integer enters the hash
//! big-endian, as it is on the wire (RFC 8684 section 3.1).

use hmac::{Hmac, Mac};
use mpsim_core::checksum::{fold, sum_be16};
use sha1::Sha1;
use sha2::{Digest, Sha256};

/// Token and IDSN of a v1 key: the most significant 32 bits and the least
/// significant 64 bits of SHA-256(key) (RFC 8684 section 3.1).
pub fn token_idsn_v1(key: u64) -> (u32, u64) {
    let digest = Sha256::digest(key.to_be_bytes());
    (be_u32(&digest[0..4]), be_u64(&digest[24..32]))
}

/// Token and IDSN of a v0 key: the same with SHA-1 (RFC 6824 section 3.1).
pub fn token_idsn_v0(key: u64) -> (u32, u64) {
    let digest = Sha1::digest(key.to_be_bytes());
    (be_u32(&digest[0..4]), be_u64(&digest[12..20]))
}

/// MP_JOIN SYN/ACK HMAC sent by the responder B (v1, HMAC-SHA256):
/// key = Key_B‖Key_A, msg = R_B‖R_A, leftmost 64 bits (RFC 8684 section 3.2).
pub fn join_synack_hmac64(key_b: u64, key_a: u64, r_b: u32, r_a: u32) -> u64 {
    let mac = hmac_sha256(&key_pair(key_b, key_a), &nonce_pair(r_b, r_a));
    be_u64(&mac[0..8])
}

/// MP_JOIN third-ACK HMAC sent by the initiator A (v1, HMAC-SHA256):
/// key = Key_A‖Key_B, msg = R_A‖R_B, leftmost 160 bits.
pub fn join_ack_hmac160(key_a: u64, key_b: u64, r_a: u32, r_b: u32) -> [u8; 20] {
    let mac = hmac_sha256(&key_pair(key_a, key_b), &nonce_pair(r_a, r_b));
    leftmost_160(&mac)
}

/// v0 (HMAC-SHA1) form of [`join_synack_hmac64`] (RFC 6824 section 3.2).
pub fn join_synack_hmac64_v0(key_b: u64, key_a: u64, r_b: u32, r_a: u32) -> u64 {
    let mac = hmac_sha1(&key_pair(key_b, key_a), &nonce_pair(r_b, r_a));
    be_u64(&mac[0..8])
}

/// v0 (HMAC-SHA1) form of [`join_ack_hmac160`]: the whole SHA-1 output.
pub fn join_ack_hmac160_v0(key_a: u64, key_b: u64, r_a: u32, r_b: u32) -> [u8; 20] {
    let mac = hmac_sha1(&key_pair(key_a, key_b), &nonce_pair(r_a, r_b));
    leftmost_160(&mac)
}

/// ADD_ADDR HMAC (v1 only) of an IPv4 address sent by host S to peer P:
/// key = Key_S‖Key_P, msg = address id ‖ address ‖ port (0 when absent),
/// rightmost 64 bits (RFC 8684 section 3.4.1; Linux's later fix).
pub fn add_addr_hmac64(key_sender: u64, key_peer: u64, addr_id: u8, addr: u32, port: Option<u16>) -> u64 {
    let mut msg = [0u8; 7];
    msg[0] = addr_id;
    msg[1..5].copy_from_slice(&addr.to_be_bytes());
    msg[5..7].copy_from_slice(&port.unwrap_or(0).to_be_bytes());
    let mac = hmac_sha256(&key_pair(key_sender, key_peer), &msg);
    be_u64(&mac[24..32])
}

/// DSS checksum (RFC 8684 section 3.3.1): the Internet checksum (RFC 1071)
/// over the pseudo-header DSN (64, full) ‖ relative SSN (32) ‖ data-level
/// length (16) ‖ zero (16), followed by the mapped payload. Zero payload
/// bytes add nothing to the sum, so a caller without real bytes may pass
/// an empty slice for a zero-filled payload.
pub fn dss_checksum(dsn: u64, ssn: u32, len: u16, payload: &[u8]) -> u16 {
    !fold(dss_sum(dsn, ssn, len, payload))
}

/// Whether a received DSS checksum is right: the sum over the same bytes with
/// the checksum added in is 0xFFFF (0 after complement).
pub fn dss_checksum_ok(dsn: u64, ssn: u32, len: u16, payload: &[u8], checksum: u16) -> bool {
    fold(dss_sum(dsn, ssn, len, payload) + checksum as u64) == 0xffff
}

/// Unfolded one's-complement sum of the DSS pseudo-header and payload.
fn dss_sum(dsn: u64, ssn: u32, len: u16, payload: &[u8]) -> u64 {
    let mut header = [0u8; 16];
    header[0..8].copy_from_slice(&dsn.to_be_bytes());
    header[8..12].copy_from_slice(&ssn.to_be_bytes());
    header[12..14].copy_from_slice(&len.to_be_bytes());
    // Both parts have even length before the payload, so summing them
    // separately pairs bytes exactly as summing the concatenation would.
    sum_be16(&header) + sum_be16(payload)
}

fn key_pair(first: u64, second: u64) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&first.to_be_bytes());
    k[8..].copy_from_slice(&second.to_be_bytes());
    k
}

fn nonce_pair(first: u32, second: u32) -> [u8; 8] {
    let mut m = [0u8; 8];
    m[..4].copy_from_slice(&first.to_be_bytes());
    m[4..].copy_from_slice(&second.to_be_bytes());
    m
}

fn hmac_sha256(key: &[u8], msg: &[u8]) -> [u8; 32] {
    // HMAC accepts keys of any length (RFC 2104), so this cannot fail.
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(msg);
    mac.finalize().into_bytes().into()
}

fn hmac_sha1(key: &[u8], msg: &[u8]) -> [u8; 20] {
    // HMAC accepts keys of any length (RFC 2104), so this cannot fail.
    let mut mac = Hmac::<Sha1>::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(msg);
    mac.finalize().into_bytes().into()
}

fn leftmost_160(mac: &[u8]) -> [u8; 20] {
    let mut out = [0u8; 20];
    out.copy_from_slice(&mac[..20]);
    out
}

/// Callers pass slices of exactly 4 bytes.
fn be_u32(b: &[u8]) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(b);
    u32::from_be_bytes(a)
}

/// Callers pass slices of exactly 8 bytes.
fn be_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    u64::from_be_bytes(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY_A: u64 = 0x0123_4567_89ab_cdef;
    const KEY_B: u64 = 0xfedc_ba98_7654_3210;
    const R_A: u32 = 0x0102_0304;
    const R_B: u32 = 0x0a0b_0c0d;
    /// 10.0.2.1
    const ADDR: u32 = 0x0a00_0201;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn v1_token_and_idsn_match_the_spec_vectors() {
        assert_eq!(token_idsn_v1(KEY_A), (0x55c5_3f5d, 0x5707_62cd_38be_9818));
        assert_eq!(token_idsn_v1(KEY_B), (0x18f9_781b, 0x2808_18bf_0fa7_e28e));
        assert_eq!(token_idsn_v1(KEY_A).0, 1_438_990_173);
        assert_eq!(token_idsn_v1(KEY_B).0, 419_002_395);
    }

    #[test]
    fn v1_token_and_idsn_are_the_ends_of_the_sha256_digest() {
        let digest = Sha256::digest(KEY_A.to_be_bytes());
        assert_eq!(hex(&digest), "55c53f5d490297900cefa825d0c8e8e9532ee8a118abe7d8570762cd38be9818");
        let digest = Sha256::digest(KEY_B.to_be_bytes());
        assert_eq!(hex(&digest), "18f9781b1b2c2d85dc80ea6af8a7acf9bf1911a768411d39280818bf0fa7e28e");
    }

    #[test]
    fn v0_token_and_idsn_match_the_spec_vectors() {
        assert_eq!(token_idsn_v0(KEY_A), (0x0ca2_eadb, 0xe3df_8ee1_21f1_0547));
        assert_eq!(token_idsn_v0(KEY_B), (0xa5be_6871, 0x334f_c234_bee4_95ca));
    }

    #[test]
    fn join_synack_hmac_matches_the_spec_vector() {
        assert_eq!(join_synack_hmac64(KEY_B, KEY_A, R_B, R_A), 0x7601_3712_c04b_d2bc);
    }

    #[test]
    fn join_third_ack_hmac_matches_the_spec_vector() {
        let mac = join_ack_hmac160(KEY_A, KEY_B, R_A, R_B);
        assert_eq!(hex(&mac), "485803b6956a2ed7fdb8458e5e9b644774ec1b24");
    }

    #[test]
    fn join_synack_hmac_is_the_start_of_the_third_ack_hmac_with_roles_swapped() {
        // Same HMAC construction, so B's truncated HMAC is the first 8 bytes of
        // the full HMAC A would compute with B's role.
        let full = join_ack_hmac160(KEY_B, KEY_A, R_B, R_A);
        assert_eq!(join_synack_hmac64(KEY_B, KEY_A, R_B, R_A), be_u64(&full[..8]));
        let full_v0 = join_ack_hmac160_v0(KEY_B, KEY_A, R_B, R_A);
        assert_eq!(join_synack_hmac64_v0(KEY_B, KEY_A, R_B, R_A), be_u64(&full_v0[..8]));
    }

    #[test]
    fn v0_join_hmacs_use_sha1() {
        let mut mac = Hmac::<Sha1>::new_from_slice(&key_pair(KEY_A, KEY_B)).expect("any key length");
        mac.update(&nonce_pair(R_A, R_B));
        let expected: [u8; 20] = mac.finalize().into_bytes().into();
        assert_eq!(join_ack_hmac160_v0(KEY_A, KEY_B, R_A, R_B), expected);
        assert_ne!(join_ack_hmac160_v0(KEY_A, KEY_B, R_A, R_B), join_ack_hmac160(KEY_A, KEY_B, R_A, R_B));
    }

    #[test]
    fn add_addr_hmac_without_port_matches_the_spec_vector() {
        assert_eq!(add_addr_hmac64(KEY_B, KEY_A, 1, ADDR, None), 0xe031_87b7_143a_0a2b);
    }

    #[test]
    fn add_addr_hmac_with_port_matches_the_spec_vector() {
        assert_eq!(add_addr_hmac64(KEY_B, KEY_A, 1, ADDR, Some(10100)), 0xec29_6a59_1bb3_d6f9);
    }

    #[test]
    fn add_addr_hmac_treats_a_missing_port_as_port_zero() {
        assert_eq!(add_addr_hmac64(KEY_B, KEY_A, 1, ADDR, None), add_addr_hmac64(KEY_B, KEY_A, 1, ADDR, Some(0)));
    }

    #[test]
    fn dss_checksum_matches_the_spec_vector() {
        let dsn = token_idsn_v1(KEY_A).1 + 1;
        assert_eq!(dsn, 0x5707_62cd_38be_9819);
        assert_eq!(dss_checksum(dsn, 1, 14, b"hello, mptcp!!"), 0x1bd3);
    }

    #[test]
    fn dss_checksum_verifies_and_rejects_a_flipped_bit() {
        let dsn = 0x5707_62cd_38be_9819;
        assert!(dss_checksum_ok(dsn, 1, 14, b"hello, mptcp!!", 0x1bd3));
        assert!(!dss_checksum_ok(dsn, 1, 14, b"hello, mptcp!?", 0x1bd3));
        assert!(!dss_checksum_ok(dsn, 2, 14, b"hello, mptcp!!", 0x1bd3));
    }

    #[test]
    fn dss_checksum_pads_an_odd_payload_with_zero() {
        let odd = dss_checksum(7, 1, 3, b"abc");
        let padded = dss_checksum(7, 1, 3, b"abc\0");
        assert_eq!(odd, padded);
        assert!(dss_checksum_ok(7, 1, 3, b"abc", odd));
    }

    #[test]
    fn dss_checksum_of_zero_payload_equals_that_of_no_payload() {
        assert_eq!(dss_checksum(1 << 40, 1, 1000, &[0u8; 1000]), dss_checksum(1 << 40, 1, 1000, &[]));
    }
}
