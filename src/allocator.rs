//! The global allocator of the `mocca` binary and of the benchmarks, which must measure what the
//! binary runs. A library does not choose the allocator of the programs that use it, so this
//! module only offers one; a program installs it with
//! [`install_allocator!`](crate::install_allocator).
//!
//! Why mimalloc: the front end makes a few small allocations per token (identifiers, name
//! parts) and frees them together, where glibc's malloc spends about a sixth of the parse in
//! its slow paths; and glibc grows the heaps of the worker thread the commands run on (a
//! thread, for its stack size) with one `mprotect` call per step: 168 000 calls for a
//! 10⁶-equation model. See BENCHMARKS.md for the figures.

pub use mimalloc::MiMalloc as Allocator;

/// `mi_option_purge_delay` in the bundled mimalloc's `mimalloc.h` (v3; the bindings name no
/// constant for it).
const PURGE_DELAY: i32 = 15;
/// `mi_option_allow_thp`, likewise.
const ALLOW_THP: i32 = 43;
/// The bundled mimalloc's major version, whose option numbering the constants above follow.
pub const MIMALLOC_MAJOR: i32 = 3;

/// Sets mimalloc's defaults for a compiler run; `MIMALLOC_*` environment variables still
/// override them.
/// - Freed memory is kept for reuse instead of being returned to the system after a delay: a
///   run is short, and at 10⁶ equations purging made 2 500 `madvise` calls and seven times the
///   page faults, the purged pages being faulted in again.
/// - Transparent huge pages for the first [`HUGE_PAGED`] bytes of the heap only
///   ([`huge_paged_heap`]). A small model's whole run fits there: at N = 300 the heat
///   exchanger's simulation took 1 300 page faults in 4 KiB pages and 260 in this region, and
///   its setup (compile, analysis) went from 1.4 to 1.0 ms, each first touch of a page costing
///   about 2 µs on the virtual machines measured. Huge pages throughout cost more than they
///   saved on large models: the kernel's zeroing of each 2 MiB page took 2.5–3 s of system
///   time at 10⁶ equations (against 1 s for 4 KiB pages) and saved no user time. With the
///   region, `jacobian` at 10⁶ equations ran 7.4–8.2 s against 7.95–8.7 s without.
///
/// Both must be set before mimalloc's first allocation, which reserves its first arena before
/// `main`: [`install_allocator!`](crate::install_allocator) calls this from a constructor that
/// runs before mimalloc's own.
pub extern "C" fn configure() {
    // SAFETY: `mi_option_set_default` stores a value in mimalloc's static option table and
    // needs no initialised allocator; both options take any value.
    unsafe {
        libmimalloc_sys::mi_option_set_default(PURGE_DELAY, -1);
        libmimalloc_sys::mi_option_set_default(ALLOW_THP, 0);
    }
    #[cfg(target_os = "linux")]
    huge_paged_heap();
}

/// The bytes of the heap [`configure`] puts in transparent huge pages.
#[cfg(target_os = "linux")]
pub const HUGE_PAGED: usize = 64 << 20;

/// The bytes of heap [`huge_paged_heap`] reserves in one region: mimalloc allocates from it
/// first, and only past it from arenas of its own. As large as mimalloc's own first arena:
/// its bookkeeping grows with the size (2 MiB here), and mimalloc refuses a region of 16 GiB.
#[cfg(target_os = "linux")]
const REGION: usize = 1 << 30;

/// Whether the kernel backs every anonymous mapping with transparent huge pages unless told
/// otherwise. Read without allocating: mimalloc is not initialised yet.
#[cfg(target_os = "linux")]
fn huge_pages_by_default() -> bool {
    let mut mode = [0u8; 64];
    // SAFETY: a read-only open of a sysfs file into a stack buffer, closed after.
    let read = unsafe {
        let fd = libc::open(
            c"/sys/kernel/mm/transparent_hugepage/enabled".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        );
        if fd < 0 {
            return false;
        }
        let read = libc::read(fd, mode.as_mut_ptr().cast(), mode.len());
        libc::close(fd);
        read
    };
    let mode = &mode[..usize::try_from(read).unwrap_or(0)];
    mode.windows(8).any(|w| w == b"[always]")
}

