//! One partition of a local CSV file read as batches: the lines that start in its byte range (DataFusion's
//! rule: a line belongs to the range its first byte is in), read in large blocks and decoded by
//! [`LineDecoder`] while they are plain. From the first batch that is not — a quote, a lone `\r`, bytes that
//! are not UTF-8, a line the decoder refuses — the rest of the range goes to arrow's CSV decoder, built as
//! DataFusion builds it, so quoted fields and every error are arrow's.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::csv::reader::Decoder;
use datafusion::error::{DataFusionError, Result as DfResult};

use super::decode::LineDecoder;

/// How many bytes are read from the file at a time.
const BLOCK: usize = 4 << 20;

/// Makes arrow's CSV decoder for the rest of a range; its argument says whether a header is still to skip.
pub(super) type ArrowDecoderFactory = Box<dyn Fn(bool) -> Decoder + Send>;

/// What a batch of plain lines came to.
enum Plain {
    Batch(RecordBatch),
    /// No line of the range is left.
    End,
    /// A line from the batch's first on is not plain: arrow's decoder reads from there.
    Refused,
}

/// The batches of the lines starting in a byte range of a file.
pub(super) struct RangeReader {
    file: File,
    path: PathBuf,
    quote: u8,
    batch_size: usize,
    /// Bytes read and not yet given to a batch; `buffer[0]` is at `buffer_at` in the file.
    buffer: Vec<u8>,
    buffer_at: u64,
    /// Where in `buffer` the batch being decoded starts (bytes before it may be dropped).
    batch_start: usize,
    /// Where in `buffer` the next line starts.
    cursor: usize,
    /// Lines starting at or after this byte belong to the next range (`u64::MAX`: none does).
    end: u64,
    /// Where this range's last line ends, once found (where arrow's decoder must stop).
    limit: Option<u64>,
    positioned: bool,
    eof: bool,
    /// The range starts mid-file and its first line is not yet found.
    aligning: bool,
    /// The file's header line is still to skip.
    header: bool,
    plain: Option<LineDecoder>,
    arrow: Option<Decoder>,
    make_arrow: ArrowDecoderFactory,
}

impl RangeReader {
    /// A reader of the lines of `file` starting in `[start, end)` (`path` names it in errors), skipping a
    /// header line first when `header`, decoding with `plain` and, from where it gives up, with
    /// `make_arrow(header still to skip)`.
    pub(super) fn new(
        (file, path): (File, PathBuf),
        (start, end): (u64, u64),
        (quote, header, batch_size): (u8, bool, usize),
        plain: LineDecoder,
        make_arrow: ArrowDecoderFactory,
    ) -> Self {
        Self {
            file,
            path,
            quote,
            batch_size,
            buffer: Vec::with_capacity(BLOCK),
            // A range that starts mid-file starts after the first `\n` from the byte before it.
            buffer_at: start.saturating_sub(1),
            batch_start: 0,
            cursor: 0,
            end,
            limit: None,
            positioned: false,
            eof: false,
            aligning: start > 0,
            header,
            plain: Some(plain),
            arrow: None,
            make_arrow,
        }
    }

