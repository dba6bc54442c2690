//! Which connection (or TLS handshake) gives up its slot when every slot is taken: of the
//! source (IP address) holding more than its fair share, the one that has gone longest
//! without progress; with no source over its share, the one that has gone longest without
//! progress of all. A flood from one Pod then ends its own connections, not the API server's
//! or the kubelet's; a flood from many Pods, each within its share, must open connections
//! faster than real requests start and are answered, in moments.

use std::cmp::Reverse;
use std::collections::HashMap;
use std::net::IpAddr;

use tokio::time::Instant;

/// The index in `candidates` (each a source, and when it last made progress) of the one to
/// give way; `None` when there are none.
pub fn give_way(candidates: &[(IpAddr, Instant)], fair_share: usize) -> Option<usize> {
    // Per source: how many it holds, and the index of its oldest.
    let mut held = HashMap::<IpAddr, (usize, usize)>::new();
    for (index, (source, since)) in candidates.iter().enumerate() {
        let (count, oldest) = held.entry(*source).or_insert((0, index));
        *count += 1;
        if *since < candidates[*oldest].1 {
            *oldest = index;
        }
    }
    // The source holding the most; of two holding as many, the one with the older oldest.
    let (count, oldest) = held
        .into_values()
        .max_by_key(|(count, oldest)| (*count, Reverse(candidates[*oldest].1)))?;
    if count > fair_share {
        return Some(oldest);
    }
    (0..candidates.len()).min_by_key(|index| candidates[*index].1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, last])
    }

    #[test]
    fn the_source_over_its_share_gives_way_even_when_another_is_older() {
        let start = Instant::now();
        let at = |ms| start + Duration::from_millis(ms);
        let candidates = [
            (ip(1), at(0)),
            (ip(2), at(10)),
            (ip(2), at(20)),
            (ip(2), at(30)),
        ];
        assert_eq!(give_way(&candidates, 2), Some(1));
    }

    #[test]
    fn within_their_shares_the_oldest_of_all_gives_way() {
        let start = Instant::now();
        let at = |ms| start + Duration::from_millis(ms);
        let candidates = [
            (ip(1), at(20)),
            (ip(1), at(30)),
            (ip(2), at(10)),
            (ip(3), at(0)),
        ];
        assert_eq!(give_way(&candidates, 2), Some(3));
    }

    #[test]
    fn of_two_sources_holding_as_many_the_one_waiting_longer_gives_way() {
        let start = Instant::now();
        let at = |ms| start + Duration::from_millis(ms);
        // The API server (1) has just started a request on each; the Pod (2) has been silent.
        let candidates = [
            (ip(1), at(50)),
            (ip(1), at(60)),
            (ip(2), at(10)),
            (ip(2), at(20)),
        ];
        for _ in 0..20 {
            assert_eq!(give_way(&candidates, 1), Some(2));
        }
        assert_eq!(give_way(&[], 1), None);
    }
}
