//! Two threads for one integration: this one and a helper that waits, spinning, for halves of
//! the work ([`Pair::join`], as `rayon::join` but with one thread kept awake).
//!
//! Why not a pool that sleeps: a BDF step on a few thousand states takes tens of
//! microseconds and splits into a handful of halves (the solves' independent pieces, the
//! accepting pass). Waking a sleeping thread costs microseconds; handing work to a spinning
//! one costs well under a tenth of one (a cache line going from one core to the other and
//! back). The helper spins only while its integration runs, and yields to the scheduler
//! when it has waited long, so that on a busy machine it does not keep its partner off the
//! processor.

use std::cell::UnsafeCell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Spins before each yield to the scheduler while waiting.
const SPINS: u32 = 1 << 16;

/// Yields (each after [`SPINS`] spins, about a tenth of a second in all) before a waiting
/// thread naps instead.
const YIELDS_BEFORE_NAPS: u32 = 1024;

/// A helper thread and the slot it takes work from.
pub struct Pair {
    slot: Slot,
}

/// A job for the helper: a type-erased `FnMut()` living on [`Pair::join`]'s stack.
type Job = *mut (dyn FnMut() + Send + 'static);

struct Slot {
    /// Bumped by [`Pair::join`] to post a job.
    posted: AtomicU64,
    /// The number of the last job a thread took on: the helper, or `join` taking its job
    /// back because the helper had not started it.
    claimed: AtomicU64,
    /// Set by the helper to the job's number when it is done with it.
    done: AtomicU64,
    job: UnsafeCell<Option<Job>>,
    /// Whether the helper's last job panicked.
    panicked: AtomicBool,
    stop: AtomicBool,
}

// SAFETY: `job` is written by `join` only while the helper is not reading it (before posting,
// and after the job was taken back or done) and read by the helper only between claiming a
// posted job and marking it done; `posted`, `claimed` and `done` (release/acquire) order
// the two. The job behind the pointer is `Send`.
unsafe impl Sync for Slot {}
// SAFETY: the only field that is not `Send` is the job pointer, which is dereferenced only
// under the protocol above, wherever the slot lives; between joins it points at nothing live.
unsafe impl Send for Slot {}

impl Slot {
    /// Takes on job `number` unless another thread did.
    fn claim(&self, number: u64) -> bool {
        (self.claimed)
            .compare_exchange(number - 1, number, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }
}

impl Pair {
    /// Runs `body` with a pair when `wanted`, the machine has a second processor and a
    /// second thread can be started, else with `None`; the helper stops when `body` returns.
    pub fn with<R>(wanted: bool, body: impl FnOnce(Option<&Pair>) -> R) -> R {
        // On one processor the helper would only take turns with this thread. (Asked only
        // when wanted: the answer takes a system call and reads of the cgroup's files.)
        let alone = || std::thread::available_parallelism().map_or(1, |n| n.get()) < 2;
        if !wanted || alone() {
            return body(None);
        }
        let pair = Pair::unserved();
        std::thread::scope(|scope| {
            let helper = std::thread::Builder::new().spawn_scoped(scope, || pair.serve());
            if helper.is_err() {
                return body(None);
            }
            // Stops the helper however `body` ends, so that the scope can join it.
            struct Stop<'a>(&'a AtomicBool);
            impl Drop for Stop<'_> {
                fn drop(&mut self) {
                    self.0.store(true, Ordering::Release);
                }
            }
            let _stop = Stop(&pair.slot.stop);
            body(Some(&pair))
        })
    }

    /// A pair whose helper is not started yet.
    fn unserved() -> Pair {
        Pair {
            slot: Slot {
                posted: AtomicU64::new(0),
                claimed: AtomicU64::new(0),
                done: AtomicU64::new(0),
                job: UnsafeCell::new(None),
                panicked: AtomicBool::new(false),
                stop: AtomicBool::new(false),
            },
        }
    }

    /// The helper's loop: runs each posted job it can claim, until stopped.
    fn serve(&self) {
        let slot = &self.slot;
        let mut seen = 0;
        loop {
            let posted = wait_until(|| {
                let posted = slot.posted.load(Ordering::Acquire);
                (posted != seen || slot.stop.load(Ordering::Acquire)).then_some(posted)
            });
            if posted == seen {
                return;
            }
            seen = posted;
            if !slot.claim(seen) {
                continue;
            }
            // SAFETY: a claimed job stays alive and untouched by `join` until `done` says so.
            let job = unsafe { (*slot.job.get()).expect("a posted job") };
            let ran = catch_unwind(AssertUnwindSafe(|| unsafe { (*job)() }));
            slot.panicked.store(ran.is_err(), Ordering::Relaxed);
            slot.done.store(seen, Ordering::Release);
        }
    }

    /// Runs `a` on this thread and `b` on the helper, and returns both results once both are
    /// done. When the helper has not started `b` by the time `a` is done (it was not on a
    /// processor, say), this thread runs `b` too rather than wait for it. A panic in either
    /// is resumed here, after both have ended.
    pub fn join<A, B: Send>(&self, a: impl FnOnce() -> A, b: impl FnOnce() -> B + Send) -> (A, B) {
        let slot = &self.slot;
        let mut b = Some(b);
        let mut b_result = None;
        let mut run_b = || b_result = b.take().map(|b| b());
        let job: &mut (dyn FnMut() + Send) = &mut run_b;
        // SAFETY: the lifetime is erased only for the slot; `Settle` below keeps this frame
        // (and so the job and what it borrows) alive until the helper is done with it or
        // will never start it.
        let job: Job = unsafe { std::mem::transmute::<&mut (dyn FnMut() + Send), Job>(job) };
        let number = slot.posted.load(Ordering::Relaxed) + 1;
        // SAFETY: the helper is done with every earlier job or never started it, so it does
        // not read the slot until the posting below.
        unsafe { *slot.job.get() = Some(job) };
        slot.posted.store(number, Ordering::Release);
        let mut settle = Settle {
            slot,
            number,
            settled: false,
        };
        let a_result = a();
        if settle.settle() {
            // SAFETY: taken back, the job is this thread's alone; its frame is this one.
            unsafe { (*job)() };
        } else if slot.panicked.load(Ordering::Relaxed) {
            panic!("a helper thread's half of the work panicked");
        }
        (
            a_result,
            b_result.expect("one of the threads ran the second half"),
        )
    }
}

