use super::*;
use crate::record::level::Level;

thread_local! {
    /// What a test does between the merge's first and second look (`pop_merged`):
    /// other threads' pushes and evictions, in that window.
    static BETWEEN_THE_LOOKS: RefCell<Option<Box<dyn FnMut()>>> = const { RefCell::new(None) };
}

/// Runs (once) what the test put between the merge's two looks.
pub(super) fn between_the_looks() {
    if let Some(mut f) = BETWEEN_THE_LOOKS.with(|f| f.borrow_mut().take()) {
        f();
    }
}

fn drain(lanes: &Lanes) -> Vec<u8> {
    let (mut view, mut out) = (WriterView::default(), Vec::new());
    lanes.merge_all(&mut view, &mut out);
    out
}

/// A thread's record A spilled into the shared ring behind another thread's X,
/// which is reserved but not yet published; the thread's next record B is in its
/// own ring. Until X is published the merge stops (X's key is unknown), so B is
/// never written before A.
#[test]
fn an_unpublished_shared_record_stops_the_merge_until_it_is_published() {
    let lanes = Lanes::new(u64::MAX - 7, 256 << 10, 8 << 10);
    let x = lanes.shared.reserve_unpublished(1);
    lanes
        .shared
        .try_push(Level::Info, b"A", u64::MAX, 0, false, 10)
        .unwrap();
    lanes.with_own(|own| {
        own.expect("a ring of its own")
            .try_push_owned(Level::Info, b"B", u64::MAX, 0, false, 12)
            .unwrap();
    });
    assert_eq!(drain(&lanes), b"", "nothing passes an unpublished record");
    lanes.shared.publish_reserved(x, Level::Info, b"X", 5);
    assert_eq!(drain(&lanes), b"XAB");
}

/// A thread evicts the oldest record of its own ring (`DropOldest`) and is
/// preempted between zeroing its state word and moving `tail`. The ring still
/// holds the thread's next record B, older than its record A in the shared ring.
/// Until the eviction ends, the merge stops: taking the ring for empty wrote A
/// before B.
#[test]
fn a_thread_ring_mid_eviction_stops_the_merge_until_the_eviction_ends() {
    let lanes = Lanes::new(u64::MAX - 9, 256 << 10, 8 << 10);
    let own = lanes.with_own(|own| {
        let ring = own.expect("a ring of its own");
        for (byte, key) in [(b"P", 1), (b"B", 3)] {
            ring.try_push_owned(Level::Info, byte, u64::MAX, 0, false, key)
                .unwrap();
        }
        ring as *const Ring
    });
    lanes
        .shared
        .try_push(Level::Info, b"A", u64::MAX, 0, false, 4)
        .unwrap();
    // SAFETY: the ring is the thread table's, alive as long as `lanes`.
    let own = unsafe { &*own };
    let evicting = own.evict_oldest_unfinished();
    assert!(matches!(own.look_oldest(), Oldest::Unknown));
    assert_eq!(drain(&lanes), b"", "nothing passes a ring mid-eviction");
    own.finish_eviction(evicting);
    assert_eq!(drain(&lanes), b"BA");
}

/// The merge's second look, against an eviction: the first look finds the
/// thread's ring empty and chooses A in the shared ring; then, before the second
/// look, P and B (older than A) are logged into the thread's ring and P's eviction
/// begins. The second look cannot read that ring and must wait: taking it for
/// empty wrote A before B.
#[test]
fn a_ring_mid_eviction_at_the_second_look_stops_the_merge() {
    let lanes = Arc::new(Lanes::new(u64::MAX - 11, 256 << 10, 8 << 10));
    let own = lanes.with_own(|own| own.expect("a ring of its own") as *const Ring);
    // SAFETY: the ring is the thread table's, alive as long as `lanes`.
    let own: &'static Ring = unsafe { &*own };
    lanes
        .shared
        .try_push(Level::Info, b"A", u64::MAX, 0, false, 3)
        .unwrap();
    let evicting = Arc::new(Mutex::new(None));
    let set = evicting.clone();
    BETWEEN_THE_LOOKS.with(|f| {
        *f.borrow_mut() = Some(Box::new(move || {
            for (byte, key) in [(b"P", 1), (b"B", 2)] {
                own.try_push_owned(Level::Info, byte, u64::MAX, 0, false, key)
                    .unwrap();
            }
            *set.lock().unwrap() = Some(own.evict_oldest_unfinished());
        }))
    });
    let (mut view, mut out) = (WriterView::default(), Vec::new());
    lanes.refresh(&mut view);
    lanes.merge_all(&mut view, &mut out);
    assert_eq!(out, b"", "A waits while the ring with B cannot be read");
    let evicting = evicting
        .lock()
        .unwrap()
        .take()
        .expect("the second look came");
    own.finish_eviction(evicting);
    assert_eq!(drain(&lanes), b"BA");
}

/// The same in the shared ring: a producer evicting its oldest record stops the
/// merge. (The merge before the fix stopped here too, through its check for an
/// unpublished record; this keeps it so.)
#[test]
fn a_shared_ring_mid_eviction_stops_the_merge_until_the_eviction_ends() {
    let lanes = Lanes::new(u64::MAX - 10, 256 << 10, 8 << 10);
    for (byte, key) in [(b"P", 1), (b"A", 3)] {
        lanes
            .shared
            .try_push(Level::Info, byte, u64::MAX, 0, false, key)
            .unwrap();
    }
    lanes.with_own(|own| {
        own.expect("a ring of its own")
            .try_push_owned(Level::Info, b"B", u64::MAX, 0, false, 4)
            .unwrap();
    });
    let evicting = lanes.shared.evict_oldest_unfinished();
    assert_eq!(drain(&lanes), b"");
    lanes.shared.finish_eviction(evicting);
    assert_eq!(drain(&lanes), b"AB");
}

/// Records of several rings come out by key, whichever ring holds them.
#[test]
fn rings_are_merged_by_key() {
    let lanes = Lanes::new(u64::MAX - 8, 256 << 10, 8 << 10);
    lanes.with_own(|own| {
        let ring = own.expect("a ring of its own");
        for (byte, key) in [(b"1", 1), (b"4", 4), (b"6", 6)] {
            ring.try_push_owned(Level::Info, byte, u64::MAX, 0, false, key)
                .unwrap();
        }
    });
    for (byte, key) in [(b"2", 2), (b"3", 3), (b"5", 5)] {
        lanes
            .shared
            .try_push(Level::Info, byte, u64::MAX, 0, false, key)
            .unwrap();
    }
    assert_eq!(drain(&lanes), b"123456");
}
