//! Gradients averaged on the GPUs: NCCL between ranks whose buffers all live on CUDA devices.
//!
//! NCCL is loaded when a job first asks for it (cudarc's dynamic loading: `libnccl.so` on the loader's path;
//! hearth's CUDA install links it there from the NCCL wheel libtorch brings), so the same binary runs where there
//! is none. Every rank votes — on a CUDA device, and NCCL loaded — through the [`Communicator`]; only when
//! every vote is yes does rank 0 make NCCL's unique id, send it to the others over the job's authenticated
//! links, and every rank join the NCCL communicator. Otherwise, the host ring stays (CPU ranks, mixed fleets,
//! no NCCL), and the job's log says why.
//!
//! Operations are queued on the device's default stream, libtorch's own, so they run after the backward pass
//! that filled the buffer and before the optimizer step that reads it, with no wait on the host.

use std::ffi::c_void;
use std::time::{Duration, Instant};

use cudarc::driver::result::{DriverError, event};
use cudarc::driver::sys as sys_driver;

use cudarc::nccl::{result, sys};

use super::Communicator;
use super::error::{CollectiveError, Result};

/// One rank's say in whether the job's gradients go through NCCL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NcclVote {
    /// This rank's buffers are on CUDA device `ordinal`, and NCCL loaded.
    Ready {
        /// The rank's CUDA device.
        ordinal: usize,
    },
    /// Not this rank, and why (on the CPU, NCCL not found).
    Not(String),
}

impl NcclVote {
    /// This rank's vote: on `cuda_ordinal` (none on the CPU), whether NCCL loads here, and whether the device
    /// can be made this thread's current one (NCCL joins the current device): anything that can fail before
    /// NCCL's own set-up fails here, so that every rank knows of it before any waits in NCCL.
    pub fn of(cuda_ordinal: Option<usize>) -> Self {
        let Some(ordinal) = cuda_ordinal else {
            return Self::Not("trains on the CPU".into());
        };
        // SAFETY: only tries to load the library by its names; nothing is called in it.
        if !unsafe { sys::is_culib_present() } {
            return Self::Not("found no NCCL library (libnccl.so) on the loader's path".into());
        }
        match cudarc::driver::CudaContext::new(ordinal).and_then(|context| context.bind_to_thread()) {
            Ok(()) => Self::Ready { ordinal },
            Err(e) => Self::Not(format!("could not make cuda:{ordinal} its current device: {e}")),
        }
    }

    fn to_bytes(&self) -> Vec<u8> {
        match self {
            Self::Ready { ordinal } => [&[1u8][..], &(*ordinal as u64).to_le_bytes()].concat(),
            Self::Not(why) => [&[0u8][..], why.as_bytes()].concat(),
        }
    }

    fn from_bytes(bytes: &[u8]) -> Self {
        match bytes.split_first() {
            Some((1, ordinal)) => match <[u8; 8]>::try_from(ordinal) {
                Ok(ordinal) => Self::Ready {
                    ordinal: u64::from_le_bytes(ordinal) as usize,
                },
                Err(_) => Self::Not("sent a malformed vote".into()),
            },
            Some((_, why)) => Self::Not(String::from_utf8_lossy(why).into_owned()),
            None => Self::Not("sent an empty vote".into()),
        }
    }
}

/// Why a job's gradients do not go through NCCL (it keeps the host ring): not a failure of the job.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NcclDeclined {
    /// A rank voted no.
    #[error("rank {rank} {why}")]
    Vote {
        /// The rank.
        rank: usize,
        /// Why it is not ready, as it said (e.g. `trains on the CPU`).
        why: String,
    },
    /// Two ranks of one host would share a GPU, which NCCL refuses.
    #[error("ranks {first} and {second} share cuda:{ordinal} on host {host} (NCCL needs a GPU per rank)")]
    SharedDevice {
        /// The first rank on the device.
        first: usize,
        /// The second.
        second: usize,
        /// The device's CUDA ordinal.
        ordinal: usize,
        /// Their host.
        host: String,
    },
    /// A job of one rank (or none).
    #[error("one rank has nothing to exchange")]
    OneRank,
    /// This rank's own vote was no, though the job's votes were all yes.
    #[error("this rank is not ready")]
    NotReady,
    /// Rank 0 could not make the NCCL id every rank joins with.
    #[error("rank 0 could not make an NCCL id")]
    NoId,
}