/// A pair whose helper serves until the value is dropped: for an owner that outlives any one
/// call, such as an emitted solver's integrator that a rig steps one call at a time.
pub struct HeldPair {
    pair: std::sync::Arc<Pair>,
    helper: Option<std::thread::JoinHandle<()>>,
}

impl HeldPair {
    /// A pair with its helper started; `None` on one processor or when no thread starts.
    pub fn start() -> Option<HeldPair> {
        if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
            return None;
        }
        let pair = std::sync::Arc::new(Pair::unserved());
        let served = std::sync::Arc::clone(&pair);
        let helper = std::thread::Builder::new()
            .name("pair helper".into())
            .spawn(move || served.serve())
            .ok()?;
        Some(HeldPair {
            pair,
            helper: Some(helper),
        })
    }

    pub fn pair(&self) -> &Pair {
        &self.pair
    }
}

impl Drop for HeldPair {
    fn drop(&mut self) {
        self.pair.slot.stop.store(true, Ordering::Release);
        if let Some(helper) = self.helper.take() {
            // A helper's panic was caught job by job; its loop itself does not panic.
            let _ = helper.join();
        }
    }
}

/// Settles a posted job before [`Pair::join`]'s frame ends, however it ends: takes it back
/// if the helper has not started it, else waits until the helper is done with it.
struct Settle<'a> {
    slot: &'a Slot,
    number: u64,
    settled: bool,
}

impl Settle<'_> {
    /// Whether this thread took the job back.
    fn settle(&mut self) -> bool {
        self.settled = true;
        if self.slot.claim(self.number) {
            return true;
        }
        wait_until(|| (self.slot.done.load(Ordering::Acquire) == self.number).then_some(()));
        false
    }
}

impl Drop for Settle<'_> {
    fn drop(&mut self) {
        if !self.settled {
            self.settle();
        }
    }
}

/// Runs `a` and `b`, on the pair's two threads when there is one.
pub fn both<A: Send, B: Send>(
    pair: Option<&Pair>,
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    match pair {
        Some(pair) => pair.join(a, b),
        None => (a(), b()),
    }
}

/// A value the threads of a [`Pair`] share entry by entry (an entry of a vector, say): each
/// entry, between two joins, written by one thread only and read by the other only if
/// neither writes it.
///
/// Why not an atomic: relaxed atomic loads and stores are plain moves too, but the compiler
/// may not keep other memory in registers across them; in the sparse solves that cost 6–10 %.
#[repr(transparent)]
pub struct Shared<T>(UnsafeCell<T>);

pub type SharedF64 = Shared<f64>;

// SAFETY: every access goes through `get` and `set`, whose callers promise that no two
// threads touch an entry at once unless both only read it.
unsafe impl<T: Send> Sync for Shared<T> {}

impl<T: Copy> Shared<T> {
    /// # Safety
    /// No other thread writes this entry meanwhile.
    #[inline(always)]
    pub unsafe fn get(&self) -> T {
        // SAFETY: no concurrent write, by the caller's promise.
        unsafe { *self.0.get() }
    }

