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
/// - No transparent huge pages: on the virtual machines measured, the kernel's zeroing of each
///   2 MiB page cost 2.5–3 s of system time at 10⁶ equations (against 1 s for 4 KiB pages) and
///   saved no user time.
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
