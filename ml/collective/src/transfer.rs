//! One ring operation's traffic, driven by the calling thread alone.
//!
//! Both links are non-blocking for the operation: the thread writes queued spans of the buffer to the right
//! neighbour as far as the link takes them, reads what the left neighbour sent into place (adding or
//! replacing, piece by piece), queues received pieces to be passed on, and waits (`poll`) only when neither
//! link can move. One thread per rank keeps the links busy in both directions without handing the buffer to
//! another thread, and on a host with few cores it avoids the context switches of a sender thread.
//!
//! Every piece travels as a frame of its own, followed by its tag: the sender seals each piece as it starts
//! writing it (from the caller's buffer when the link only checks integrity, from an encrypted copy when it
//! encrypts), and the receiver opens each piece before combining it or passing it on. The header is a frame
//! too. Pieces are cut the same way on both sides: from the start of each span, `PIECE` values at a time.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::ops::Range;
use std::time::{Duration, Instant};

use super::frames::{Opener, Sealer, TAG_LEN};
use super::link::Link;
use super::wire::wait_ready;

/// Values per piece (one frame) received and combined before being passed on (512 KiB of `f32`).
const PIECE: usize = 128 * 1024;

/// Bytes of an operation's header.
pub(crate) const HEADER_LEN: usize = 24;

/// How long a rank that could not send still waits for its left neighbour's header, to name garbage there.
pub(crate) const HEADER_GRACE: Duration = Duration::from_millis(200);

/// How received values combine with local ones.
#[derive(Clone, Copy)]
pub(crate) enum Combine {
    Add,
    Replace,
}

/// One received span of the buffer: where it lands, how, and whether it is passed on to the right.
pub(crate) struct Receive {
    pub range: Range<usize>,
    pub combine: Combine,
    pub forward: bool,
}

/// The neighbour a transfer failed with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    Left,
    Right,
}

/// What one operation sends and receives: `header` goes to the right ahead of `first` (a span of the
/// buffer); the left neighbour's header must equal `header` (checked by `check_header`), and `receives`
/// arrive after it, in order.
pub(crate) struct Plan<'a> {
    pub header: [u8; HEADER_LEN],
    pub check_header: &'a dyn Fn(&[u8; HEADER_LEN]) -> io::Result<()>,
    pub first: Option<Range<usize>>,
    pub receives: &'a [Receive],
}

/// Runs `plan` on `values` over the two links (switched to non-blocking for the call), by `deadline`. On
/// failure, says which neighbour's link failed and how.
pub(crate) fn run(
    left: &mut Link,
    right: &mut Link,
    values: &mut [f32],
    plan: &Plan,
    deadline: Instant,
) -> Result<(), (Side, io::Error)> {
    let (left, _, open) = left.parts();
    let (right, seal, _) = right.parts();
    left.set_nonblocking(true).map_err(|e| (Side::Left, e))?;
    right.set_nonblocking(true).map_err(|e| (Side::Right, e))?;
    let outcome = Transfer::new(values, plan, seal, open).drive(left, right, deadline);
    let restored = (left.set_nonblocking(false).map_err(|e| (Side::Left, e)))
        .and(right.set_nonblocking(false).map_err(|e| (Side::Right, e)));
    outcome.and(restored)
}

/// Where the bytes of the frame being written come from.
enum Body {
    /// This operation's header (sealed in place).
    Header,
    /// A span of the caller's buffer, sent as it is (the link checks integrity only).
    Values(Range<usize>),
    /// An encrypted copy of a span, in `Transfer::sealed`.
    Sealed,
}

/// The frame being written to the right: its body, its tag, and how many of its bytes the link took.
struct Frame {
    body: Body,
    tag: [u8; TAG_LEN],
    sent: usize,
}

/// The state of one transfer: what is left to send and to receive.
struct Transfer<'a> {
    values: &'a mut [f32],
    check_header: &'a dyn Fn(&[u8; HEADER_LEN]) -> io::Result<()>,
    seal: &'a mut Sealer,
    open: &'a mut Opener,
    /// This operation's header, until it is sealed and sent.
    header: [u8; HEADER_LEN],
    header_queued: bool,
    /// The frame being written, if any, and the encrypted copy of its span when the link encrypts.
    frame: Option<Frame>,
    sealed: Vec<u8>,
    /// Spans queued for the right neighbour, in order, each sent as frames of up to `PIECE` values.
    outgoing: VecDeque<Range<usize>>,
    /// The left neighbour's header frame as read so far.
    their_header: [u8; HEADER_LEN + TAG_LEN],
    header_read: usize,
    /// The receives still to come (the first one under way), the start of its current piece, how many
    /// bytes of that piece's frame have been read, and its tag.
    receives: &'a [Receive],
    piece_start: usize,
    piece_read: usize,
    piece_tag: [u8; TAG_LEN],
    /// Where added pieces are read before they are added.
    scratch: Vec<f32>,
}

