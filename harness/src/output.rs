//! Output files that never destroy data.
//!
//! A command names its inputs and outputs up front ([`Outputs::reserve`]). Before any work:
//!
//! - an output that names an input, or another output, is refused (paths compared after
//!   canonicalisation; an output that does not exist yet by its canonical parent directory; on
//!   Unix also by device and inode, so a hard link counts as the same file);
//! - an output in a missing directory, or that is a directory, is refused;
//! - each output gets a temporary file beside it (`tempfile::NamedTempFile::new_in`), so an
//!   unwritable directory fails now, not after a long fit.
//!
//! The command then writes every output into its temporary file ([`Outputs::write`]) and only
//! when all are written renames them into place together ([`Outputs::persist`]). A failure at any
//! point before that leaves every existing file as it was and removes the temporary files (they
//! are deleted when [`Outputs`] is dropped). On SIGINT, SIGTERM or SIGHUP the handler installed by
//! [`remove_temporaries_on_signal`] deletes the temporary files still registered and exits with
//! status 130.

use anyhow::{Context, Result, bail};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use tempfile::NamedTempFile;

/// Temporary files not yet persisted or dropped: the signal handler deletes them.
static PENDING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Exit status after a signal removed the temporary files (128 + SIGINT, as shells report it).
pub const SIGNAL_EXIT_CODE: i32 = 130;

/// Installs the SIGINT / SIGTERM / SIGHUP handler that deletes pending temporary files and exits.
/// Call once, at the start of `main`.
pub fn remove_temporaries_on_signal() -> Result<()> {
    ctrlc::set_handler(|| {
        // Holding the lock until exit stops `persist` from renaming a file we are deleting.
        let pending = PENDING.lock().unwrap_or_else(|e| e.into_inner());
        for path in pending.iter() {
            let _ = std::fs::remove_file(path);
        }
        eprintln!("interrupted: no output written");
        std::process::exit(SIGNAL_EXIT_CODE);
    })
    .context("cannot install the signal handler")
}

fn pending() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    PENDING.lock().unwrap_or_else(|e| e.into_inner())
}

/// One output: its flag, where it goes, and the temporary file that will become it.
struct Slot {
    flag: String,
    target: PathBuf,
    temp: Option<NamedTempFile>,
    written: bool,
}

/// The outputs of one command, staged in temporary files and persisted together.
pub struct Outputs {
    slots: Vec<Slot>,
}

/// A file's identity for comparison: its canonical path, and on Unix its device and inode.
#[derive(PartialEq)]
struct Identity {
    path: PathBuf,
    #[cfg(unix)]
    inode: Option<(u64, u64)>,
}

fn identity(path: &Path) -> Result<Identity> {
    let canonical = match path.canonicalize() {
        Ok(p) => p,
        Err(_) => {
            // Not there yet: its directory must be, and then the name is fixed.
            let parent = parent_dir(path);
            let Ok(dir) = parent.canonicalize() else {
                bail!(
                    "cannot write {}: directory {} does not exist",
                    path.display(),
                    parent.display()
                );
            };
            let name = path
                .file_name()
                .with_context(|| format!("{}: not a file name", path.display()))?;
            dir.join(name)
        }
    };
    #[cfg(unix)]
    let inode = {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(&canonical)
            .ok()
            .map(|m| (m.dev(), m.ino()))
    };
    Ok(Identity {
        path: canonical,
        #[cfg(unix)]
        inode,
    })
}

