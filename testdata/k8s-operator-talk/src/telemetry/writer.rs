//! Log lines reach stdout from a thread of their own, through a bounded queue. The manager
//! runs on one thread: written there, a line the container runtime is slow to take (a full or
//! slow log disk, a stalled log shipper) would stop every controller, the probes, the webhooks
//! and the Lease renewals with it. A line that finds the queue full is dropped and counted,
//! and the count is logged once stdout takes lines again.

use std::io::{self, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::time::{Duration, Instant};

use tracing_subscriber::fmt::MakeWriter;

/// Lines waiting for stdout at most: about 2 MB of lines of a few hundred bytes.
const QUEUED_LINES: usize = 8192;

/// How long the lines still queued at exit may take to be written.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(2);

enum Queued {
    Line(Vec<u8>),
    /// Answered once every line queued before it is written.
    Flush(SyncSender<()>),
}

/// The `MakeWriter` of the log subscriber: every event it formats becomes one queued line.
#[derive(Clone)]
pub struct Lines {
    queue: SyncSender<Queued>,
    dropped: Arc<AtomicU64>,
}

impl Lines {
    /// Lines written to `out` by a new thread, which lives as long as the process.
    pub fn to(out: impl Write + Send + 'static) -> io::Result<Lines> {
        Lines::with_capacity(out, QUEUED_LINES)
    }

    fn with_capacity(out: impl Write + Send + 'static, capacity: usize) -> io::Result<Lines> {
        let (queue, queued) = mpsc::sync_channel(capacity);
        let dropped = Arc::new(AtomicU64::new(0));
        let counted = dropped.clone();
        std::thread::Builder::new()
            .name("logs".into())
            .spawn(move || write_out(queued, out, &counted))?;
        Ok(Lines { queue, dropped })
    }

    /// Waits, at most `FLUSH_TIMEOUT`, until the lines queued so far are written: the last
    /// lines before the manager exits say why it does.
    pub fn flush(&self) {
        let (done, written) = mpsc::sync_channel(1);
        let deadline = Instant::now() + FLUSH_TIMEOUT;
        let mut flush = Queued::Flush(done);
        loop {
            match self.queue.try_send(flush) {
                Ok(()) => break,
                Err(TrySendError::Full(again)) if Instant::now() < deadline => {
                    flush = again;
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(_) => return,
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let _ = written.recv_timeout(left);
    }

    /// Lines dropped since the count was last logged.
    #[cfg(test)]
    fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

impl<'a> MakeWriter<'a> for Lines {
    type Writer = Line;

    fn make_writer(&'a self) -> Line {
        Line {
            text: Vec::new(),
            lines: self.clone(),
        }
    }
}

/// One event's text, queued whole when the formatter is done with it.
pub struct Line {
    text: Vec<u8>,
    lines: Lines,
}

impl Write for Line {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.text.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        if self.text.is_empty() {
            return;
        }
        let line = Queued::Line(std::mem::take(&mut self.text));
        if let Err(TrySendError::Full(_)) = self.lines.queue.try_send(line) {
            self.lines.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The writing thread: each line as it comes, then how many were dropped meanwhile, logged
/// like any other line (so in the chosen format).
fn write_out(queued: Receiver<Queued>, mut out: impl Write, dropped: &AtomicU64) {
    for item in queued {
        match item {
            Queued::Line(line) => {
                // stdout closed: nothing is left to tell.
                if out.write_all(&line).and_then(|()| out.flush()).is_err() {
                    continue;
                }
                let lost = dropped.swap(0, Ordering::Relaxed);
                if lost > 0 {
                    tracing::warn!(
                        lines = lost,
                        "log lines were dropped: stdout did not take them as fast as they came"
                    );
                }
            }
            Queued::Flush(done) => {
                let _ = done.try_send(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::sync::mpsc::Sender;

    use super::*;

    /// Stdout that takes nothing until `open` is sent, then keeps every byte.
    struct Stalled {
        open: Option<Receiver<()>>,
        taken: Arc<Mutex<Vec<u8>>>,
    }

    impl Write for Stalled {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            if let Some(open) = self.open.take() {
                open.recv().unwrap();
            }
            self.taken.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn stalled(capacity: usize) -> (Lines, Sender<()>, Arc<Mutex<Vec<u8>>>) {
        let (open, opened) = mpsc::channel();
        let taken = Arc::new(Mutex::new(Vec::new()));
        let out = Stalled {
            open: Some(opened),
            taken: taken.clone(),
        };
        (Lines::with_capacity(out, capacity).unwrap(), open, taken)
    }

    fn log(lines: &Lines, text: &str) {
        writeln!(lines.make_writer(), "{text}").unwrap();
    }

    #[test]
    fn a_stalled_stdout_drops_lines_instead_of_blocking_the_logger() {
        let (lines, open, taken) = stalled(2);
        // The first line is taken by the writing thread and stalls it; two more fill the
        // queue. Had the logger blocked, this test would never end.
        for n in 0..10 {
            log(&lines, &format!("line {n}"));
        }
        assert!(lines.dropped() >= 7, "dropped {}", lines.dropped());
        open.send(()).unwrap();
        lines.flush();
        let taken = String::from_utf8(taken.lock().unwrap().clone()).unwrap();
        assert!(taken.starts_with("line 0\n"), "{taken}");
        assert_eq!(lines.dropped(), 0, "the count was not taken: {taken}");
    }

    #[test]
    fn flush_waits_for_every_line_queued_before_it() {
        let (lines, open, taken) = stalled(64);
        for n in 0..50 {
            log(&lines, &format!("line {n}"));
        }
        open.send(()).unwrap();
        lines.flush();
        let expected: String = (0..50).map(|n| format!("line {n}\n")).collect();
        assert_eq!(
            String::from_utf8(taken.lock().unwrap().clone()).unwrap(),
            expected
        );
    }
}
