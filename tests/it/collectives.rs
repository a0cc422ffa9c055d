//! The collectives over real loopback TCP and through memory (ranks of one process): results for N = 1..4 on
//! awkward sizes, and every failure mode ending every rank with an error that names the peer, within the
//! deadline — each both ways.

use std::thread;
use std::time::{Duration, Instant};

use hearth::collective::{CollectiveError, Communicator, Coordinator, JobSecret, JoinOptions, LocalWorld};

/// `n` rank threads on two hosts (`host-0`, `host-1`) that each join and run `body`, exchanging values
/// through memory; each thread's result in thread order.
pub fn run_ranks<T: Send>(
    n: usize,
    timeout: Duration,
    body: impl Fn(usize, Result<Communicator, CollectiveError>) -> T + Sync,
) -> Vec<T> {
    run_ranks_sharing(true, n, timeout, body)
}

/// [`run_ranks`], through memory if `share_memory`, else over the ranks' loopback TCP links (as ranks in
/// different processes exchange).
fn run_ranks_sharing<T: Send>(
    share_memory: bool,
    n: usize,
    timeout: Duration,
    body: impl Fn(usize, Result<Communicator, CollectiveError>) -> T + Sync,
) -> Vec<T> {
    LocalWorld::new(n)
        .timeout(timeout)
        .hosts(|i| format!("host-{}", i % 2))
        .share_memory(share_memory)
        .run_joining(body)
        .unwrap()
}

/// A value each rank can compute for any rank: small integers, so f32 sums are exact.
fn value(rank: usize, i: usize) -> f32 {
    ((rank * 7 + i * 13) % 101) as f32
}

#[test]
fn allreduce_broadcast_allgather_and_barrier_for_one_to_four_ranks() {
    for (share_memory, n) in [true, false]
        .into_iter()
        .flat_map(|share| (1..=4).map(move |n| (share, n)))
    {
        for &len in &[0usize, 1, 3, 7, 1000, 300_007] {
            let results = run_ranks_sharing(share_memory, n, Duration::from_secs(30), move |_, comm| {
                let mut comm = comm.unwrap();
                let rank = comm.rank();
                let mut sum: Vec<f32> = (0..len).map(|i| value(rank, i)).collect();
                comm.allreduce_sum(&mut sum).unwrap();
                let mut shared: Vec<f32> = (0..len).map(|i| value(rank, i)).collect();
                comm.broadcast(&mut shared, n - 1).unwrap();
                let gathered = comm.allgather_bytes(format!("rank {rank}").as_bytes()).unwrap();
                comm.barrier().unwrap();
                let least = comm.min_u64(10 + rank as u64).unwrap();
                assert_eq!(comm.in_memory(), share_memory && n > 1, "n={n}");
                (rank, comm.world_size(), sum, shared, gathered, least)
            });
            let mut ranks: Vec<usize> = results.iter().map(|r| r.0).collect();
            ranks.sort();
            assert_eq!(ranks, (0..n).collect::<Vec<_>>(), "ranks are 0..{n}");
            for (rank, world, sum, shared, gathered, least) in results {
                assert_eq!(world, n);
                for (i, s) in sum.iter().enumerate() {
                    let want: f32 = (0..n).map(|r| value(r, i)).sum();
                    assert_eq!(*s, want, "memory {share_memory} n={n} len={len} rank={rank} index {i}");
                }
                assert!(
                    shared.iter().enumerate().all(|(i, v)| *v == value(n - 1, i)),
                    "broadcast n={n} len={len}"
                );
                let want: Vec<Vec<u8>> = (0..n).map(|r| format!("rank {r}").into_bytes()).collect();
                assert_eq!(gathered, want);
                assert_eq!(least, 10);
            }
        }
    }
}

#[test]
fn ranks_are_sorted_by_host() {
    let results = run_ranks(4, Duration::from_secs(30), |_, comm| {
        let comm = comm.unwrap();
        comm.peers()
            .iter()
            .map(|p| p.registration.host.clone())
            .collect::<Vec<_>>()
    });
    for hosts in results {
        assert_eq!(hosts, ["host-0", "host-0", "host-1", "host-1"]);
    }
}

