//! A file mapped shared into memory, read and written through atomic words
//! only (the writer queue's file: every process that opens the store maps
//! it).

use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU32, AtomicU64};

/// `len` bytes of a file, mapped shared and writable; unmapped on drop.
pub(crate) struct SharedMap {
    ptr: *mut libc::c_void,
    len: usize,
}

// SAFETY: the mapping is only accessed through atomics, which other threads
// (and processes) may use at the same time; the pointer itself is immutable
// for the map's lifetime.
unsafe impl Send for SharedMap {}
// SAFETY: as for `Send`: `&SharedMap` only hands out atomics.
unsafe impl Sync for SharedMap {}

impl SharedMap {
    /// Map the first `len` bytes of `file` (which must be at least that long
    /// and open for reading and writing), shared with every other mapping
    /// of the file; `None` if the kernel refuses.
    pub(crate) fn new(file: &File, len: usize) -> Option<SharedMap> {
        if file.metadata().ok()?.len() < len as u64 {
            return None;
        }
        // SAFETY: a new shared mapping of `len` bytes of a file at least that
        // long; the kernel picks the address, so no existing memory changes.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        (ptr != libc::MAP_FAILED).then_some(SharedMap { ptr, len })
    }

    /// The 64-bit word at byte `offset` (a multiple of 8 within the map).
    pub(crate) fn u64_at(&self, offset: usize) -> &AtomicU64 {
        assert!(offset % 8 == 0 && offset + 8 <= self.len, "word {offset}");
        // SAFETY: in bounds (checked above) and 8-byte aligned (the mapping
        // is page-aligned); the memory lives as long as `self`, and is only
        // ever used as atomics.
        unsafe { &*((self.ptr as *const u8).add(offset) as *const AtomicU64) }
    }

    /// The 32-bit word at byte `offset` (a multiple of 4 within the map).
    pub(crate) fn u32_at(&self, offset: usize) -> &AtomicU32 {
        assert!(offset % 4 == 0 && offset + 4 <= self.len, "word {offset}");
        // SAFETY: in bounds (checked above) and 4-byte aligned (the mapping
        // is page-aligned); the memory lives as long as `self`, and is only
        // ever used as atomics.
        unsafe { &*((self.ptr as *const u8).add(offset) as *const AtomicU32) }
    }
}

impl Drop for SharedMap {
    fn drop(&mut self) {
        // SAFETY: unmapping our own mapping, once; no reference into it
        // outlives `self`.
        unsafe {
            libc::munmap(self.ptr, self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn two_maps_of_one_file_share_their_words() {
        let f = tempfile::tempfile().unwrap();
        f.set_len(4096).unwrap();
        let a = SharedMap::new(&f, 4096).unwrap();
        let b = SharedMap::new(&f, 4096).unwrap();
        a.u64_at(8).store(7, Ordering::SeqCst);
        a.u32_at(4092).store(9, Ordering::SeqCst);
        assert_eq!(b.u64_at(8).load(Ordering::SeqCst), 7);
        assert_eq!(b.u32_at(4092).load(Ordering::SeqCst), 9);
        assert!(SharedMap::new(&f, 8192).is_none(), "longer than the file");
        let out = std::panic::catch_unwind(|| a.u64_at(4092).load(Ordering::SeqCst));
        assert!(out.is_err(), "past the end");
    }
}