    /// # Safety
    /// No other thread reads or writes this entry meanwhile.
    #[inline(always)]
    pub unsafe fn set(&self, x: T) {
        // SAFETY: no concurrent access, by the caller's promise.
        unsafe { *self.0.get() = x }
    }
}

/// Entries shared by [`share`] back as a slice of this thread's own.
///
/// # Safety
/// No other thread touches these entries while the returned borrow lives.
#[allow(clippy::mut_from_ref)]
pub unsafe fn exclusive<T>(v: &[Shared<T>]) -> &mut [T] {
    let first = UnsafeCell::raw_get(v.as_ptr().cast::<UnsafeCell<T>>());
    // SAFETY: the cells are contiguous with `T`'s layout (see `share`), `UnsafeCell` allows
    // writing through a shared borrow, and nothing else touches the entries, by the
    // caller's promise.
    unsafe { std::slice::from_raw_parts_mut(first, v.len()) }
}

/// `v` as entries the threads of a pair may share.
pub fn share<T>(v: &mut [T]) -> &[Shared<T>] {
    // SAFETY: `Shared<T>` is a transparent `UnsafeCell<T>`, which has `T`'s layout, and the
    // exclusive borrow keeps every other access out for the view's lifetime.
    unsafe { &*(std::ptr::from_mut(v) as *const [Shared<T>]) }
}

/// Spins, then spins and yields, until `ready` gives a value; after [`YIELDS_BEFORE_NAPS`]
/// yields, naps between rounds, so that a helper idle between a rig's calls does not keep a
/// processor busy (a job posted meanwhile is taken back by its poster, never waited for).
fn wait_until<T>(mut ready: impl FnMut() -> Option<T>) -> T {
    let mut spins = 0u32;
    let mut yields = 0u32;
    loop {
        if let Some(value) = ready() {
            return value;
        }
        // No `spin_loop` hint: under a hypervisor, a run of PAUSE instructions makes the
        // virtual processor exit to the host (pause-loop exiting), and a hand-over then
        // takes five times longer (measured: 320 ns a round trip against 65 ns).
        spins += 1;
        if spins >= SPINS {
            spins = 0;
            if yields < YIELDS_BEFORE_NAPS {
                yields += 1;
                std::thread::yield_now();
            } else {
                std::thread::sleep(std::time::Duration::from_micros(500));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_halves_run_and_see_their_own_data() {
        Pair::with(true, |pair| {
            let Some(pair) = pair else {
                return eprintln!("one processor: no helper to test");
            };
            let mut v: Vec<u64> = (0..1000).collect();
            for round in 0..200u64 {
                let (left, right) = v.split_at_mut(500);
                let (a, b) = pair.join(
                    || {
                        left.iter_mut()
                            .map(|x| std::mem::replace(x, *x + round))
                            .sum::<u64>()
                    },
                    || {
                        right
                            .iter_mut()
                            .map(|x| std::mem::replace(x, *x + round))
                            .sum::<u64>()
                    },
                );
                let base = round * (round.saturating_sub(1)) / 2;
                assert_eq!(a, (0..500).sum::<u64>() + 500 * base);
                assert_eq!(b, (500..1000).sum::<u64>() + 500 * base);
            }
        });
    }

    #[test]
    fn a_panicking_half_is_resumed_after_both_ended() {
        let outcome = std::panic::catch_unwind(|| {
            Pair::with(true, |pair| {
                pair.expect("a second thread")
                    .join(|| 1, || panic!("helper's half"))
            })
        });
        assert!(outcome.is_err());
    }

    #[test]
    fn a_job_no_helper_takes_on_is_taken_back() {
        let pair = Pair::unserved();
        let mut counted = 0;
        for k in 0..3 {
            let (a, b) = pair.join(|| k, || k * 10);
            counted += a + b;
        }
        assert_eq!(counted, 33);
    }

    #[test]
    fn a_held_pair_serves_across_calls_and_stops_when_dropped() {
        let Some(held) = HeldPair::start() else {
            return eprintln!("one processor: no helper to test");
        };
        let mut v: Vec<u64> = (0..1000).collect();
        for k in 0..100u64 {
            let (left, right) = v.split_at_mut(500);
            let (a, b) = held.pair().join(
                || {
                    left.iter_mut()
                        .map(|x| std::mem::replace(x, *x + 1))
                        .sum::<u64>()
                },
                || {
                    right
                        .iter_mut()
                        .map(|x| std::mem::replace(x, *x + 1))
                        .sum::<u64>()
                },
            );
            assert_eq!(a, (0..500).sum::<u64>() + 500 * k);
            assert_eq!(b, (500..1000).sum::<u64>() + 500 * k);
        }
        // Returns only once the helper has stopped.
        drop(held);
    }

    #[test]
    fn without_a_pair_the_body_runs_alone() {
        assert!(Pair::with(false, |pair| pair.is_none()));
    }
}
