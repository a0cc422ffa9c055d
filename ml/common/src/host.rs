//! This machine as the network sees it: its host name, and its address on the route to a peer.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};

/// This machine's host name (`localhost` when it cannot be read).
///
/// ```
/// assert!(!hearth_common::host::host_name().is_empty());
/// ```
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|name| name.trim().to_string())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

/// The address of this machine's interface that routes to `peer` (no packet is sent), or `None` when
/// there is no route. Listening there lets the peer connect without listening on every interface.
///
/// ```
/// use std::net::{IpAddr, Ipv4Addr, SocketAddr};
/// let loopback = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 9);
/// assert_eq!(hearth_common::host::address_towards(loopback), Some(IpAddr::V4(Ipv4Addr::LOCALHOST)));
/// ```
pub fn address_towards(peer: SocketAddr) -> Option<IpAddr> {
    let unspecified = if peer.is_ipv4() {
        IpAddr::V4(Ipv4Addr::UNSPECIFIED)
    } else {
        IpAddr::V6(Ipv6Addr::UNSPECIFIED)
    };
    let socket = UdpSocket::bind((unspecified, 0)).ok()?;
    socket.connect(peer).ok()?;
    Some(socket.local_addr().ok()?.ip())
}
