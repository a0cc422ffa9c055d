//! Which device a rank trains on.

use tch::Device;

use super::options::DeviceChoice;

/// The CUDA devices libtorch sees on this machine (0 without a GPU or driver).
pub fn cuda_device_count() -> usize {
    tch::Cuda::device_count().max(0) as usize
}

/// The device for a rank: its index among the ranks on its host (`local_rank`) picks the GPU.
pub(crate) fn pick_device(choice: &DeviceChoice, local_rank: usize) -> Device {
    let gpus = cuda_device_count();
    match choice {
        DeviceChoice::Cpu => Device::Cpu,
        DeviceChoice::Cuda(Some(i)) if *i < gpus => Device::Cuda(*i),
        DeviceChoice::Cuda(_) | DeviceChoice::Auto if gpus > 0 => Device::Cuda(local_rank % gpus),
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
