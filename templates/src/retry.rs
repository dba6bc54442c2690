//! When to retry a failed reconcile: per object, exponential with jitter, under one rate
//! limit for the whole manager (controller-runtime's default: per-item backoff and a 10 per
//! second, burst 100 bucket), so that a thousand objects failing at once during an API
//! outage neither retry in lockstep nor all at once.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// First retry after a failure; doubled on each further failure up to `MAX_DELAY`.
const BASE_DELAY: Duration = Duration::from_secs(1);
const MAX_DELAY: Duration = Duration::from_secs(300);
/// Retries per second the whole manager may start, and how many may start at once.
const RATE: f64 = 10.0;
const BURST: f64 = 100.0;
/// How far the bucket may go into debt: retries already promised a later turn. No retry waits
/// longer for its turn than `MAX_DELAY`, whatever failed before it.
const MAX_DEBT: f64 = MAX_DELAY.as_secs() as f64 * RATE;

pub struct Retries {
    /// Object uid -> failures since its last success.
    failures: Mutex<HashMap<String, u32>>,
    bucket: Mutex<Bucket>,
    random: RandomState,
}

struct Bucket {
    tokens: f64,
    updated: Instant,
}

impl Default for Retries {
    fn default() -> Self {
        Retries {
            failures: Mutex::default(),
            bucket: Mutex::new(Bucket {
                tokens: BURST,
                updated: Instant::now(),
            }),
            random: RandomState::new(),
        }
    }
}

impl Retries {
    /// The delay before retrying the object `uid` after one more failure: between half and
    /// all of 1 s, 2 s, 4 s, ... 5 min, and never sooner than the manager's rate limit allows.
    pub fn next_delay(&self, uid: &str) -> Duration {
        self.next_delay_within(uid, MAX_DELAY)
    }

    /// As `next_delay`, with the object's own backoff growing to `longest` at most (and
    /// jittered below it, so that objects held at it do not retry in lockstep). The rate limit
    /// still holds: a retry that could come sooner than the limit allows is not a retry the
    /// manager can afford.
    pub fn next_delay_within(&self, uid: &str, longest: Duration) -> Duration {
        let failures = {
            let mut failures = self.failures.lock().expect("retries lock poisoned");
            let count = failures.entry(uid.to_string()).or_default();
            *count = count.saturating_add(1);
            *count
        };
        let backoff = BASE_DELAY
            .saturating_mul(2u32.saturating_pow(failures - 1))
            .min(longest.min(MAX_DELAY));
        let jittered = backoff.mul_f64(0.5 + 0.5 * self.unit_random(uid, failures));
        jittered.max(self.reserve())
    }

    /// Forgets `uid`'s failures: after a success, or once the object is gone.
    pub fn forget(&self, uid: &str) {
        self.failures
            .lock()
            .expect("retries lock poisoned")
            .remove(uid);
    }

    /// Whether `uid` failed and has not succeeded since: a failure of an object already
    /// failing is not news.
    pub fn failing(&self, uid: &str) -> bool {
        self.failures
            .lock()
            .expect("retries lock poisoned")
            .contains_key(uid)
    }

    /// Objects with failures on record.
    pub fn tracked(&self) -> usize {
        self.failures.lock().expect("retries lock poisoned").len()
    }

    /// Takes one token from the bucket; the wait until it would have been there.
    fn reserve(&self) -> Duration {
        let mut bucket = self.bucket.lock().expect("retries lock poisoned");
        let now = Instant::now();
        let refill = now.duration_since(bucket.updated).as_secs_f64() * RATE;
        bucket.tokens = ((bucket.tokens + refill).min(BURST) - 1.0).max(-MAX_DEBT);
        bucket.updated = now;
        if bucket.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-bucket.tokens / RATE)
        }
    }

    /// A number in [0, 1), different per object and attempt.
    fn unit_random(&self, uid: &str, attempt: u32) -> f64 {
        let bits = self.random.hash_one((uid, attempt, Instant::now()));
        (bits >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_up_to_the_cap() {
        let retries = Retries::default();
        for attempt in 0..12 {
            let full = BASE_DELAY.saturating_mul(2u32.pow(attempt)).min(MAX_DELAY);
            let delay = retries.next_delay("uid-a");
            assert!(
                delay >= full / 2 && delay <= full,
                "attempt {attempt}: {delay:?} not in [{:?}, {full:?}]",
                full / 2
            );
        }
    }

    #[test]
    fn objects_failing_together_do_not_retry_in_lockstep() {
        let retries = Retries::default();
        let delays: std::collections::BTreeSet<_> = (0..50)
            .map(|i| {
                for _ in 0..4 {
                    retries.next_delay(&format!("uid-{i}"));
                }
                retries.next_delay(&format!("uid-{i}")).as_millis()
            })
            .collect();
        assert!(delays.len() > 40, "only {} distinct delays", delays.len());
    }

    #[test]
    fn forgotten_objects_start_over() {
        let retries = Retries::default();
        for _ in 0..5 {
            retries.next_delay("uid-a");
        }
        retries.next_delay("uid-b");
        assert!(retries.failing("uid-a"));
        retries.forget("uid-a");
        assert!(!retries.failing("uid-a") && retries.failing("uid-b"));
        assert_eq!(retries.tracked(), 1);
        assert!(retries.next_delay("uid-a") <= BASE_DELAY);
    }

    #[test]
    fn the_manager_wide_rate_limit_spaces_out_a_burst() {
        let retries = Retries::default();
        let delays: Vec<Duration> = (0..150)
            .map(|i| retries.next_delay(&format!("uid-{i}")))
            .collect();
        assert!(delays[..100].iter().all(|d| *d <= BASE_DELAY));
        // The 150th retry waits for the bucket: about 50 tokens at 10 per second.
        assert!(delays[149] >= Duration::from_secs(4), "{:?}", delays[149]);
    }

    #[test]
    fn a_shorter_backoff_still_waits_its_turn() {
        let retries = Retries::default();
        for i in 0..500 {
            retries.next_delay(&format!("uid-{i}"));
        }
        // 400 retries are ahead of it, 40 s at 10 per second: later than its own 30 s.
        let delay = retries.next_delay_within("uid-a", Duration::from_secs(30));
        assert!(delay >= Duration::from_secs(39), "{delay:?}");
        // Without other failures, it comes within its own cap, jittered.
        let quiet = Retries::default();
        for _ in 0..20 {
            let delay = quiet.next_delay_within("uid-a", Duration::from_secs(30));
            assert!(delay <= Duration::from_secs(30), "{delay:?}");
        }
        assert!(
            quiet.next_delay_within("uid-a", Duration::from_secs(30)) >= Duration::from_secs(15)
        );
    }

    #[test]
    fn no_retry_waits_past_the_cap_however_many_failed_before() {
        let retries = Retries::default();
        for i in 0..10_000 {
            retries.next_delay(&format!("uid-{i}"));
        }
        let delay = retries.next_delay("uid-a");
        assert!(delay <= MAX_DELAY, "{delay:?}");
        assert!(delay >= MAX_DELAY - Duration::from_secs(1), "{delay:?}");
    }
}