#[test]
fn a_wrong_secret_is_refused_and_the_rendezvous_names_the_missing_rank() {
    let secret = JobSecret::generate();
    let timeout = Duration::from_secs(2);
    let coordinator = Coordinator::start("127.0.0.1:0".parse().unwrap(), 2, secret.clone(), timeout).unwrap();
    let address = coordinator.address();
    let honest = thread::spawn(move || {
        Communicator::join(
            address,
            &secret,
            &JoinOptions {
                timeout,
                ..JoinOptions::default()
            },
        )
    });
    let intruder = Communicator::join(
        address,
        &JobSecret::generate(),
        &JoinOptions {
            timeout,
            ..JoinOptions::default()
        },
    );
    let started = Instant::now();
    let honest = honest.join().unwrap();
    assert!(matches!(intruder, Err(CollectiveError::Auth { .. })), "{intruder:?}");
    let error = honest.unwrap_err().to_string();
    assert!(error.contains("1 of 2 ranks registered; missing 1"), "{error}");
    assert!(coordinator.wait().is_err());
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn a_killed_peer_fails_every_rank_naming_it() {
    for share_memory in [true, false] {
        let timeout = Duration::from_secs(5);
        let started = Instant::now();
        let results = run_ranks_sharing(share_memory, 3, timeout, |_, comm| {
            let mut comm = comm.unwrap();
            let mut values = vec![1.0f32; 100_000];
            comm.allreduce_sum(&mut values).unwrap();
            if comm.rank() == 1 {
                return (1, None); // rank 1 dies: its links close
            }
            let error = comm.allreduce_sum(&mut values).unwrap_err();
            let after = comm.barrier().unwrap_err();
            (comm.rank(), Some((error.to_string(), after.to_string())))
        });
        assert!(
            started.elapsed() < timeout,
            "failures arrive before the deadline, not at it"
        );
        for (rank, outcome) in results {
            if let Some((error, after)) = outcome {
                assert!(
                    error.contains(&format!("allreduce #2 on rank {rank}: peer rank")),
                    "{error}"
                );
                assert!(
                    error.contains("closed the connection") || error.contains("dropped the connection"),
                    "{error}"
                );
                assert!(after.contains("closed after an earlier failure"), "{after}");
            }
        }
    }
}

#[test]
fn a_stalled_peer_fails_every_rank_within_the_deadline() {
    for share_memory in [true, false] {
        let timeout = Duration::from_secs(2);
        let started = Instant::now();
        let results = run_ranks_sharing(share_memory, 3, timeout, |_, comm| {
            let mut comm = comm.unwrap();
            if comm.rank() == 1 {
                thread::sleep(Duration::from_secs(4)); // stalls past everyone's deadline
                return (1, String::new());
            }
            let mut values = vec![1.0f32; 1000];
            (comm.rank(), comm.allreduce_sum(&mut values).unwrap_err().to_string())
        });
        assert!(started.elapsed() < Duration::from_secs(6));
        for (rank, error) in results {
            match rank {
                1 => {}
                2 => assert!(error.contains("peer rank 1 (host-0) missed the deadline"), "{error}"),
                _ => assert!(error.contains(&format!("allreduce #1 on rank {rank}")), "{error}"),
            }
        }
    }
}

#[test]
fn a_peer_sending_garbage_fails_every_rank_naming_it() {
    for share_memory in [true, false] {
        let timeout = Duration::from_secs(5);
        let started = Instant::now();
        let results = run_ranks_sharing(share_memory, 3, timeout, |_, comm| {
            let mut comm = comm.unwrap();
            // Rank 1 disagrees about the length: its header and data are garbage to rank 2.
            let mut values = vec![1.0f32; if comm.rank() == 1 { 10 } else { 100_000 }];
            (comm.rank(), comm.allreduce_sum(&mut values).unwrap_err().to_string())
        });
        assert!(started.elapsed() < timeout, "failures arrive before the deadline");
        for (rank, error) in results {
            assert!(error.contains(&format!("allreduce #1 on rank {rank}")), "{error}");
            if rank == 2 {
                assert!(
                    error.contains("peer rank 1 (host-0) sent garbage: expected allreduce #1 of 100000 values, got allreduce #1 of 10 values"),
                    "{error}"
                );
            }
        }
    }
}
