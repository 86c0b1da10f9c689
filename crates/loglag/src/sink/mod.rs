//! Where records go. A [`Sink`] is a small trait: one `write` is one system call.
//!
//! | sink | constructor |
//! |---|---|
//! | standard output / error | [`FdSink::stdout`], [`FdSink::stderr`] |
//! | a file, appended to | [`FdSink::append`] |
//! | a FIFO or pipe | [`FdSink::fifo`] |
//! | any `io::Write + Send` | [`WriterSink::new`] (or pass the writer to `finish`) |
//! | a chain with a circuit breaker | [`Fallback`] |

mod fallback;
mod fd;

use std::io;

pub use fallback::Fallback;
pub use fd::{set_pipe_size, FdSink};

/// A destination for batches of whole records.
///
/// The writer thread calls `write` until the batch is gone, retrying on
/// `ErrorKind::Interrupted` and continuing after short writes; each call is counted as
/// one write syscall.
pub trait Sink: Send + 'static {
    /// Writes some prefix of `buf`, like [`io::Write::write`]: one system call.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize>;

    /// Pushes buffered bytes down, if the sink buffers.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }

    /// Errors the sink absorbed itself (a fallback that succeeded after its primary
    /// failed) since the last call. They are added to `Metrics::io_errors`.
    fn take_absorbed_errors(&mut self) -> u64 {
        0
    }

    /// The sink's current length, for sinks that have one (regular files). Spool
    /// recovery uses it to deliver an interrupted batch exactly once.
    fn position(&mut self) -> Option<u64> {
        None
    }

    /// Cuts the sink back to `len` bytes (removes a partially written batch).
    fn truncate_to(&mut self, _len: u64) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this sink cannot be truncated",
        ))
    }

    /// Forces written data to stable storage, where that means something.
    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Sink for Box<dyn Sink> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        (**self).write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        (**self).flush()
    }
    fn take_absorbed_errors(&mut self) -> u64 {
        (**self).take_absorbed_errors()
    }
    fn position(&mut self) -> Option<u64> {
        (**self).position()
    }
    fn truncate_to(&mut self, len: u64) -> io::Result<()> {
        (**self).truncate_to(len)
    }
    fn sync(&mut self) -> io::Result<()> {
        (**self).sync()
    }
}

/// Adapts any [`io::Write`] into a [`Sink`].
///
/// ```
/// use loglag::sink::{Sink, WriterSink};
/// let mut sink = WriterSink::new(Vec::new());
/// assert_eq!(sink.write(b"x\n")?, 2);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct WriterSink<W>(pub W);

impl<W: io::Write + Send + 'static> WriterSink<W> {
    /// Wraps `writer`.
    pub fn new(writer: W) -> Self {
        WriterSink(writer)
    }
}

impl<W: io::Write + Send + 'static> Sink for WriterSink<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// Writes all of `buf`, retrying on EINTR and continuing after short writes.
/// Returns the number of `write` calls made, or the error with the bytes written so far.
pub(crate) fn write_all_counted(
    sink: &mut dyn Sink,
    mut buf: &[u8],
) -> (u64, Result<(), (io::Error, usize)>) {
    let mut calls = 0;
    let total = buf.len();
    while !buf.is_empty() {
        calls += 1;
        match sink.write(buf) {
            Ok(0) => {
                return (
                    calls,
                    Err((io::ErrorKind::WriteZero.into(), total - buf.len())),
                )
            }
            Ok(n) => buf = &buf[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return (calls, Err((e, total - buf.len()))),
        }
    }
    (calls, Ok(()))
}
