//! pcap capture of chosen interfaces with real TCP and MPTCP option bytes.
