//! Keys, tokens, IDSNs, HMACs and the DSS checksum (spec section 2).
