//! The GPUs the CUDA driver lists on this host, read through cudarc's dynamic loading: the driver library is
//! opened when the program runs, so the same binary runs where there is no CUDA and finds no GPU there. No
//! libtorch is involved; whether libtorch can train on these GPUs is the trainer's question.

use std::sync::LazyLock;

use cudarc::driver::{result, sys};

use crate::ballista::GpuInfo;

/// The CUDA driver is present but failed: starting, counting devices, or reading one.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {source}")]
pub struct CudaDriverError {
    what: String,
    #[source]
    source: result::DriverError,
}

/// The GPUs the CUDA driver lists on this host: none when the driver library is absent or has no device; an
/// error when it is present but fails.
///
/// ```
/// let gpus = hearth_exec::barrier::detect_gpus().unwrap_or_default();
/// assert!(gpus.iter().enumerate().all(|(i, gpu)| gpu.index == i));
/// ```
pub fn detect_gpus() -> Result<Vec<GpuInfo>, CudaDriverError> {
    let failed = |what: &str, source: result::DriverError| CudaDriverError {
        what: what.to_string(),
        source,
    };
    // SAFETY: only tries to open the driver library; nothing of it is called when it is absent.
    if !unsafe { sys::is_culib_present() } {
        return Ok(Vec::new());
    }
    match result::init() {
        Ok(()) => {}
        Err(result::DriverError(sys::CUresult::CUDA_ERROR_NO_DEVICE)) => return Ok(Vec::new()),
        Err(e) => return Err(failed("the CUDA driver failed to start", e)),
    }
    let count = result::device::get_count().map_err(|e| failed("the CUDA driver cannot count devices", e))?;
    (0..count)
        .map(|ordinal| {
            let device_failed = |e: result::DriverError| failed(&format!("CUDA device {ordinal}"), e);
            let device = result::device::get(ordinal).map_err(device_failed)?;
            let name = result::device::get_name(device).map_err(device_failed)?;
            // SAFETY: `device` was returned by `get` above.
            let memory = unsafe { result::device::total_mem(device) }.map_err(device_failed)?;
            Ok(GpuInfo {
                index: ordinal as usize,
                name,
                memory_bytes: memory as u64,
            })
        })
        .collect()
}

/// What the driver answered the first time this process asked: how many GPUs, or why none.
static DRIVER_GPUS: LazyLock<Result<usize, String>> = LazyLock::new(|| match detect_gpus() {
    Ok(gpus) if !gpus.is_empty() => Ok(gpus.len()),
    // SAFETY: only tries to open the driver library.
    Ok(_) if unsafe { sys::is_culib_present() } => Err("the CUDA driver lists no GPU".to_string()),
    Ok(_) => Err("this host has no CUDA driver library (libcuda)".to_string()),
    Err(failed) => Err(failed.to_string()),
});

/// How many GPUs the CUDA driver lists on this host (asked once per process), or why it lists none: no driver
/// library, no device, or the driver's error.
///
/// ```
/// use hearth_exec::barrier::{detect_gpus, driver_gpus};
/// assert_eq!(driver_gpus().ok(), Some(detect_gpus().unwrap_or_default().len()).filter(|n| *n > 0));
/// ```
pub fn driver_gpus() -> Result<usize, String> {
    DRIVER_GPUS.clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detection_answers_without_cuda() {
        // Without a CUDA driver (CI) there are no GPUs; with one, each GPU has a name and memory.
        let gpus = detect_gpus().expect("the driver, where present, answers");
        for (i, gpu) in gpus.iter().enumerate() {
            assert_eq!(gpu.index, i);
            assert!(!gpu.name.is_empty() && gpu.memory_bytes > 0, "{gpu:?}");
        }
        // SAFETY: only tries to open the driver library.
        if !unsafe { sys::is_culib_present() } {
            assert!(gpus.is_empty());
            assert_eq!(
                driver_gpus().unwrap_err(),
                "this host has no CUDA driver library (libcuda)"
            );
        }
        assert_eq!(driver_gpus().unwrap_or(0), gpus.len());
    }
}
