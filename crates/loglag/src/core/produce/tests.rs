use super::{wake_after_push, WakeAfterPush};

/// A burst wakes even a polling writer, once, when the shared ring holds
/// `RESIDENT_AHEAD`; a batch wakes it unless it polls; nothing else does, and
/// a thread ring never wakes it unasked.
#[test]
fn a_burst_wakes_the_writer_even_while_it_polls() {
    let batch = 64 << 10;
    let burst = crate::queue::RESIDENT_AHEAD;
    let record = 88;
    for shared in [true, false] {
        let mut asks = Vec::new();
        let mut used = 0;
        while used < 8 * burst {
            used += record;
            let ask = wake_after_push(used, record, batch, shared);
            if ask != WakeAfterPush::No {
                asks.push((used, ask));
            }
        }
        let mut expected = vec![(batch.next_multiple_of(record), WakeAfterPush::UnlessPolling)];
        if shared {
            expected.push((burst.next_multiple_of(record), WakeAfterPush::Always));
        }
        assert_eq!(asks, expected, "shared: {shared}");
    }
    // A record that crosses both marks at once is a burst, and so is a batch
    // configured as large.
    assert_eq!(
        wake_after_push(burst, burst, batch, true),
        WakeAfterPush::Always
    );
    assert_eq!(
        wake_after_push(burst, 8, burst, true),
        WakeAfterPush::Always
    );
    assert_eq!(
        wake_after_push(burst, 8, burst, false),
        WakeAfterPush::UnlessPolling
    );
    assert_eq!(
        wake_after_push(batch - 1, 8, batch, true),
        WakeAfterPush::No
    );
}
