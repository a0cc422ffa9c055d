//! Whose process is at the other end of a TCP connection, when that process runs on this machine. Linux's
//! socket tables (`/proc/net/tcp` and `/proc/net/tcp6`) list every socket of this network namespace with the
//! user that owns it, so a server can tell a connection of another local user from one of its own user's —
//! which a token cannot: a token another user read from a file, or from a process's command line, proves the
//! secret all the same. A connection from another host is not in the tables, and is left to its token.
//!
//! ```
//! use std::net::TcpListener;
//!
//! let server = TcpListener::bind("127.0.0.1:0").unwrap();
//! let client = std::net::TcpStream::connect(server.local_addr().unwrap()).unwrap();
//! let (accepted, peer) = server.accept().unwrap();
//! // This process's own connection: its user is this process's user.
//! assert_eq!(hearth_common::peers::other_local_user(peer, accepted.local_addr().unwrap()), None);
//! # drop(client);
//! ```

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use nix::unistd::geteuid;

/// The user of a process on this machine at the other end of a connection accepted from `peer` on `local`
/// that is neither this process's user nor root (who may read this user's secret anyway); `None` when the
/// peer is this user's, root's, or not on this machine.
pub fn other_local_user(peer: SocketAddr, local: SocketAddr) -> Option<u32> {
    let user = local_peer_user(peer, local)?;
    let me = geteuid().as_raw();
    (user != me && user != 0).then_some(user)
}

/// The user owning the socket at `peer` connected to `local`, when it is in this machine's socket tables.
pub fn local_peer_user(peer: SocketAddr, local: SocketAddr) -> Option<u32> {
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().find_map(|table| {
        let text = std::fs::read_to_string(table).ok()?;
        text.lines().skip(1).find_map(|line| socket_user(line, peer, local))
    })
}

/// The user of the socket a line of a socket table describes, when its local end is `peer` and its remote end
/// `local` (the connection seen from the client's side).
fn socket_user(line: &str, peer: SocketAddr, local: SocketAddr) -> Option<u32> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let (own, remote, user) = (fields.get(1)?, fields.get(2)?, fields.get(7)?);
    (same_address(own, peer)? && same_address(remote, local)?).then(|| user.parse().ok())?
}

/// Whether a socket table's `ADDRESS:PORT` (hexadecimal, the address in the kernel's byte order) is `address`,
/// an IPv4 address matching its IPv6-mapped form too; `None` when the text is malformed.
fn same_address(text: &str, address: SocketAddr) -> Option<bool> {
    let (ip, port) = text.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let ip = match ip.len() {
        8 => IpAddr::V4(Ipv4Addr::from(u32::from_str_radix(ip, 16).ok()?.to_ne_bytes())),
        32 => {
            let mut bytes = [0u8; 16];
            for (word, chunk) in bytes.chunks_mut(4).enumerate() {
                let value = u32::from_str_radix(ip.get(word * 8..word * 8 + 8)?, 16).ok()?;
                chunk.copy_from_slice(&value.to_ne_bytes());
            }
            IpAddr::V6(Ipv6Addr::from(bytes))
        }
        _ => return None,
    };
    Some(port == address.port() && canonical(ip) == canonical(address.ip()))
}

/// `ip`, an IPv6-mapped IPv4 address as the IPv4 address it maps.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use std::net::{TcpListener, TcpStream};

    use super::*;

    #[test]
    fn a_table_line_names_the_user_of_the_clients_socket() {
        // 127.0.0.1:50000 connected to 127.0.0.1:8080, owned by user 1000, as an x86 kernel prints it.
        let line = "   3: 0100007F:C350 0100007F:1F90 01 00000000:00000000 00:00000000 00000000  1000        0 4242 1";
        let (peer, local) = ("127.0.0.1:50000".parse().unwrap(), "127.0.0.1:8080".parse().unwrap());
        if cfg!(target_endian = "little") {
            assert_eq!(socket_user(line, peer, local), Some(1000));
        }
        assert_eq!(
            socket_user(line, local, peer),
            None,
            "the server's side of it is not the client's"
        );
        assert_eq!(socket_user("garbage", peer, local), None);
    }

    #[test]
    fn this_processs_own_connection_is_its_own_users() {
        let server = TcpListener::bind("127.0.0.1:0").unwrap();
        let _client = TcpStream::connect(server.local_addr().unwrap()).unwrap();
        let (accepted, peer) = server.accept().unwrap();
        let local = accepted.local_addr().unwrap();
        assert_eq!(local_peer_user(peer, local), Some(geteuid().as_raw()));
        assert_eq!(other_local_user(peer, local), None);
    }
}
