//! The allocator the binary installs puts the heap's first bytes in transparent huge pages and
//! the rest in small pages (`mocca::allocator`): checked against the kernel's own account of
//! this process's mappings, whose `VmFlags` show the advice given (`hg` for huge pages, `nh`
//! for none).
#![cfg(target_os = "linux")]

use std::ops::Range;

mocca::install_allocator!();

/// The address range of an `smaps` entry's header line (`start-end perms …`).
fn header_range(line: &str) -> Option<Range<usize>> {
    let (start, end) = line.split_whitespace().next()?.split_once('-')?;
    Some(usize::from_str_radix(start, 16).ok()?..usize::from_str_radix(end, 16).ok()?)
}

/// The advice flags (`VmFlags`) of the mapping of this process that holds `address`.
fn advice_at(address: usize) -> Vec<String> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps is readable");
    let mut holds = false;
    for line in smaps.lines() {
        if let Some(range) = header_range(line) {
            holds = range.contains(&address);
        } else if let Some(flags) = line.strip_prefix("VmFlags:").filter(|_| holds) {
            return flags.split_whitespace().map(str::to_string).collect();
        }
    }
    panic!("no mapping holds {address:#x}")
}

#[test]
fn the_heap_begins_in_huge_pages_and_goes_on_in_small_ones() {
    let mode =
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    if !mode.contains("[madvise]") || std::env::var_os("MIMALLOC_ALLOW_THP").is_some() {
        eprintln!(
            "skipped: huge pages here are not given on advice ({})",
            mode.trim()
        );
        return;
    }
    let first = Box::new(1u64);
    let beyond = vec![1u8; 2 * mocca::allocator::HUGE_PAGED];
    let first_advice = advice_at(&raw const *first as usize);
    assert!(first_advice.contains(&"hg".to_string()), "{first_advice:?}");
    let last_byte = beyond.as_ptr() as usize + beyond.len() - 1;
    let beyond_advice = advice_at(last_byte);
    assert!(
        beyond_advice.contains(&"nh".to_string()),
        "{beyond_advice:?}"
    );
}
