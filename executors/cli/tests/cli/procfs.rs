//! What `/proc` says of this machine's processes and TCP sockets, and dropping a connection (`ss -K`).

use std::collections::{BTreeSet, HashSet};
use std::path::Path;
use std::process::Command;

use crate::common::alive;

/// A process's NUL-separated `/proc` file (`cmdline`, `environ`).
pub(crate) fn proc_strings(pid: u64, file: &str) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/{file}"))
        .unwrap_or_default()
        .split(|&b| b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect()
}

/// Live processes among `pids`, or whose command line names one of `marks` (a run's directories).
pub(crate) fn processes_of(pids: &BTreeSet<u64>, marks: &[&Path]) -> Vec<(u64, String)> {
    let marks: Vec<String> = marks.iter().map(|m| m.display().to_string()).collect();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u64>().ok())
        .filter(|&pid| pid != u64::from(std::process::id()) && alive(pid))
        .filter_map(|pid| {
            let line = proc_strings(pid, "cmdline").join(" ");
            let ours = pids.contains(&pid) && line.contains("hearth");
            (ours || marks.iter().any(|m| line.contains(m.as_str()))).then_some((pid, line))
        })
        .collect()
}

/// One row of the machine's TCP tables.
pub(crate) struct Socket {
    pub(crate) local_port: u16,
    pub(crate) remote_port: u16,
    pub(crate) listening: bool,
    pub(crate) established: bool,
    pub(crate) inode: u64,
}

/// Every TCP socket of this machine (IPv4 and IPv6).
pub(crate) fn sockets() -> Vec<Socket> {
    let port = |address: &str| u16::from_str_radix(address.rsplit(':').next()?, 16).ok();
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|table| std::fs::read_to_string(table).ok())
        .flat_map(|text| {
            text.lines()
                .skip(1)
                .filter_map(|line| {
                    let fields: Vec<&str> = line.split_whitespace().collect();
                    Some(Socket {
                        local_port: port(fields.get(1)?)?,
                        remote_port: port(fields.get(2)?)?,
                        listening: *fields.get(3)? == "0A",
                        established: *fields.get(3)? == "01",
                        inode: fields.get(9)?.parse().ok()?,
                    })
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The socket inodes processes `pids` hold.
pub(crate) fn socket_inodes(pids: &BTreeSet<u64>) -> HashSet<u64> {
    pids.iter()
        .filter_map(|pid| std::fs::read_dir(format!("/proc/{pid}/fd")).ok())
        .flat_map(Iterator::flatten)
        .filter_map(|fd| {
            let target = std::fs::read_link(fd.path()).ok()?;
            let target = target.to_str()?;
            target.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
        })
        .collect()
}

/// The ports processes `pids` listen on.
pub(crate) fn listening_ports(pids: &BTreeSet<u64>) -> BTreeSet<u16> {
    let inodes = socket_inodes(pids);
    sockets()
        .into_iter()
        .filter(|s| s.listening && inodes.contains(&s.inode))
        .map(|s| s.local_port)
        .collect()
}

/// Drops (`ss -K`, both ends) one connection between two ranks: a connection between two executors on
/// none of the ports Ballista listens on (so not shuffle data or task calls, but a collective's link).
/// Returns its two ports.
pub(crate) fn drop_a_rank_link(executors: &[u64], ballista_ports: &BTreeSet<u16>) -> Option<(u16, u16)> {
    let executors: BTreeSet<u64> = executors.iter().copied().collect();
    let inodes = socket_inodes(&executors);
    let sockets = sockets();
    let ends: HashSet<u16> = sockets
        .iter()
        .filter(|s| s.established && inodes.contains(&s.inode))
        .map(|s| s.local_port)
        .collect();
    let link = sockets.iter().find(|s| {
        s.established
            && inodes.contains(&s.inode)
            && ends.contains(&s.remote_port)
            && !ballista_ports.contains(&s.local_port)
            && !ballista_ports.contains(&s.remote_port)
    })?;
    let (a, b) = (link.local_port, link.remote_port);
    let filter = format!("( sport = :{a} and dport = :{b} ) or ( sport = :{b} and dport = :{a} )");
    let killed = Command::new("ss").args(["-K", "-t", &filter]).output().ok()?;
    // `ss -K` without the right to destroy sockets says nothing: the connection must be gone.
    let gone = !self::sockets()
        .iter()
        .any(|s| s.established && s.local_port == a && s.remote_port == b);
    (killed.status.success() && gone).then_some((a, b))
}
