//! The decisions `Authorizer` has made recently. Keys are SHA-256 digests of the verb, path and
//! token, so the cache holds no token and each entry costs the same whatever was sent.

use std::collections::HashMap;
use std::time::Instant;

use ring::digest::{SHA256, digest};

use super::Decision;

/// Tokens remembered at most; beyond that the cache starts afresh.
pub const CACHE_ENTRIES: usize = 1024;

/// A request's verb, path and token, digested.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key([u8; 32]);

impl Key {
    pub fn of(verb: &str, path: &str, token: &str) -> Self {
        // NUL cannot occur in a verb or a path, so no two requests share the digested text.
        let text = [verb, path, token].join("\0");
        let mut key = [0; 32];
        key.copy_from_slice(digest(&SHA256, text.as_bytes()).as_ref());
        Key(key)
    }
}

/// Recent decisions, with when each expires.
#[derive(Debug, Default)]
pub struct Cache {
    entries: HashMap<Key, (Decision, Instant)>,
}

impl Cache {
    pub fn get(&self, key: &Key, now: Instant) -> Option<Decision> {
        let (decision, expires) = self.entries.get(key)?;
        (now < *expires).then_some(*decision)
    }

    pub fn insert(&mut self, key: Key, decision: Decision, now: Instant) {
        if self.entries.len() >= CACHE_ENTRIES {
            self.entries.retain(|_, (_, expires)| now < *expires);
        }
        // Full of live entries: made-up tokens, most likely, which must not push out the
        // decisions that let Prometheus in, so refusals go first.
        if self.entries.len() >= CACHE_ENTRIES {
            self.entries
                .retain(|_, (decision, _)| *decision == Decision::Allowed);
        }
        if self.entries.len() >= CACHE_ENTRIES {
            self.entries.clear();
        }
        self.entries.insert(key, (decision, now + decision.ttl()));
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ALLOWED_TTL, DENIED_TTL};
    use super::*;

    fn key(token: &str) -> Key {
        Key::of("get", "/metrics", token)
    }

    #[test]
    fn keys_tell_verbs_paths_and_tokens_apart() {
        assert_eq!(key("abc"), key("abc"));
        assert_ne!(key("abc"), key("abd"));
        assert_ne!(key("abc"), Key::of("post", "/metrics", "abc"));
        assert_ne!(Key::of("get", "/a", "b/c"), Key::of("get", "/a/b", "c"));
    }

    #[test]
    fn denials_expire_sooner_and_the_cache_stays_bounded() {
        let now = Instant::now();
        let mut cache = Cache::default();
        cache.insert(key("yes"), Decision::Allowed, now);
        cache.insert(key("no"), Decision::Forbidden, now);
        let later = now + DENIED_TTL;
        assert_eq!(cache.get(&key("yes"), later), Some(Decision::Allowed));
        assert_eq!(cache.get(&key("no"), later), None);
        assert_eq!(cache.get(&key("yes"), now + ALLOWED_TTL), None);

        for i in 0..CACHE_ENTRIES * 2 {
            cache.insert(key(&i.to_string()), Decision::Allowed, now);
            assert!(cache.entries.len() <= CACHE_ENTRIES);
        }
    }

    #[test]
    fn made_up_tokens_do_not_push_out_an_allowed_one() {
        let now = Instant::now();
        let mut cache = Cache::default();
        cache.insert(key("prometheus"), Decision::Allowed, now);
        for i in 0..CACHE_ENTRIES * 2 {
            cache.insert(key(&format!("made-up-{i}")), Decision::Unauthenticated, now);
        }
        assert_eq!(cache.get(&key("prometheus"), now), Some(Decision::Allowed));
    }
}
