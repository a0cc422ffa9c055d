//! What a host offers the fleet: its memory, and its GPUs as the CUDA driver lists them
//! ([`detect_gpus`](hearth_exec::barrier::detect_gpus)) and its trainer can use.

use std::fmt;
use std::str::FromStr;

use hearth_exec::ballista::GpuInfo;
use hearth_exec::barrier::detect_gpus;
use hearth_exec::error::Cause;

use crate::error::{FleetError, Result};

/// Which GPUs an executor offers (`hearth executor --gpus`).
///
/// ```text
/// auto   every GPU the CUDA driver lists (none where there is no driver)
/// N      the first N, and the executor refuses to start with fewer
/// none   none: tasks that need a GPU never run here
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GpuRequest {
    /// Every GPU found.
    #[default]
    Auto,
    /// The first `n` GPUs found.
    Count(usize),
    /// No GPU.
    None,
}

impl FromStr for GpuRequest {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Self::Auto),
            "none" => Ok(Self::None),
            n => n
                .parse()
                .map(Self::Count)
                .map_err(|_| format!("expected auto, none or a number of GPUs, got {s:?}")),
        }
    }
}

impl fmt::Display for GpuRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Auto => f.write_str("auto"),
            Self::Count(n) => write!(f, "{n}"),
            Self::None => f.write_str("none"),
        }
    }
}

/// The GPUs to offer for `request` out of `found` (what [`detect_gpus`](hearth_exec::barrier::detect_gpus) answered).
///
/// ```
/// # use hearth_fleet::{GpuRequest, choose_gpus};
/// let none: Result<_, String> = Ok(vec![]);
/// assert_eq!(choose_gpus(GpuRequest::Auto, none.clone()).unwrap(), vec![]);
/// let error = choose_gpus(GpuRequest::Count(2), none).unwrap_err();
/// assert_eq!(error.to_string(), "--gpus 2: this host has 0 GPUs (the CUDA driver lists none)");
/// ```
pub fn choose_gpus<E: Into<Cause> + fmt::Display>(
    request: GpuRequest,
    found: Result<Vec<GpuInfo>, E>,
) -> Result<Vec<GpuInfo>> {
    match (request, found) {
        (GpuRequest::None, _) => Ok(Vec::new()),
        (GpuRequest::Auto, Ok(found)) => Ok(found),
        (GpuRequest::Auto, Err(e)) => {
            log::warn!("offering no GPUs: {e}");
            Ok(Vec::new())
        }
        (GpuRequest::Count(n), Err(e)) => Err(FleetError::gpus(format!("--gpus {n}")).caused_by(e)),
        (GpuRequest::Count(n), Ok(found)) if n > found.len() => Err(FleetError::gpus(format!(
            "--gpus {n}: this host has {} GPUs (the CUDA driver lists {})",
            found.len(),
            match found.as_slice() {
                [] => "none".to_string(),
                gpus => gpus
                    .iter()
                    .map(|g| format!("{}: {}", g.index, g.name))
                    .collect::<Vec<_>>()
                    .join(", "),
            }
        ))),
        (GpuRequest::Count(n), Ok(mut found)) => {
            found.truncate(n);
            Ok(found)
        }
    }
}

/// The chosen GPUs, once libtorch is known to use them (`trainer_sees(n)`: whether it sees devices `0..n`,
/// or why not): where it does not, `--gpus auto` offers none and says why, and `--gpus N` refuses to start —
/// an executor never offers a GPU its trainers would not train on.
pub fn usable_gpus<E: Into<Cause>>(
    request: GpuRequest,
    chosen: Vec<GpuInfo>,
    trainer_sees: impl FnOnce(usize) -> Result<(), E>,
) -> Result<Vec<GpuInfo>> {
    let needed = chosen.iter().map(|gpu| gpu.index + 1).max().unwrap_or(0);
    match (trainer_sees(needed), request) {
        (Ok(()), _) => Ok(chosen),
        (Err(why), GpuRequest::Count(n)) => Err(FleetError::gpus(format!("--gpus {n}")).caused_by(why)),
        (Err(why), _) => {
            let why: Cause = why.into();
            log::warn!("offering no GPUs: {why}");
            Ok(Vec::new())
        }
    }
}

/// This host's memory in bytes.
pub fn host_memory() -> u64 {
    let mut system = sysinfo::System::new();
    system.refresh_memory();
    system.total_memory()
}