/// Whether NCCL carries the gradients, given every rank's host and vote in rank order: only when all are
/// ready, each on a GPU of its own (NCCL refuses two ranks on one device); otherwise why not.
///
/// ```
/// use hearth_collective::{NcclVote, nccl_choice};
/// let ready = |host: &str, ordinal| (host.to_string(), NcclVote::Ready { ordinal });
/// assert_eq!(nccl_choice(&[ready("a", 0), ready("a", 1), ready("b", 0)]), Ok(()));
/// let mixed = [ready("a", 0), ("a".to_string(), NcclVote::Not("trains on the CPU".into()))];
/// assert_eq!(nccl_choice(&mixed).unwrap_err().to_string(), "rank 1 trains on the CPU");
/// ```
pub fn nccl_choice(votes: &[(String, NcclVote)]) -> std::result::Result<(), NcclDeclined> {
    let mut devices = std::collections::HashMap::new();
    for (rank, (host, vote)) in votes.iter().enumerate() {
        match vote {
            NcclVote::Not(why) => {
                return Err(NcclDeclined::Vote { rank, why: why.clone() });
            }
            NcclVote::Ready { ordinal } => {
                if let Some(first) = devices.insert((host, ordinal), rank) {
                    return Err(NcclDeclined::SharedDevice {
                        first,
                        second: rank,
                        ordinal: *ordinal,
                        host: host.clone(),
                    });
                }
            }
        }
    }
    match votes.len() {
        0 | 1 => Err(NcclDeclined::OneRank),
        _ => Ok(()),
    }
}

/// A rank's NCCL communicator, aborted with it.
#[derive(Debug)]
pub struct Nccl {
    /// Null once aborted.
    comm: sys::ncclComm_t,
    rank: usize,
    /// The last mark of the device's queue not yet waited for.
    marked: Option<sys_driver::CUevent>,
}

// SAFETY: an NCCL communicator may be used from any thread, one call at a time; `Nccl` is used by its owner only.
unsafe impl Send for Nccl {}