impl Identity {
    fn same_file(&self, other: &Identity) -> bool {
        #[cfg(unix)]
        if self.inode.is_some() && self.inode == other.inode {
            return true;
        }
        self.path == other.path
    }
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

impl Outputs {
    /// Checks `outputs` against `inputs` and each other and creates a temporary file beside each
    /// output. Flags (e.g. `"--model"`) label the messages.
    pub fn reserve(inputs: &[(&str, &Path)], outputs: &[(&str, &Path)]) -> Result<Self> {
        // Inputs that cannot be resolved are reported by their readers, later.
        let inputs: Vec<(&str, &Path, Identity)> = inputs
            .iter()
            .filter_map(|(flag, p)| p.canonicalize().ok().map(|_| (*flag, *p)))
            .map(|(flag, p)| identity(p).map(|id| (flag, p, id)))
            .collect::<Result<_>>()?;
        // Clashes with an input first: they matter more than a missing directory.
        let mut seen: Vec<(&str, &Path, Identity)> = Vec::new();
        for &(flag, path) in outputs {
            let Ok(id) = identity(path) else { continue };
            if let Some((in_flag, in_path, _)) = inputs.iter().find(|(_, _, i)| i.same_file(&id)) {
                bail!(
                    "{flag} {} is the same file as {in_flag} {}: refusing to overwrite an input",
                    path.display(),
                    in_path.display()
                );
            }
            if let Some((other, other_path, _)) = seen.iter().find(|(_, _, i)| i.same_file(&id)) {
                bail!(
                    "{flag} {} and {other} {} are the same file: give each output its own path",
                    path.display(),
                    other_path.display()
                );
            }
            seen.push((flag, path, id));
        }
        for &(flag, path) in outputs {
            identity(path)?;
            if path.is_dir() {
                bail!("{flag} {} is a directory, not a file", path.display());
            }
        }
        let mut slots = Vec::with_capacity(outputs.len());
        for &(flag, path) in outputs {
            slots.push(Slot {
                flag: flag.to_string(),
                target: path.to_path_buf(),
                temp: Some(temporary_beside(path)?),
                written: false,
            });
        }
        Ok(Self { slots })
    }

    /// Writes output `flag` into its temporary file (the target is untouched until
    /// [`persist`](Self::persist)).
    pub fn write(
        &mut self,
        flag: &str,
        write: impl FnOnce(&mut BufWriter<&std::fs::File>) -> Result<()>,
    ) -> Result<()> {
        let slot = self
            .slots
            .iter_mut()
            .find(|s| s.flag == flag)
            .with_context(|| format!("internal: no output {flag} was reserved"))?;
        let temp = slot.temp.as_ref().context("internal: output persisted")?;
        let file = temp.as_file();
        file.set_len(0)?;
        let mut w = BufWriter::new(file);
        let result = write(&mut w)
            .and_then(|()| w.flush().map_err(Into::into))
            .and_then(|()| file.sync_all().map_err(Into::into));
        result.with_context(|| format!("cannot write {}", slot.target.display()))?;
        slot.written = true;
        Ok(())
    }

    /// Writes a `.npy` output.
    pub fn write_npy<T: npyz::AutoSerialize + Copy + 'static>(
        &mut self,
        flag: &str,
        m: &crate::io::Matrix<T>,
    ) -> Result<()> {
        self.write(flag, |w| crate::io::write_npy_to(w, m))
    }

    /// Writes a JSON output.
    pub fn write_json(&mut self, flag: &str, value: &impl serde::Serialize) -> Result<()> {
        self.write(flag, |w| crate::io::write_json_to(w, value))
    }

    /// Renames every written output into place. Fails, changing nothing, if one was not written.
    pub fn persist(mut self) -> Result<()> {
        if let Some(s) = self.slots.iter().find(|s| !s.written) {
            bail!("internal: output {} was not written", s.flag);
        }
        for slot in &mut self.slots {
            let Some(temp) = slot.temp.take() else {
                continue;
            };
            let mut pending = pending();
            let temp_path = temp.path().to_path_buf();
            temp.persist(&slot.target)
                .map_err(|e| e.error)
                .with_context(|| format!("cannot write {}", slot.target.display()))?;
            pending.retain(|p| *p != temp_path);
        }
        Ok(())
    }
}

impl Drop for Outputs {
    fn drop(&mut self) {
        let mut pending = pending();
        for slot in &mut self.slots {
            if let Some(temp) = slot.temp.take() {
                pending.retain(|p| p != temp.path());
                drop(temp); // deletes the file
            }
        }
    }
}

/// Asks Linux to start writing `file`'s dirty pages to disk now, without waiting, so that the
/// `fsync` that ends [`Outputs::write`] finds less to do: a command that writes its output a
/// block at a time calls it after each block, overlapping the disk with the next block's work.
/// Only a hint (nothing happens elsewhere, and errors are left to the `fsync`).
pub fn start_writeback(file: &std::fs::File) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::io::AsRawFd;
        // SAFETY: a plain system call on a file descriptor this process holds open.
        unsafe {
            libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = file;
}