impl<'a> Transfer<'a> {
    fn new(values: &'a mut [f32], plan: &'a Plan, seal: &'a mut Sealer, open: &'a mut Opener) -> Self {
        let adds = plan.receives.iter().any(|r| matches!(r.combine, Combine::Add));
        Self {
            values,
            check_header: plan.check_header,
            seal,
            open,
            header: plan.header,
            header_queued: true,
            frame: None,
            sealed: Vec::new(),
            outgoing: plan.first.clone().into_iter().collect(),
            their_header: [0; HEADER_LEN + TAG_LEN],
            header_read: 0,
            receives: plan.receives,
            piece_start: plan.receives.first().map_or(0, |r| r.range.start),
            piece_read: 0,
            piece_tag: [0; TAG_LEN],
            scratch: if adds { vec![0.0; PIECE] } else { Vec::new() },
        }
    }

    /// Moves data until everything is sent and received, waiting for a link only when neither can move.
    fn drive(mut self, left: &TcpStream, right: &TcpStream, deadline: Instant) -> Result<(), (Side, io::Error)> {
        let (mut last_read, mut last_write) = (Instant::now(), Instant::now());
        loop {
            let wrote = match self.send_some(right) {
                Ok(wrote) => wrote,
                Err(e) => return Err(self.blame_failed_send(left, e, deadline)),
            };
            let read = self.receive_some(left).map_err(|e| (Side::Left, e))?;
            let (reading, writing) = (self.wants_to_read(), self.wants_to_write());
            if !reading && !writing {
                return Ok(());
            }
            let now = Instant::now();
            if wrote {
                last_write = now;
            }
            if read {
                last_read = now;
            }
            if !wrote && !read {
                let ready = wait_ready(reading.then_some(left), writing.then_some(right), deadline);
                // The link that has been still the longest is the one that failed to keep up.
                let side = if reading && (!writing || last_read <= last_write) {
                    Side::Left
                } else {
                    Side::Right
                };
                ready.map_err(|e| (side, e))?;
            }
        }
    }

    /// The neighbour a failed send is blamed on. A right neighbour that dropped the connection has often only
    /// failed first on the garbage this rank is about to read: the left's header is read for a moment, and
    /// garbage in it is the cause named.
    fn blame_failed_send(&mut self, left: &TcpStream, sent: io::Error, deadline: Instant) -> (Side, io::Error) {
        let until = deadline.min(Instant::now() + HEADER_GRACE);
        while self.header_read < self.their_header.len() {
            match self.receive_header(left) {
                Err(e) if e.kind() == io::ErrorKind::InvalidData => return (Side::Left, e),
                Err(_) => break,
                Ok(true) => {}
                Ok(false) if wait_ready(Some(left), None, until).is_err() => break,
                Ok(false) => {}
            }
        }
        (Side::Right, sent)
    }

    fn wants_to_write(&self) -> bool {
        self.header_queued || self.frame.is_some() || !self.outgoing.is_empty()
    }

    /// Whether more is to be read now: the header, or a piece that no unsent span overlaps.
    fn wants_to_read(&self) -> bool {
        self.header_read < self.their_header.len() || self.receives.first().is_some_and(|_| !self.waits_for_send())
    }

    /// Whether the current piece must wait before it is read: it would write over a span not yet sent (queued,
    /// or being written straight from the buffer).
    ///
    /// It never waits long: the only span received after being queued is an allgather chunk a rank sent in
    /// the reduce-scatter, which the left neighbour returns only after reading all of it.
    fn waits_for_send(&self) -> bool {
        let piece = self.piece();
        let in_flight = self.frame.as_ref().and_then(|frame| match &frame.body {
            Body::Values(span) => Some(span),
            Body::Header | Body::Sealed => None,
        });
        self.piece_read == 0
            && !piece.is_empty()
            && (self.outgoing.iter().chain(in_flight)).any(|span| span.start < piece.end && piece.start < span.end)
    }

    /// The piece of the current receive being read.
    fn piece(&self) -> Range<usize> {
        let end = self.receives.first().map_or(0, |r| r.range.end);
        self.piece_start..(self.piece_start + PIECE).min(end)
    }

    /// Seals the next frame to send — the header, or the next piece of the front span — if there is one.
    fn next_frame(&mut self) -> io::Result<Option<Frame>> {
        if std::mem::take(&mut self.header_queued) {
            let tag = self.seal.seal(&mut self.header, 0)?;
            return Ok(Some(Frame {
                body: Body::Header,
                tag,
                sent: 0,
            }));
        }
        let Some(span) = self.outgoing.front_mut() else {
            return Ok(None);
        };
        let piece = span.start..(span.start + PIECE).min(span.end);
        if piece.end < span.end {
            span.start = piece.end;
        } else {
            self.outgoing.pop_front();
        }
        let values: &mut [u8] = bytemuck::cast_slice_mut(&mut self.values[piece.clone()]);
        let (body, tag) = if self.seal.encrypts() {
            self.sealed.clear();
            self.sealed.extend_from_slice(values);
            (Body::Sealed, self.seal.seal(&mut self.sealed, 0)?)
        } else {
            (Body::Values(piece), self.seal.seal(values, 0)?)
        };
        Ok(Some(Frame { body, tag, sent: 0 }))
    }