impl Nccl {
    /// Every rank of `comm` calls this with its vote: the NCCL communicator when every rank is ready, or why
    /// not (`Ok(Err(why))`: the job goes on with the host ring).
    pub fn join(comm: &mut Communicator, vote: &NcclVote) -> Result<std::result::Result<Self, NcclDeclined>> {
        let hosts: Vec<String> = comm.peers().iter().map(|p| p.registration.host.clone()).collect();
        let votes: Vec<(String, NcclVote)> = comm
            .allgather_bytes(&vote.to_bytes())?
            .iter()
            .zip(hosts)
            .map(|(bytes, host)| (host, NcclVote::from_bytes(bytes)))
            .collect();
        if let Err(why) = nccl_choice(&votes) {
            return Ok(Err(why));
        }
        let NcclVote::Ready { ordinal } = vote else {
            return Ok(Err(NcclDeclined::NotReady));
        };
        let (rank, world) = (comm.rank(), comm.world_size());
        // Rank 0 makes the id; a failure there reaches every rank as an empty id.
        let id = if rank == 0 {
            result::get_uniqueid()
                .map(|id| id.internal.iter().map(|&c| c as u8).collect())
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        let ids = comm.allgather_bytes(&id)?;
        let Ok(internal) = <[u8; 128]>::try_from(ids[0].as_slice()) else {
            return Ok(Err(NcclDeclined::NoId));
        };
        let id = sys::ncclUniqueId {
            internal: internal.map(|b| b as std::ffi::c_char),
        };
        let failed = |what: &str, e: result::NcclError| CollectiveError::Device {
            rank,
            message: format!("{what} on cuda:{ordinal}: {e:?}"),
        };
        let mut handle = std::ptr::null_mut();
        // SAFETY: `handle` receives the communicator; every rank of the vote calls this with the same id.
        if let Err(e) = unsafe { result::comm_init_rank(&mut handle, world as i32, id, rank as i32) } {
            if !handle.is_null() {
                // SAFETY: a communicator NCCL made before failing, used no more.
                let _ = unsafe { result::comm_abort(handle) };
            }
            return Err(failed("joining NCCL", e));
        }
        Ok(Ok(Self {
            comm: handle,
            rank,
            marked: None,
        }))
    }

    /// Sums `count` f32 values at device address `buffer` over every rank, in place, queued on the device's
    /// default stream.
    ///
    /// # Safety
    /// `buffer` points at `count` f32 values on this rank's CUDA device, valid until the default stream
    /// reaches this operation.
    pub unsafe fn allreduce_sum(&self, buffer: *mut c_void, count: usize) -> Result<()> {
        // SAFETY: in and out are the same buffer (NCCL's in-place form); the caller vouches for it.
        unsafe {
            result::all_reduce(
                buffer,
                buffer,
                count,
                sys::ncclDataType_t::ncclFloat32,
                sys::ncclRedOp_t::ncclSum,
                self.comm,
                std::ptr::null_mut(),
            )
        }
        .map(|_| ())
        .map_err(|e| CollectiveError::Device {
            rank: self.rank,
            message: format!("NCCL allreduce of {count} values: {e:?}"),
        })
    }
}

impl Nccl {
    /// Marks how far this rank's device queue reaches now, and waits, at most `within`, for the device to
    /// reach the previous mark (none the first time): the device may run one mark behind the host, so the
    /// queue stays full, but never further. NCCL's operations have no deadline of their own; past `within`,
    /// NCCL is aborted — a peer is gone or stalled, and NCCL would wait for it forever — and the error says so.
    /// A trainer marks every few steps (fewer than the device's queue of launches holds: a launch into a full
    /// queue would wait without a deadline).
    pub fn mark(&mut self, within: Duration) -> Result<()> {
        let mark = self.new_mark()?;
        match self.marked.replace(mark) {
            Some(previous) => self.wait_for(previous, within),
            None => Ok(()),
        }
    }

    /// Waits, at most `within`, until the device has done everything queued so far (as [`Nccl::mark`] does
    /// for its previous mark).
    pub fn wait(&mut self, within: Duration) -> Result<()> {
        let now = self.new_mark()?;
        let waited = self.wait_for(now, within);
        if let Some(previous) = self.marked.take() {
            // SAFETY: an event this value made and waits for no more.
            let _ = unsafe { event::destroy(previous) };
        }
        waited
    }

    fn device_error(&self, what: &str, e: DriverError) -> CollectiveError {
        CollectiveError::Device {
            rank: self.rank,
            message: format!("{what}: {e:?}"),
        }
    }

    /// An event recorded on the default stream (libtorch's and NCCL's here).
    fn new_mark(&self) -> Result<sys_driver::CUevent> {
        if self.comm.is_null() {
            return Err(CollectiveError::Device {
                rank: self.rank,
                message: "NCCL was aborted after an earlier failure".into(),
            });
        }
        let mark = event::create(sys_driver::CUevent_flags::CU_EVENT_DISABLE_TIMING)
            .map_err(|e| self.device_error("a CUDA event to wait on", e))?;
        // SAFETY: `mark` is the event just made; the null stream is the default one.
        match unsafe { event::record(mark, std::ptr::null_mut()) } {
            Ok(()) => Ok(mark),
            Err(e) => {
                // SAFETY: as above, destroyed once.
                let _ = unsafe { event::destroy(mark) };
                Err(self.device_error("recording a CUDA event", e))
            }
        }
    }

