//! A whole file mapped read-only, and dropping a file's pages from the
//! page cache: for benches that compare reading strategies (the
//! time-series paper's mmap against double buffering). `series play`
//! reads with `read` into buffers of its own.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

/// A private read-only mapping of a whole file, unmapped on drop.
pub struct FileMap {
    ptr: *mut libc::c_void,
    len: usize,
}

// SAFETY: the mapping is read-only and owned by this value alone; reading
// it from another thread is as safe as reading a `&[u8]`.
unsafe impl Send for FileMap {}
// SAFETY: as above: shared references only read.
unsafe impl Sync for FileMap {}

impl FileMap {
    /// Maps `path` (a non-empty regular file).
    pub fn open(path: &Path) -> io::Result<FileMap> {
        let f = File::open(path)?;
        let len = usize::try_from(f.metadata()?.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "file too large to map"))?;
        if len == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "an empty file cannot be mapped",
            ));
        }
        // SAFETY: a fresh private read-only mapping of `len` bytes of an
        // open file; the kernel picks the address. The descriptor may be
        // closed afterwards (the mapping keeps the file).
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                f.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(FileMap { ptr, len })
    }

    /// Tells the kernel the mapping is read front to back
    /// (MADV_SEQUENTIAL: aggressive read-ahead, pages behind dropped
    /// early), as TCPivo's prefetching does.
    pub fn advise_sequential(&self) -> io::Result<()> {
        // SAFETY: `ptr`/`len` are this mapping; the call only advises.
        let r = unsafe { libc::madvise(self.ptr, self.len, libc::MADV_SEQUENTIAL) };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// The file's bytes. (A file truncated by someone else while mapped
    /// faults on access: benches map files they made.)
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` maps `len` readable bytes until drop.
        unsafe { std::slice::from_raw_parts(self.ptr as *const u8, self.len) }
    }
}

impl Drop for FileMap {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `open`, unmapped once; no slice from
        // `bytes` outlives `self`.
        unsafe { libc::munmap(self.ptr, self.len) };
    }
}

/// Drops `path`'s clean pages from the page cache (POSIX_FADV_DONTNEED),
/// so the next read comes from the disk.
pub fn drop_cached(path: &Path) -> io::Result<()> {
    let f = File::open(path)?;
    // SAFETY: a valid descriptor of an open file; the call only advises.
    let r = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if r != 0 {
        return Err(io::Error::from_raw_os_error(r));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mapped_file_reads_as_written_and_empty_ones_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, b"records").unwrap();
        drop_cached(&p).unwrap();
        assert_eq!(FileMap::open(&p).unwrap().bytes(), b"records");
        std::fs::write(&p, b"").unwrap();
        assert!(FileMap::open(&p).is_err());
    }
}