    /// Writes frames until the right link would block or nothing is left; whether anything was written.
    fn send_some(&mut self, mut right: &TcpStream) -> io::Result<bool> {
        let mut wrote = false;
        loop {
            if self.frame.is_none() {
                self.frame = self.next_frame()?;
            }
            let Some(frame) = &self.frame else {
                return Ok(wrote);
            };
            let body: &[u8] = match &frame.body {
                Body::Header => &self.header,
                Body::Values(span) => bytemuck::cast_slice(&self.values[span.clone()]),
                Body::Sealed => &self.sealed,
            };
            let pending = if frame.sent < body.len() {
                &body[frame.sent..]
            } else {
                &frame.tag[frame.sent - body.len()..]
            };
            let written = match right.write(pending) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(wrote),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            wrote = true;
            let total = body.len() + TAG_LEN;
            if let Some(frame) = &mut self.frame {
                frame.sent += written;
                if frame.sent == total {
                    self.frame = None;
                }
            }
        }
    }

    /// Reads what has arrived of the left neighbour's header; once whole, opens and checks it. Says whether
    /// anything was read.
    fn receive_header(&mut self, left: &TcpStream) -> io::Result<bool> {
        let got = read_some(left, &mut self.their_header[self.header_read..])?;
        self.header_read += got;
        if self.header_read == self.their_header.len() {
            let (header, tag) = self.their_header.split_at_mut(HEADER_LEN);
            let tag: [u8; TAG_LEN] = (&*tag).try_into().map_err(|_| io::ErrorKind::InvalidData)?;
            self.open.open(header, 0, &tag)?;
            let header: [u8; HEADER_LEN] = (&*header).try_into().map_err(|_| io::ErrorKind::InvalidData)?;
            (self.check_header)(&header)?;
        }
        Ok(got > 0)
    }

    /// Reads the header, then pieces, until the left link has nothing more, a piece must wait for a send, or a
    /// piece was completed (so that it is passed on at once); whether anything was read.
    fn receive_some(&mut self, left: &TcpStream) -> io::Result<bool> {
        if self.header_read < self.their_header.len() {
            let moved = self.receive_header(left)?;
            if self.header_read < self.their_header.len() {
                return Ok(moved);
            }
        }
        let mut read = false;
        while !self.receives.is_empty() && !self.waits_for_send() {
            let piece = self.piece();
            let combine = self.receives[0].combine;
            let body_len = piece.len() * size_of::<f32>();
            let body: &mut [u8] = match combine {
                Combine::Add => bytemuck::cast_slice_mut(&mut self.scratch[..piece.len()]),
                Combine::Replace => bytemuck::cast_slice_mut(&mut self.values[piece.clone()]),
            };
            if self.piece_read < body_len + TAG_LEN {
                let got = if self.piece_read < body_len {
                    read_some(left, &mut body[self.piece_read..])?
                } else {
                    read_some(left, &mut self.piece_tag[self.piece_read - body_len..])?
                };
                if got == 0 {
                    return Ok(read);
                }
                read = true;
                self.piece_read += got;
                if self.piece_read < body_len + TAG_LEN {
                    continue;
                }
            }
            self.open.open(body, 0, &self.piece_tag)?;
            self.finish_piece(piece, combine);
            if read {
                return Ok(true);
            }
        }
        Ok(read)
    }

    /// Combines a fully read piece, queues it to be passed on if asked, and moves to the next piece.
    fn finish_piece(&mut self, piece: Range<usize>, combine: Combine) {
        if let Combine::Add = combine {
            let incoming = &self.scratch[..piece.len()];
            let target = &mut self.values[piece.clone()];
            target.iter_mut().zip(incoming).for_each(|(x, y)| *x += *y);
        }
        let receive = &self.receives[0];
        if receive.forward {
            self.outgoing.push_back(piece.clone());
        }
        self.piece_read = 0;
        if piece.end < receive.range.end {
            self.piece_start = piece.end;
        } else {
            self.receives = &self.receives[1..];
            self.piece_start = self.receives.first().map_or(0, |r| r.range.start);
        }
    }
}

/// Reads what `left` has into `buf`: the byte count, 0 if it has nothing now; an error if it closed.
fn read_some(mut left: &TcpStream, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        return match left.read(buf) {
            Ok(0) if !buf.is_empty() => Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => Ok(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(0),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => Err(e),
        };
    }
}
