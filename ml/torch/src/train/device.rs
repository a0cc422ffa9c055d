//! Which device a rank trains on, and libtorch's CUDA library, loaded at first use where this libtorch has it.
//!
//! A program linked against libtorch needs only `libtorch_cpu.so` to start; libtorch's CUDA side lives in
//! `libtorch_cuda.so` beside it, which the linker leaves out of a program that calls nothing in it. So the
//! same binary runs on a CPU-only install and uses the GPUs of a CUDA one: before libtorch is first asked about
//! CUDA, hearth loads `libtorch_cuda.so` from the directory of the `libtorch_cpu.so` this process runs, when
//! it is there (libtorch decides once, at that first question, whether it has CUDA).

use std::ffi::{CStr, CString};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Once, OnceLock};

use tch::Device;

use super::error::OptionsError;
use super::options::DeviceChoice;

/// What became of libtorch's CUDA library in this process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CudaLibrary {
    /// Loaded from this path: libtorch can use the GPUs the driver shows it.
    Loaded(PathBuf),
    /// Not loaded, and why (a CPU-only libtorch, or the library or one it needs failed to load).
    Missing(String),
}

/// Loads libtorch's CUDA library once per process, where the libtorch this process runs has one, and says
/// what became of it.
///
/// ```
/// use hearth_torch::train::{CudaLibrary, cuda_library};
/// match cuda_library() {
///     CudaLibrary::Loaded(path) => assert!(path.ends_with("libtorch_cuda.so")),
///     CudaLibrary::Missing(why) => assert!(!why.is_empty()),
/// }
/// ```
pub fn cuda_library() -> &'static CudaLibrary {
    static LIBRARY: OnceLock<CudaLibrary> = OnceLock::new();
    LIBRARY.get_or_init(|| match libtorch_directory() {
        Some(directory) => load(&directory.join("libtorch_cuda.so")),
        None => CudaLibrary::Missing("this process runs no libtorch_cpu.so to find libtorch_cuda.so beside".into()),
    })
}

/// The directory of the `libtorch_cpu.so` mapped into this process, from `/proc/self/maps`.
fn libtorch_directory() -> Option<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .map(Path::new)
        .find(|path| path.file_name().is_some_and(|name| name == "libtorch_cpu.so"))
        .and_then(Path::parent)
        .map(Path::to_path_buf)
}

fn load(path: &Path) -> CudaLibrary {
    if !path.exists() {
        let directory = path.parent().unwrap_or(path).display();
        return CudaLibrary::Missing(format!(
            "the libtorch in {directory} is a CPU build (it has no libtorch_cuda.so)"
        ));
    }
    let Ok(name) = CString::new(path.as_os_str().as_encoded_bytes()) else {
        return CudaLibrary::Missing(format!("{} is not a usable path", path.display()));
    };
    // SAFETY: `name` is a NUL-terminated path; the library is libtorch's own, whose initialisers register its
    // CUDA kernels and hooks with the libtorch already loaded. It is never unloaded.
    let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
    if !handle.is_null() {
        return CudaLibrary::Loaded(path.to_path_buf());
    }
    // SAFETY: `dlerror` returns NULL or a NUL-terminated message owned by the C library, read at once.
    let message = unsafe {
        let error = libc::dlerror();
        if error.is_null() {
            "no reason given".to_string()
        } else {
            CStr::from_ptr(error).to_string_lossy().into_owned()
        }
    };
    let hint = if message.contains("cannot open shared object file") {
        " (a CPU-only install of libtorch, without CUDA's libraries)"
    } else {
        ""
    };
    CudaLibrary::Missing(format!("{} did not load: {message}{hint}", path.display()))
}

/// The CUDA devices libtorch sees on this machine (0 without a GPU, a driver or libtorch's CUDA library).
pub fn cuda_device_count() -> usize {
    let _ = cuda_library();
    tch::Cuda::device_count().max(0) as usize
}

/// Why libtorch in this process sees no GPU: its CUDA library missing or failing to load (a CPU-only install),
/// or no device or driver; `None` when it sees one.
///
/// ```
/// use hearth_torch::train::{cuda_device_count, why_no_gpus};
/// assert_eq!(why_no_gpus().is_none(), cuda_device_count() > 0);
/// ```
pub fn why_no_gpus() -> Option<String> {
    match cuda_device_count() {
        0 => Some(why_no_gpu(None, 0)),
        _ => None,
    }
}

/// Why libtorch has no CUDA device `wanted` (any one when `None`), given that it sees `gpus`.
fn why_no_gpu(wanted: Option<usize>, gpus: usize) -> String {
    match (cuda_library(), wanted) {
        (CudaLibrary::Missing(why), _) => why.clone(),
        (CudaLibrary::Loaded(_), Some(i)) if gpus > 0 => {
            format!("libtorch sees {gpus} CUDA device(s), numbered from 0, not cuda:{i}")
        }
        (CudaLibrary::Loaded(path), _) => format!(
            "libtorch's CUDA library ({}) sees no CUDA device (no GPU, or no NVIDIA driver)",
            path.display()
        ),
    }
}

