//! Which pipelines this thread is inside right now: the mark every entry point into a
//! pipeline sets (a logging call, `metrics`, `flush`, shutdown; the Prometheus render
//! reads through `metrics`), so that a signal handler that interrupts one and logs to
//! the same pipeline is told apart from a call of its own. The interrupted call may
//! hold a lock, a thread-local half-written or a ring's reservation; the handler's
//! record is counted accepted and dropped as `reentrant` with atomics only.
//!
//! Async-signal safety of the mark itself: a handler runs to completion before the
//! code it interrupted resumes, and every change it makes here it undoes on return.
//! Each step is one word's load or store, kept in program order by a compiler fence
//! (the signal fence: the compiler may otherwise reorder plain stores, and a handler
//! would see the depth raised before the id is in its slot), so a handler that lands
//! between two steps sees the state before or after the step, never a torn one:
//! between writing an id and raising the depth, it writes its own id into that slot
//! and gives the old one back when it leaves.
//!
//! A call nested inside another pipeline's (a handler that logs to B while its thread
//! was inside A, or a `sync` sink logging to a second pipeline) uses none of the
//! thread's one-entry caches (`last` of the thread's rings and counters, two words
//! each, which the interrupted call may be half-way through reading or writing): it
//! counts on the pipeline's shared atomics and pushes into the shared ring ([`nested`]).
//!
//! A mark is suspended while the caller's own code runs (a `Display` or `Debug` that
//! formats a value): the pipeline's state is whole there, so a value whose `Display`
//! logs is logged, as it was before marks covered formatting.

use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::atomic::{compiler_fence, Ordering};

/// How many pipelines one thread can be inside at once (a `sync` sink that logs to a
/// second pipeline is two). Deeper than this, a call is refused as re-entered: refusing
/// is always safe, entering without a mark is not.
const DEPTH: usize = 4;

struct Entered {
    ids: [Cell<u64>; DEPTH],
    depth: Cell<usize>,
}

thread_local! {
    // `const` and without a destructor: its first use allocates nothing and registers
    // nothing, so a signal handler may touch it.
    static ENTERED: Entered = const {
        Entered { ids: [const { Cell::new(0) }; DEPTH], depth: Cell::new(0) }
    };
}

/// This thread is inside pipeline `id` until dropped. Not `Send`: it names a slot of
/// this thread's table.
pub(crate) struct EnteredMark {
    /// The slot it took, or `usize::MAX` for a mark that marks nothing (thread-local
    /// storage already torn down).
    index: usize,
    id: u64,
    previous: u64,
    _not_send: PhantomData<*const ()>,
}

/// This thread is inside pipeline `id` already: the call re-entered it.
#[derive(Debug)]
pub(crate) struct Reentered;

/// Marks this thread as inside pipeline `id`, unless it is already (or is nested
/// [`DEPTH`] pipelines deep).
#[inline]
pub(crate) fn enter(id: u64) -> Result<EnteredMark, Reentered> {
    let entered = ENTERED.try_with(|e| {
        let depth = e.depth.get();
        if depth >= DEPTH || e.ids[..depth].iter().any(|slot| slot.get() == id) {
            return Err(Reentered);
        }
        let previous = e.ids[depth].replace(id);
        compiler_fence(Ordering::SeqCst);
        e.depth.set(depth + 1);
        compiler_fence(Ordering::SeqCst);
        Ok((depth, previous))
    });
    match entered {
        Ok(Ok((index, previous))) => Ok(EnteredMark {
            index,
            id,
            previous,
            _not_send: PhantomData,
        }),
        Ok(Err(reentered)) => Err(reentered),
        // Thread teardown: no table to mark, and nothing of this thread's left to tear.
        Err(_) => Ok(EnteredMark {
            index: usize::MAX,
            id,
            previous: 0,
            _not_send: PhantomData,
        }),
    }
}

/// Whether the calling pipeline was entered inside another one on this thread (see
/// the module doc): then it must not touch the thread's caches.
#[inline]
pub(crate) fn nested() -> bool {
    ENTERED.try_with(|e| e.depth.get() > 1).unwrap_or(true)
}

/// Whether this thread is inside pipeline `id`.
#[cfg(test)]
fn is_inside(id: u64) -> bool {
    ENTERED
        .try_with(|e| {
            e.ids[..e.depth.get().min(DEPTH)]
                .iter()
                .any(|s| s.get() == id)
        })
        .unwrap_or(false)
}

impl EnteredMark {
    /// Lifts the mark while the caller's own code runs (see the module doc); it is
    /// back when the returned value is dropped.
    #[inline]
    pub(crate) fn user_code(&self) -> UserCode<'_> {
        if self.index != usize::MAX {
            let _ = ENTERED.try_with(|e| e.ids[self.index].set(0));
            compiler_fence(Ordering::SeqCst);
        }
        UserCode { mark: self }
    }
}

impl Drop for EnteredMark {
    #[inline]
    fn drop(&mut self) {
        if self.index == usize::MAX {
            return;
        }
        let _ = ENTERED.try_with(|e| {
            compiler_fence(Ordering::SeqCst);
            e.depth.set(self.index);
            compiler_fence(Ordering::SeqCst);
            e.ids[self.index].set(self.previous);
        });
    }
}

/// The caller's code runs while this lives: see [`EnteredMark::user_code`].
pub(crate) struct UserCode<'a> {
    mark: &'a EnteredMark,
}

impl Drop for UserCode<'_> {
    #[inline]
    fn drop(&mut self) {
        if self.mark.index != usize::MAX {
            compiler_fence(Ordering::SeqCst);
            let _ = ENTERED.try_with(|e| e.ids[self.mark.index].set(self.mark.id));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pipeline_entered_twice_on_one_thread_is_refused_and_another_is_not() {
        let a = enter(7).expect("first entry");
        assert!(is_inside(7));
        assert!(enter(7).is_err(), "the same pipeline again is a re-entry");
        {
            let b = enter(8).expect("a second pipeline nests");
            assert!(enter(8).is_err());
            assert!(enter(7).is_err(), "the outer one is still marked");
            drop(b);
        }
        assert!(!is_inside(8));
        drop(a);
        assert!(!is_inside(7));
        assert!(enter(7).is_ok());
    }

    #[test]
    fn user_code_lifts_the_mark_and_puts_it_back() {
        let a = enter(11).unwrap();
        {
            let _user = a.user_code();
            assert!(!is_inside(11));
            let nested = enter(11).expect("a Display that logs enters again");
            assert!(is_inside(11));
            drop(nested);
        }
        assert!(is_inside(11), "the mark is back after the caller's code");
        assert!(enter(11).is_err());
    }

    #[test]
    fn nesting_deeper_than_the_table_is_refused_not_unmarked() {
        let marks: Vec<_> = (100..100 + DEPTH as u64)
            .map(|id| enter(id).unwrap())
            .collect();
        assert!(enter(999).is_err(), "no slot left: refused");
        // Scoped marks drop last-in first-out.
        marks.into_iter().rev().for_each(drop);
        assert!(enter(999).is_ok());
    }
}