/// Whether a computation on `threads` worker threads leaves a core for [`write_behind`]'s
/// writer. With every core busy the writer takes turns with the workers and gained nothing
/// measurable (`unmix whiten` at 2e4 x 256 on two threads: 0.118 s behind, 0.111 s in turn).
/// `UNMIX_WRITE_BEHIND=always|never` overrides the choice (for measurements).
pub fn core_to_spare(threads: usize) -> bool {
    match std::env::var("UNMIX_WRITE_BEHIND").as_deref() {
        Ok("always") => true,
        Ok("never") => false,
        _ => threads < std::thread::available_parallelism().map_or(1, |n| n.get()),
    }
}

/// How a streamed output's rows reach its file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// In row order, by a second thread while the workers compute the next block
    /// ([`write_behind`]).
    Behind,
    /// In row order, a block computed and then written in turn ([`write_behind`] without).
    InTurn,
    /// Each worker writes the rows it computed at their place in the file (positional writes).
    InPlace,
}

impl Delivery {
    /// For `threads` workers: behind them when they leave a core free ([`core_to_spare`]);
    /// otherwise in place, where positional writes of the values' memory are the file's bytes (a
    /// little-endian Unix), else in turn. `UNMIX_WRITE_IN_PLACE=never` chooses in turn over in
    /// place (for measurements).
    pub fn for_threads(threads: usize) -> Self {
        if core_to_spare(threads) {
            Self::Behind
        } else if cfg!(all(unix, target_endian = "little"))
            && std::env::var("UNMIX_WRITE_IN_PLACE").as_deref() != Ok("never")
        {
            Self::InPlace
        } else {
            Self::InTurn
        }
    }
}

/// Computes blocks on this thread and hands them to `sink`, in block order. `fill(b, buf)`
/// computes block `b` of `blocks` into `buf` (`max_len` values) and returns how many values it
/// filled.
///
/// With `behind`, `sink` runs on a second thread (write-behind): while it writes block `b` (for
/// a file, mostly the kernel's copy into the page cache), `fill` computes block `b + 1`. Two
/// buffers of `max_len` circulate between the threads (one when there is one block). Without,
/// the blocks are filled and sunk in turn on this thread, in one buffer.
///
/// The first error stops the stream: an error of `fill` is returned once `sink` has taken the
/// blocks before it; an error of `sink` is returned and no later block goes to `sink`.
pub fn write_behind<T: Clone + Send>(
    blocks: usize,
    max_len: usize,
    zero: T,
    behind: bool,
    mut fill: impl FnMut(usize, &mut [T]) -> Result<usize>,
    mut sink: impl FnMut(&[T]) -> Result<()> + Send,
) -> Result<()> {
    use std::sync::mpsc::sync_channel;
    if blocks == 0 {
        return Ok(());
    }
    if !behind {
        let mut buf = crate::io::zeroed(max_len, zero);
        for b in 0..blocks {
            let len = fill(b, &mut buf)?;
            sink(&buf[..len])?;
        }
        return Ok(());
    }
    let buffers = blocks.min(2);
    let (full_tx, full_rx) = sync_channel::<(Vec<T>, usize)>(buffers);
    let (free_tx, free_rx) = sync_channel::<Vec<T>>(buffers);
    for _ in 0..buffers {
        free_tx
            .send(crate::io::zeroed(max_len, zero.clone()))
            .expect("a channel with room for every buffer");
    }
    std::thread::scope(|scope| {
        let writer = std::thread::Builder::new()
            .name("unmix-writer".into())
            .spawn_scoped(scope, move || -> Result<()> {
                for (buf, len) in full_rx {
                    sink(&buf[..len])?;
                    // Never blocks (the channel has room for every buffer); after the last
                    // block nobody takes the buffer back, and it is dropped with the channel.
                    let _ = free_tx.send(buf);
                }
                Ok(())
            })?;
        let mut filled = Ok(());
        for b in 0..blocks {
            // Both channels close only when the writer stopped on an error, which it returns.
            let Ok(mut buf) = free_rx.recv() else { break };
            match fill(b, &mut buf) {
                Ok(len) => {
                    if full_tx.send((buf, len)).is_err() {
                        break;
                    }
                }
                Err(e) => {
                    filled = Err(e);
                    break;
                }
            }
        }
        drop(full_tx);
        let written = writer
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        written.and(filled)
    })
}