    /// Drops the bytes before `batch_start` and reads the next block; false at the end of the file.
    fn fill(&mut self) -> DfResult<bool> {
        if self.eof {
            return Ok(false);
        }
        let drop = self.batch_start;
        self.buffer.drain(..drop);
        self.buffer_at += drop as u64;
        self.batch_start = 0;
        self.cursor -= drop;
        if !self.positioned {
            let at = self.buffer_at + self.buffer.len() as u64;
            self.file.seek(SeekFrom::Start(at)).map_err(|e| self.io_error(e))?;
            self.positioned = true;
        }
        let had = self.buffer.len();
        self.buffer.resize(had + BLOCK, 0);
        let mut read = 0;
        while read < BLOCK {
            match self.file.read(&mut self.buffer[had + read..]) {
                Ok(0) => break,
                Ok(n) => read += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io_error(e)),
            }
        }
        self.buffer.truncate(had + read);
        self.eof = read < BLOCK;
        Ok(read > 0)
    }

    fn io_error(&self, error: std::io::Error) -> DataFusionError {
        DataFusionError::Execution(format!("reading {}: {error}", self.path.display()))
    }

    /// Where in the file `buffer[index]` is.
    fn at(&self, index: usize) -> u64 {
        self.buffer_at + index as u64
    }

    /// The end of the line starting at `cursor` (its `\n`, or the end of the file's last line), reading
    /// more as needed; `None` when no line starts there.
    fn line_end(&mut self) -> DfResult<Option<usize>> {
        let mut searched = self.cursor;
        loop {
            if let Some(offset) = memchr::memchr(b'\n', &self.buffer[searched..]) {
                return Ok(Some(searched + offset));
            }
            let kept_from = self.cursor;
            searched = self.buffer.len();
            if !self.fill()? {
                return Ok((self.cursor < self.buffer.len()).then_some(self.buffer.len()));
            }
            searched -= kept_from - self.cursor;
        }
    }

    /// The line at `cursor` without its terminator, where the next one starts, and whether the line ended
    /// with `\r\n`.
    fn next_line(&mut self) -> DfResult<Option<(std::ops::Range<usize>, usize, bool)>> {
        let Some(end) = self.line_end()? else {
            return Ok(None);
        };
        let next = (end + 1).min(self.buffer.len());
        let crlf = end > self.cursor && end < self.buffer.len() && self.buffer[end - 1] == b'\r';
        Ok(Some((self.cursor..end - usize::from(crlf), next, crlf)))
    }

    /// Moves `cursor` to the range's first line: past the first `\n` from the byte before the range.
    fn align(&mut self) -> DfResult<bool> {
        self.aligning = false;
        match self.line_end()? {
            Some(newline) if newline < self.buffer.len() => {
                self.cursor = newline + 1;
                self.batch_start = self.cursor;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Skips the header line (the first that is not empty); a quoted one, which may span lines, or one of
    /// another width, which arrow refuses, is left to arrow's decoder.
    fn skip_header(&mut self) -> DfResult<()> {
        self.header = false;
        while let Some((line, next, _)) = self.next_line()? {
            let text = &self.buffer[line];
            if text.is_empty() {
                self.cursor = next;
                continue;
            }
            let plain = memchr::memchr2(self.quote, b'\r', text).is_none()
                && self.plain.as_ref().is_some_and(|decoder| decoder.fields_match(text));
            if !plain {
                self.batch_start = self.cursor;
                self.plain = None;
                self.arrow = Some((self.make_arrow)(true));
            } else {
                self.cursor = next;
            }
            break;
        }
        self.batch_start = self.cursor;
        Ok(())
    }

    /// Decodes the next batch of plain lines.
    fn plain_batch(&mut self, decoder: &mut LineDecoder) -> DfResult<Plain> {
        self.batch_start = self.cursor;
        let mut crlf = 0;
        while decoder.rows() < self.batch_size && self.at(self.cursor) < self.end {
            let Some((line, next, ends_crlf)) = self.next_line()? else {
                break;
            };
            crlf += usize::from(ends_crlf);
            if !line.is_empty() && !decoder.decode(&self.buffer[line]) {
                self.cursor = self.batch_start;
                return Ok(Plain::Refused);
            }
            self.cursor = next;
        }
        let lines = &self.buffer[self.batch_start..self.cursor];
        let plain = memchr::memchr(self.quote, lines).is_none()
            && memchr::memchr_iter(b'\r', lines).count() == crlf
            && std::str::from_utf8(lines).is_ok();
        if !plain {
            self.cursor = self.batch_start;
            return Ok(Plain::Refused);
        }
        if decoder.rows() == 0 {
            return Ok(Plain::End);
        }
        Ok(Plain::Batch(decoder.finish()?))
    }

    /// The next batch from arrow's decoder, fed the range's bytes from `cursor` on; `None` at its end.
    fn arrow_batch(&mut self, decoder: &mut Decoder) -> DfResult<Option<RecordBatch>> {
        loop {
            self.find_limit();
            let input_end = self
                .limit
                .map_or(self.buffer.len(), |limit| (limit - self.buffer_at) as usize);
            if self.cursor < input_end {
                let read = decoder.decode(&self.buffer[self.cursor..input_end])?;
                self.cursor += read;
                if decoder.capacity() == 0 {
                    return Ok(decoder.flush()?);
                }
            }
            if self.cursor >= input_end && (self.limit.is_some() || self.eof) {
                decoder.decode(&[])?;
                return Ok(decoder.flush()?);
            }
            self.batch_start = self.cursor;
            self.fill()?;
        }
    }

    /// Finds where the range's last line ends — the first `\n` from its last byte — once it is read.
    fn find_limit(&mut self) {
        if self.limit.is_some() || self.end == u64::MAX || self.at(self.buffer.len()) < self.end {
            return;
        }
        let from = (self.end - 1).saturating_sub(self.buffer_at) as usize;
        self.limit = memchr::memchr(b'\n', &self.buffer[from..]).map(|i| self.at(from + i + 1));
    }

    fn next_batch(&mut self) -> DfResult<Option<RecordBatch>> {
        if self.aligning && !self.align()? {
            return Ok(None);
        }
        if self.header {
            self.skip_header()?;
        }
        if let Some(mut plain) = self.plain.take() {
            match self.plain_batch(&mut plain)? {
                Plain::Batch(batch) => {
                    self.plain = Some(plain);
                    return Ok(Some(batch));
                }
                Plain::End => return Ok(None),
                Plain::Refused => self.arrow = Some((self.make_arrow)(false)),
            }
        }
        let Some(mut arrow) = self.arrow.take() else {
            return Ok(None);
        };
        let batch = self.arrow_batch(&mut arrow)?;
        if batch.is_some() {
            self.arrow = Some(arrow);
        }
        Ok(batch)
    }
}

impl Iterator for RangeReader {
    type Item = DfResult<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        let batch = self.next_batch();
        if !matches!(batch, Ok(Some(_))) {
            self.plain = None;
            self.arrow = None;
        }
        batch.transpose()
    }
}