/// What one of several executors on this machine gets of its GPUs: how many to offer, and the
/// `CUDA_VISIBLE_DEVICES` that shows it only its own.
pub struct GpuShare {
    /// What its `--gpus` says.
    pub request: GpuRequest,
    /// Its environment's `CUDA_VISIBLE_DEVICES`, when it gets GPUs.
    pub env: Vec<(&'static str, String)>,
}

/// Shares this machine's GPUs among `executors` executors: `auto` splits them evenly, `N` gives each N
/// (failing when there are too few).
pub fn gpu_shares(request: GpuRequest, executors: usize) -> Result<Vec<GpuShare>> {
    let found = match request {
        GpuRequest::None => Vec::new(),
        _ => detect_gpus().unwrap_or_default(),
    };
    let each = match request {
        GpuRequest::None => 0,
        GpuRequest::Auto => found.len() / executors,
        GpuRequest::Count(n) => n,
    };
    if each * executors > found.len() {
        return Err(FleetError::gpus(format!(
            "--gpus {each} for each of {executors} executors needs {} GPUs; this machine has {}",
            each * executors,
            found.len()
        )));
    }
    // Devices as CUDA_VISIBLE_DEVICES names them here, so each executor's list is a part of ours.
    let visible: Vec<String> = match std::env::var("CUDA_VISIBLE_DEVICES") {
        Ok(list) => list.split(',').map(|d| d.trim().to_string()).collect(),
        Err(_) => (0..found.len()).map(|i| i.to_string()).collect(),
    };
    Ok((0..executors)
        .map(|i| match each {
            0 => GpuShare {
                request: GpuRequest::None,
                env: Vec::new(),
            },
            _ => GpuShare {
                request: GpuRequest::Count(each),
                env: vec![("CUDA_VISIBLE_DEVICES", visible[i * each..(i + 1) * each].join(","))],
            },
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(index: usize) -> GpuInfo {
        GpuInfo {
            index,
            name: format!("Test GPU {index}"),
            memory_bytes: 80 << 30,
        }
    }

    #[test]
    fn requests_parse_and_print() {
        for (text, request) in [
            ("auto", GpuRequest::Auto),
            ("none", GpuRequest::None),
            ("2", GpuRequest::Count(2)),
        ] {
            assert_eq!(text.parse::<GpuRequest>().unwrap(), request);
            assert_eq!(request.to_string(), text);
        }
        assert_eq!("AUTO".parse::<GpuRequest>().unwrap(), GpuRequest::Auto);
        let error = "all".parse::<GpuRequest>().unwrap_err();
        assert_eq!(error, "expected auto, none or a number of GPUs, got \"all\"");
    }

    #[test]
    fn choosing_gpus() {
        let found = || Ok::<_, FleetError>(vec![gpu(0), gpu(1)]);
        assert_eq!(choose_gpus(GpuRequest::Auto, found()).unwrap().len(), 2);
        assert_eq!(choose_gpus(GpuRequest::Count(1), found()).unwrap(), vec![gpu(0)]);
        assert!(choose_gpus(GpuRequest::None, found()).unwrap().is_empty());
        assert_eq!(
            choose_gpus(GpuRequest::Count(3), found()).unwrap_err().to_string(),
            "--gpus 3: this host has 2 GPUs (the CUDA driver lists 0: Test GPU 0, 1: Test GPU 1)"
        );
        // A driver's failure as a message (a CUDA driver error prints itself only where the driver is loaded).
        let broken = || Err::<Vec<GpuInfo>, _>(FleetError::gpus("the CUDA driver failed to start: CUDA_ERROR_UNKNOWN"));
        assert!(choose_gpus(GpuRequest::Auto, broken()).unwrap().is_empty());
        let refused = choose_gpus(GpuRequest::Count(1), broken()).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "--gpus 1: the CUDA driver failed to start: CUDA_ERROR_UNKNOWN"
        );
        assert!(
            std::error::Error::source(&refused).is_some(),
            "the driver's failure is kept as the cause"
        );
    }

    #[test]
    fn gpus_libtorch_cannot_use_are_not_offered() {
        let chosen = || vec![gpu(0), gpu(1)];
        let sees = |n: usize| move |count: usize| (count <= n).then_some(()).ok_or(format!("libtorch sees {n}"));
        assert_eq!(usable_gpus(GpuRequest::Auto, chosen(), sees(2)).unwrap().len(), 2);
        assert!(usable_gpus(GpuRequest::Auto, chosen(), sees(0)).unwrap().is_empty());
        assert_eq!(
            usable_gpus(GpuRequest::Count(2), chosen(), sees(1))
                .unwrap_err()
                .to_string(),
            "--gpus 2: libtorch sees 1"
        );
        assert!(usable_gpus(GpuRequest::None, Vec::new(), sees(0)).unwrap().is_empty());
    }

    #[test]
    fn host_memory_is_known() {
        assert!(host_memory() > 0);
    }

    #[test]
    fn gpus_are_shared_among_executors_of_one_machine() {
        let found = detect_gpus().unwrap_or_default().len();
        let none = gpu_shares(GpuRequest::None, 2).unwrap();
        assert!(none.iter().all(|s| s.request == GpuRequest::None && s.env.is_empty()));
        let auto = gpu_shares(GpuRequest::Auto, 2).unwrap();
        let each = found / 2;
        for (i, share) in auto.iter().enumerate() {
            match each {
                0 => assert_eq!(share.request, GpuRequest::None),
                _ => {
                    assert_eq!(share.request, GpuRequest::Count(each));
                    assert_eq!(share.env[0].1.split(',').count(), each, "executor {i}");
                }
            }
        }
        let too_many = gpu_shares(GpuRequest::Count(found + 1), 1).err().unwrap();
        assert_eq!(
            too_many.to_string(),
            format!(
                "--gpus {} for each of 1 executors needs {} GPUs; this machine has {found}",
                found + 1,
                found + 1
            )
        );
    }
}
