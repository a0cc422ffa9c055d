//! A world of ranks inside one process: a coordinator on loopback and one thread per rank, exchanging values
//! through memory (or over their loopback TCP links, when asked). What tests, benchmarks and examples use to
//! run collective code without a cluster.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::thread;
use std::time::Duration;

use super::auth::JobSecret;
use super::error::Result;
use super::frames::FrameProtection;
use super::rendezvous::Coordinator;
use super::ring::{Communicator, JoinOptions};

type HostOf = dyn Fn(usize) -> String + Send + Sync;

/// `size` ranks as threads of this process, joined through a coordinator on `127.0.0.1`.
///
/// Thread `i` registers at position `i`, so with one host thread `i` is rank `i`.
///
/// ```
/// use hearth_collective::LocalWorld;
///
/// let sums = LocalWorld::new(3)
///     .run(|mut comm| {
///         let mut values = vec![comm.rank() as f32; 4];
///         comm.allreduce_sum(&mut values).map(|()| values)
///     })
///     .unwrap();
/// assert!(sums.into_iter().all(|s| s.unwrap() == vec![3.0; 4]));
/// ```
pub struct LocalWorld {
    size: usize,
    timeout: Duration,
    host: Box<HostOf>,
    protection: FrameProtection,
    share_memory: bool,
}

impl LocalWorld {
    /// A world of `size` ranks on host `localhost`, with a 60-second deadline on the rendezvous and every
    /// operation.
    pub fn new(size: usize) -> Self {
        Self {
            size,
            timeout: Duration::from_secs(60),
            host: Box::new(|_| "localhost".to_string()),
            protection: FrameProtection::default(),
            share_memory: true,
        }
    }

    /// The deadline of the rendezvous and of every operation.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The host name thread `i` reports (ranks are sorted by host).
    pub fn hosts(mut self, host: impl Fn(usize) -> String + Send + Sync + 'static) -> Self {
        self.host = Box::new(host);
        self
    }

    /// How the ranks' links protect their frames (encrypted unless told otherwise).
    pub fn frame_protection(mut self, protection: FrameProtection) -> Self {
        self.protection = protection;
        self
    }

    /// Whether the ranks exchange values through memory (the default) or over their TCP links, as ranks in
    /// different processes do.
    ///
    /// ```
    /// use hearth_collective::LocalWorld;
    ///
    /// let over_tcp = LocalWorld::new(2).share_memory(false).run(|comm| comm.in_memory()).unwrap();
    /// assert_eq!(over_tcp, [false, false]);
    /// ```
    pub fn share_memory(mut self, share: bool) -> Self {
        self.share_memory = share;
        self
    }

    /// Runs `task` on every rank and returns the results in rank order. Fails if the coordinator cannot
    /// start or a rank cannot join.
    pub fn run<T: Send>(&self, task: impl Fn(Communicator) -> T + Sync) -> Result<Vec<T>> {
        let joined = self.run_joining(|_, comm| comm.map(|comm| (comm.rank(), task(comm))))?;
        let mut ranked = joined.into_iter().collect::<Result<Vec<_>>>()?;
        ranked.sort_by_key(|(rank, _)| *rank);
        Ok(ranked.into_iter().map(|(_, result)| result).collect())
    }

    /// Runs `task` on every thread with its index and the outcome of its join (so a test can see a join
    /// fail); returns the results in thread order.
    pub fn run_joining<T: Send>(&self, task: impl Fn(usize, Result<Communicator>) -> T + Sync) -> Result<Vec<T>> {
        let secret = JobSecret::generate().with_protection(self.protection);
        let loopback = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0);
        let coordinator = Coordinator::start(loopback, self.size, secret.clone(), self.timeout)?;
        let address = coordinator.address();
        let results = thread::scope(|s| {
            let threads: Vec<_> = (0..self.size)
                .map(|i| {
                    let options = JoinOptions {
                        host: (self.host)(i),
                        position: i,
                        timeout: self.timeout,
                        share_memory: self.share_memory,
                        ..JoinOptions::default()
                    };
                    let (secret, task) = (&secret, &task);
                    s.spawn(move || task(i, Communicator::join(address, secret, &options)))
                })
                .collect();
            threads
                .into_iter()
                .map(|t| t.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
                .collect()
        });
        drop(coordinator);
        Ok(results)
    }
}