    /// Waits for `mark` until `within` has passed (then aborts NCCL), and destroys it.
    fn wait_for(&mut self, mark: sys_driver::CUevent, within: Duration) -> Result<()> {
        let deadline = Instant::now() + within;
        // SAFETY: `mark` is an event this value recorded; it is queried until done or the deadline, then
        // destroyed once.
        let outcome = unsafe {
            let outcome = loop {
                match event::query(mark) {
                    Err(DriverError(sys_driver::CUresult::CUDA_ERROR_NOT_READY)) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_micros(50));
                    }
                    other => break other,
                }
            };
            let _ = event::destroy(mark);
            outcome
        };
        match outcome {
            Ok(()) => Ok(()),
            Err(DriverError(sys_driver::CUresult::CUDA_ERROR_NOT_READY)) => {
                // SAFETY: the communicator is this value's own; aborting ends its operations in flight.
                let _ = unsafe { result::comm_abort(self.comm) };
                self.comm = std::ptr::null_mut();
                Err(CollectiveError::Device {
                    rank: self.rank,
                    message: format!(
                        "NCCL's operations did not finish within {within:?}: a peer is gone or stalled (NCCL aborted)"
                    ),
                })
            }
            Err(e) => Err(self.device_error("waiting for the device", e)),
        }
    }
}

impl Drop for Nccl {
    /// Aborts rather than destroys: a job that ends well has waited for its last operation already (its
    /// epoch's figures are read back from the device), and one that failed part-way must not wait for peers
    /// that are gone.
    fn drop(&mut self) {
        if let Some(mark) = self.marked.take() {
            // SAFETY: an event this value made; destroying one in flight releases it when it completes.
            let _ = unsafe { event::destroy(mark) };
        }
        if !self.comm.is_null() {
            // SAFETY: the communicator is this value's own and is used no more.
            let _ = unsafe { result::comm_abort(self.comm) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nccl_is_chosen_only_when_every_rank_is_on_cuda_with_nccl() {
        let on = |host: &str, vote: NcclVote| (host.to_string(), vote);
        let ready = |host, ordinal| on(host, NcclVote::Ready { ordinal });
        let why_not = |votes: &[(String, NcclVote)]| nccl_choice(votes).map_err(|why| why.to_string());
        assert_eq!(nccl_choice(&[ready("a", 0), ready("b", 0), ready("a", 1)]), Ok(()));
        let cpu = NcclVote::of(None);
        assert_eq!(
            why_not(&[ready("a", 0), on("b", cpu.clone())]),
            Err("rank 1 trains on the CPU".into())
        );
        assert_eq!(
            why_not(&[on("a", cpu.clone()), on("a", cpu)]),
            Err("rank 0 trains on the CPU".into())
        );
        let missing = NcclVote::Not("found no NCCL library (libnccl.so) on the loader's path".into());
        assert_eq!(
            why_not(&[on("a", missing), ready("a", 1)]),
            Err("rank 0 found no NCCL library (libnccl.so) on the loader's path".into())
        );
        // Two ranks on one GPU of one host (more ranks than GPUs): the host ring.
        assert_eq!(
            why_not(&[ready("a", 0), ready("a", 1), ready("a", 0)]),
            Err("ranks 0 and 2 share cuda:0 on host a (NCCL needs a GPU per rank)".into())
        );
        assert!(nccl_choice(&[ready("a", 0)]).is_err());
    }

    #[test]
    fn votes_cross_the_wire_whole() {
        for vote in [
            NcclVote::Ready { ordinal: 3 },
            NcclVote::Not("trains on the CPU".into()),
        ] {
            assert_eq!(NcclVote::from_bytes(&vote.to_bytes()), vote);
        }
        assert!(matches!(NcclVote::from_bytes(&[1, 2]), NcclVote::Not(_)));
        assert!(matches!(NcclVote::from_bytes(&[]), NcclVote::Not(_)));
    }

    #[test]
    fn ranks_on_the_cpu_keep_the_host_ring() {
        let outcomes = crate::LocalWorld::new(2)
            .run(|mut comm| Nccl::join(&mut comm, &NcclVote::of(None)).map(std::result::Result::err))
            .unwrap();
        for outcome in outcomes {
            let why = outcome.unwrap().map(|why| why.to_string());
            assert_eq!(why.as_deref(), Some("rank 0 trains on the CPU"));
        }
    }
}