/// Why libtorch in this process cannot use every GPU the CUDA driver lists (see [`libtorch_sees_gpus`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnseenGpus {
    /// The GPUs the CUDA driver lists.
    pub listed: usize,
    /// The CUDA devices libtorch sees.
    pub sees: usize,
    /// Why: libtorch's reason for having no CUDA, or the CUDA library it loaded.
    pub why: String,
}

impl fmt::Display for UnseenGpus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self { listed, sees, why } = self;
        write!(
            f,
            "the CUDA driver lists {listed} GPU(s) but libtorch sees {sees}: {why}"
        )
    }
}

impl std::error::Error for UnseenGpus {}

/// Whether libtorch in this process can use CUDA devices `0..count` (what the driver lists); if not, why —
/// libtorch without CUDA, or seeing fewer devices than the driver.
///
/// ```
/// assert!(hearth_torch::train::libtorch_sees_gpus(0).is_ok());
/// ```
pub fn libtorch_sees_gpus(count: usize) -> Result<(), UnseenGpus> {
    if count == 0 {
        return Ok(());
    }
    let sees = cuda_device_count();
    if sees >= count {
        return Ok(());
    }
    let why = match cuda_library() {
        CudaLibrary::Missing(why) => why.clone(),
        CudaLibrary::Loaded(path) => format!("its CUDA library is {}", path.display()),
    };
    Err(UnseenGpus {
        listed: count,
        sees,
        why,
    })
}

/// The device for a rank: its index among the ranks on its host (`local_rank`) picks the GPU. `cuda` where
/// libtorch has no such GPU is an error saying why; `auto` then trains on the CPU and says why once in the log.
pub(crate) fn pick_device(choice: &DeviceChoice, local_rank: usize) -> Result<Device, OptionsError> {
    let gpus = match choice {
        DeviceChoice::Cpu => return Ok(Device::Cpu),
        DeviceChoice::Cuda(_) | DeviceChoice::Auto => cuda_device_count(),
    };
    match choice {
        DeviceChoice::Cuda(Some(i)) if *i < gpus => Ok(Device::Cuda(*i)),
        DeviceChoice::Cuda(None) | DeviceChoice::Auto if gpus > 0 => Ok(Device::Cuda(local_rank % gpus)),
        DeviceChoice::Cuda(wanted) => {
            let asked = wanted.map_or("cuda".to_string(), |i| format!("cuda:{i}"));
            Err(OptionsError {
                option: "device",
                message: format!("device {asked} asked for, but {}", why_no_gpu(*wanted, gpus)),
            })
        }
        _ => {
            static SAID: Once = Once::new();
            SAID.call_once(|| log::info!("device auto trains on the CPU: {}", why_no_gpu(None, 0)));
            Ok(Device::Cpu)
        }
    }
}

/// Where a trained model predicts: on a GPU when it was trained for one (`cuda`, or `auto`) and libtorch sees
/// one in this process, on the CPU otherwise — a model predicts wherever it is loaded.
///
/// ```
/// use hearth_torch::train::{DeviceChoice, cuda_device_count, prediction_device};
/// assert_eq!(prediction_device(&DeviceChoice::Cpu), tch::Device::Cpu);
/// if cuda_device_count() == 0 {
///     assert_eq!(prediction_device(&DeviceChoice::Cuda(None)), tch::Device::Cpu);
/// }
/// ```
pub fn prediction_device(choice: &DeviceChoice) -> Device {
    let gpus = match choice {
        DeviceChoice::Cpu => return Device::Cpu,
        _ => cuda_device_count(),
    };
    match choice {
        DeviceChoice::Cuda(Some(i)) if *i < gpus => Device::Cuda(*i),
        _ if gpus > 0 => Device::Cuda(0),
        _ => Device::Cpu,
    }
}

/// How a device is named in reports: `cpu` or `cuda:i`.
pub(crate) fn device_name(device: Device) -> String {
    match device {
        Device::Cuda(i) => format!("cuda:{i}"),
        _ => "cpu".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_without_a_gpu_is_an_error_that_says_why_and_auto_trains_on_the_cpu() {
        if cuda_device_count() > 0 {
            return; // a machine with a GPU: the error cannot happen here
        }
        let error = pick_device(&DeviceChoice::Cuda(None), 0).unwrap_err();
        assert!(error.message.starts_with("device cuda asked for, but "), "{error}");
        let numbered = pick_device(&DeviceChoice::Cuda(Some(1)), 0).unwrap_err();
        assert!(
            numbered.message.starts_with("device cuda:1 asked for, but "),
            "{numbered}"
        );
        assert_eq!(pick_device(&DeviceChoice::Auto, 0), Ok(Device::Cpu));
        assert_eq!(pick_device(&DeviceChoice::Cpu, 3), Ok(Device::Cpu));
    }

    #[test]
    fn libtorch_cuda_is_found_beside_the_libtorch_this_process_runs() {
        let directory = libtorch_directory().expect("a test process maps libtorch_cpu.so");
        match cuda_library() {
            CudaLibrary::Loaded(path) => assert_eq!(path, &directory.join("libtorch_cuda.so")),
            CudaLibrary::Missing(why) => assert!(why.contains(&directory.display().to_string()), "{why}"),
        }
    }
}