/// A transparent huge page on x86-64 and most aarch64 kernels.
#[cfg(target_os = "linux")]
const HUGE_PAGE: usize = 2 << 20;

/// Gives mimalloc, as its first arena, a [`REGION`] whose first [`HUGE_PAGED`] bytes the
/// kernel is asked to back with huge pages and the rest not, whatever the system's default.
/// Left to [`configure`]'s defaults (4 KiB pages throughout) when `MIMALLOC_ALLOW_THP` is
/// set, when the system gives every mapping huge pages (its `enabled` mode is `always`: the
/// arenas mimalloc maps past the region would have them), or when the region cannot be mapped
/// (a strict overcommit policy, say).
///
/// mimalloc is initialised here, with huge pages still allowed: initialised with them off,
/// it disables them for the whole process (`PR_SET_THP_DISABLE`), this region included.
/// Then they are turned off for the arenas it maps itself.
#[cfg(target_os = "linux")]
fn huge_paged_heap() {
    // SAFETY: `getenv` reads the environment, which nothing modifies before `main`.
    let chosen = unsafe { !libc::getenv(c"MIMALLOC_ALLOW_THP".as_ptr()).is_null() };
    if chosen || huge_pages_by_default() {
        return;
    }
    // SAFETY: a fresh anonymous private mapping, touched by nobody else; the advice only
    // changes how the kernel backs it.
    let (mapped, start) = unsafe {
        let mapped = libc::mmap(
            std::ptr::null_mut(),
            REGION + HUGE_PAGE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        );
        if mapped == libc::MAP_FAILED {
            return;
        }
        let start = (mapped as usize).next_multiple_of(HUGE_PAGE);
        let advise = |at: usize, len: usize, advice: libc::c_int| {
            libc::madvise(at as *mut libc::c_void, len, advice);
        };
        advise(start, HUGE_PAGED, libc::MADV_HUGEPAGE);
        advise(
            start + HUGE_PAGED,
            REGION - HUGE_PAGED,
            libc::MADV_NOHUGEPAGE,
        );
        (mapped, start)
    };
    // SAFETY: mimalloc's initialisation and options may be called before its constructor
    // (which then finds it initialised); the region is mapped, readable, writable, zero, and
    // handed over whole to mimalloc, which alone uses it from here on (or, refused, is
    // unmapped untouched).
    unsafe {
        libmimalloc_sys::mi_option_set_default(ALLOW_THP, 1);
        libmimalloc_sys::mi_process_init();
        let mut arena = std::ptr::null_mut();
        let region = start as *const libc::c_void;
        let managed = libmimalloc_sys::mi_manage_os_memory_ex(
            region, REGION, true, false, true, -1, false, &mut arena,
        );
        if !managed {
            libc::munmap(mapped, REGION + HUGE_PAGE);
        }
        libmimalloc_sys::mi_option_set(ALLOW_THP, 0);
    }
}

/// Makes [`Allocator`] the program's global allocator (or `TYPE = VALUE`, a wrapper around it),
/// with [`configure`]'s options set before its first allocation. On Linux that is done by an
/// `.init_array` entry of a higher priority (a lower number) than mimalloc's constructor;
/// elsewhere mimalloc keeps its own defaults.
#[macro_export]
macro_rules! install_allocator {
    () => {
        $crate::install_allocator!($crate::allocator::Allocator = $crate::allocator::Allocator);
    };
    ($allocator:ty = $value:expr) => {
        #[global_allocator]
        static GLOBAL_ALLOCATOR: $allocator = $value;

        #[cfg(target_os = "linux")]
        #[used]
        #[unsafe(link_section = ".init_array.00100")]
        static CONFIGURE_ALLOCATOR: extern "C" fn() = $crate::allocator::configure;
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_option_numbers_are_those_of_the_bundled_mimalloc() {
        // SAFETY: both calls only read mimalloc's static tables.
        let (version, thp_default) = unsafe {
            (
                libmimalloc_sys::mi_version(),
                libmimalloc_sys::mi_option_get(ALLOW_THP),
            )
        };
        assert_eq!(version / 10_000, MIMALLOC_MAJOR, "mimalloc {version}");
        // This test binary runs on the system allocator, unconfigured: THP is allowed.
        assert_eq!(thp_default, 1);
    }
}