/// A hidden temporary file in `path`'s directory, registered for deletion on a signal.
fn temporary_beside(path: &Path) -> Result<NamedTempFile> {
    let dir = parent_dir(path);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Register under the lock, so that a signal cannot come between creating and registering.
    let mut pending = pending();
    let mut builder = tempfile::Builder::new();
    let prefix = format!(".{name}.");
    builder.prefix(&prefix).suffix(".tmp");
    // A temporary file is private (0600); the output it becomes gets the mode a plain create
    // would give it (0666 less the umask).
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let temp = builder.tempfile_in(&dir).with_context(|| {
        format!(
            "cannot write {}: cannot create a file in {}",
            path.display(),
            dir.display()
        )
    })?;
    pending.push(temp.path().to_path_buf());
    Ok(temp)
}

/// Writes one file atomically: a temporary file beside it, renamed into place when complete.
/// For a single output that is not checked against inputs (the demo's, tests'); commands use
/// [`Outputs`].
pub fn write_atomic(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<&std::fs::File>) -> Result<()>,
) -> Result<()> {
    let flag = "output";
    let mut outputs = Outputs {
        slots: vec![Slot {
            flag: flag.to_string(),
            target: path.to_path_buf(),
            temp: Some(temporary_beside(path)?),
            written: false,
        }],
    };
    outputs.write(flag, write)?;
    outputs.persist()
}

#[cfg(test)]
mod tests {
    use super::write_behind;
    use anyhow::bail;

    /// Block `b` of the tests' streams: `len` values from `100 b`.
    fn fill_block(b: usize, buf: &mut [u32], len: usize) -> usize {
        for (i, v) in buf[..len].iter_mut().enumerate() {
            *v = (100 * b + i) as u32;
        }
        len
    }

    #[test]
    fn hands_every_block_to_the_sink_in_order() {
        for (blocks, behind) in [0, 1, 2, 3, 7]
            .into_iter()
            .flat_map(|b| [(b, true), (b, false)])
        {
            let mut seen = Vec::new();
            // Blocks of 5 values, the last one short, as the last block of rows is.
            let len = |b: usize| if b + 1 == blocks { 3 } else { 5 };
            write_behind(
                blocks,
                5,
                0u32,
                behind,
                |b, buf| Ok(fill_block(b, buf, len(b))),
                |v| {
                    seen.push(v.to_vec());
                    Ok(())
                },
            )
            .unwrap();
            let expected: Vec<Vec<u32>> = (0..blocks)
                .map(|b| (0..len(b)).map(|i| (100 * b + i) as u32).collect())
                .collect();
            assert_eq!(seen, expected, "{blocks} blocks, behind: {behind}");
        }
    }

    #[test]
    fn an_error_of_fill_comes_after_the_blocks_before_it() {
        for behind in [true, false] {
            fill_fails_at_block_3(behind);
        }
    }

    fn fill_fails_at_block_3(behind: bool) {
        let mut seen = Vec::new();
        let mut filled = Vec::new();
        let err = write_behind(
            6,
            4,
            0u32,
            behind,
            |b, buf| {
                filled.push(b);
                if b == 3 {
                    bail!("block {b} failed");
                }
                Ok(fill_block(b, buf, 4))
            },
            |v| {
                seen.push(v[0]);
                Ok(())
            },
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "block 3 failed");
        assert_eq!(filled, [0, 1, 2, 3], "no block after the failed one");
        assert_eq!(seen, [0, 100, 200]);
    }

    #[test]
    fn an_error_of_the_sink_stops_the_stream() {
        for behind in [true, false] {
            sink_fails_at_block_1(behind);
        }
    }

    fn sink_fails_at_block_1(behind: bool) {
        let mut seen = Vec::new();
        let mut filled = 0;
        let err = write_behind(
            50,
            4,
            0u32,
            behind,
            |b, buf| {
                filled += 1;
                Ok(fill_block(b, buf, 4))
            },
            |v| {
                seen.push(v[0]);
                if v[0] == 100 {
                    bail!("disk full");
                }
                Ok(())
            },
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "disk full");
        assert_eq!(seen, [0, 100], "no block after the failed write");
        // At most the two buffers in flight and one more are computed after the failure.
        assert!(filled <= 5, "{filled} blocks computed");
    }
}
