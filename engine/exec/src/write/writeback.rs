//! A file whose written bytes start on their way to the disk while it is still being written.
//!
//! A job's output is synced before it is moved into place. Left to itself the kernel holds the written pages
//! until that sync, which then waits for every byte of the file; here each stretch of [`WRITEBACK_STRIDE`]
//! bytes is handed to the disk as soon as it is written (Linux's `sync_file_range` with
//! `SYNC_FILE_RANGE_WRITE`, which starts the write-back without waiting for it), so the disk works while the
//! job is still encoding, and the final sync waits for the last stretch only. Elsewhere it is a plain file.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

/// The bytes written between two starts of write-back.
pub(super) const WRITEBACK_STRIDE: u64 = 8 << 20;

/// A file being written whose bytes go to the disk a stride at a time (see the [module](self) docs).
#[derive(Debug)]
pub(super) struct WritebackFile {
    file: File,
    /// Bytes written so far.
    written: u64,
    /// Bytes whose write-back has been started.
    started: u64,
}

impl WritebackFile {
    /// Creates (or truncates) the file at `path`.
    pub(super) fn create(path: &Path) -> io::Result<Self> {
        Ok(Self {
            file: File::create(path)?,
            written: 0,
            started: 0,
        })
    }

    /// Sends the last bytes on their way to the disk and closes the file; the caller syncs it later
    /// (`FrameWriter::save` syncs every part file before moving them into place).
    pub(super) fn finish(mut self) {
        if self.written > self.started {
            self.start_writeback();
        }
    }

    /// Starts the write-back of what was written since the last start.
    #[cfg(target_os = "linux")]
    fn start_writeback(&mut self) {
        use std::os::fd::AsRawFd;
        let (offset, length) = (self.started as i64, (self.written - self.started) as i64);
        // SAFETY: the descriptor is this open file's; the call reads no memory of this process.
        // Its result is only advice taken: a failure leaves the bytes to the final sync, which reports errors.
        unsafe {
            libc::sync_file_range(self.file.as_raw_fd(), offset, length, libc::SYNC_FILE_RANGE_WRITE);
        }
        self.started = self.written;
    }

    #[cfg(not(target_os = "linux"))]
    fn start_writeback(&mut self) {
        self.started = self.written;
    }
}

impl Write for WritebackFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        self.written += n as u64;
        if self.written - self.started >= WRITEBACK_STRIDE {
            self.start_writeback();
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

#[cfg(test)]
mod tests {
    use hearth_common::files::sync;

    use super::*;

    #[test]
    fn every_byte_written_lands_in_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("part");
        let mut file = WritebackFile::create(&path).unwrap();
        let bytes: Vec<u8> = (0..(WRITEBACK_STRIDE as usize * 2 + 12_345))
            .map(|i| (i % 251) as u8)
            .collect();
        for chunk in bytes.chunks(1 << 20) {
            file.write_all(chunk).unwrap();
        }
        assert_eq!(file.started, WRITEBACK_STRIDE * 2);
        file.finish();
        sync(&path).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
    }
}
