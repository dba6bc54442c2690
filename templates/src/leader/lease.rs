//! The rules of leader election, free of I/O: the timings, who may take the Lease, and what a
//! claim, a renewal and a release write into it. client-go's algorithm: a replica measures a
//! holder's lease on its own clock, from the moment it last saw the Lease change, so clock skew
//! between nodes does not matter.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::LeaseSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use tokio::time::Instant;

/// How long a Lease holds, how soon its holder must renew it, and how often replicas try.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timings {
    /// How long standbys wait, after they last saw the Lease change, before they take it from
    /// a silent holder. Written to the Lease as `leaseDurationSeconds` (whole seconds).
    pub lease_duration: Duration,
    /// The leader gives up when it has not renewed for this long, well before standbys may
    /// take the Lease: it stops reconciling before anyone else starts.
    pub renew_deadline: Duration,
    /// The pause between two tries, by the leader to renew and by standbys to take the Lease:
    /// a released Lease is taken within this time.
    pub retry_period: Duration,
}

impl Timings {
    /// controller-runtime's (and client-go's) defaults.
    pub const DEFAULT: Timings = Timings {
        lease_duration: Duration::from_secs(15),
        renew_deadline: Duration::from_secs(10),
        retry_period: Duration::from_secs(2),
    };

    /// These timings, if a leader can renew before its deadline and stop before its lease
    /// runs out.
    pub fn checked(self) -> Result<Self, String> {
        if self.retry_period.is_zero() || self.retry_period >= self.renew_deadline {
            Err(format!(
                "{self:?}: the retry period must be shorter than the renew deadline"
            ))
        } else if self.renew_deadline >= self.lease_duration {
            Err(format!(
                "{self:?}: the renew deadline must be shorter than the lease duration"
            ))
        } else {
            Ok(self)
        }
    }

    /// When the leader tries to renew next: one retry period from `now`, or at its
    /// `deadline` if that comes first.
    pub fn next_renewal(&self, now: Instant, deadline: Instant) -> Instant {
        (now + self.retry_period).min(deadline)
    }

    fn lease_seconds(&self) -> i32 {
        i32::try_from(self.lease_duration.as_secs())
            .unwrap_or(i32::MAX)
            .max(1)
    }
}

impl Default for Timings {
    fn default() -> Self {
        Timings::DEFAULT
    }
}

/// The Lease as this replica last saw it, and since when it has not changed.
#[derive(Clone, Debug, PartialEq)]
pub struct Observed {
    pub spec: LeaseSpec,
    pub since: Instant,
}

impl Observed {
    /// `spec`, read at `now`; the clock restarts only when it differs from `previous`.
    pub fn update(previous: Option<Observed>, spec: LeaseSpec, now: Instant) -> Observed {
        match previous {
            Some(previous) if previous.spec == spec => previous,
            _ => Observed { spec, since: now },
        }
    }

    /// The holder, when it is another replica whose lease has not run out at `now`.
    pub fn held_by_other(&self, me: &str, now: Instant) -> Option<&str> {
        let holder = self
            .spec
            .holder_identity
            .as_deref()
            .filter(|h| !h.is_empty())?;
        let seconds = self.spec.lease_duration_seconds.unwrap_or(0).max(0);
        let expires = self.since + Duration::from_secs(seconds.unsigned_abs().into());
        (holder != me && now < expires).then_some(holder)
    }
}

/// `spec` with `me` as holder, renewed at `now`: a renewal when `me` held it already (the
/// acquire time and transitions stay), else a takeover.
pub fn claim(spec: &LeaseSpec, me: &str, timings: &Timings, now: Timestamp) -> LeaseSpec {
    let renewing = spec.holder_identity.as_deref() == Some(me);
    let transitions = spec.lease_transitions.unwrap_or(0);
    LeaseSpec {
        holder_identity: Some(me.to_string()),
        lease_duration_seconds: Some(timings.lease_seconds()),
        acquire_time: if renewing {
            spec.acquire_time.clone()
        } else {
            Some(MicroTime(now))
        },
        renew_time: Some(MicroTime(now)),
        lease_transitions: Some(if renewing {
            transitions
        } else {
            transitions + 1
        }),
        ..spec.clone()
    }
}

/// `spec` given back at `now`, as client-go releases it: no holder, a one-second lease.
pub fn released(spec: &LeaseSpec, now: Timestamp) -> LeaseSpec {
    LeaseSpec {
        holder_identity: None,
        lease_duration_seconds: Some(1),
        acquire_time: Some(MicroTime(now)),
        renew_time: Some(MicroTime(now)),
        ..spec.clone()
    }
}

/// The holder identity: the Pod's name when set, else the host's name and the process id, so
/// that two managers on one workstation never share it.
pub fn identity_from(pod_name: Option<String>, host_name: Option<String>, pid: u32) -> String {
    match pod_name.filter(|name| !name.is_empty()) {
        Some(name) => name,
        None => {
            let host = host_name.filter(|name| !name.is_empty());
            format!("{}_{pid}", host.as_deref().unwrap_or("localhost"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(holder: Option<&str>, seconds: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: holder.map(str::to_string),
            lease_duration_seconds: Some(seconds),
            lease_transitions: Some(4),
            acquire_time: Some(MicroTime(Timestamp::UNIX_EPOCH)),
            ..LeaseSpec::default()
        }
    }

    #[test]
    fn the_defaults_are_controller_runtimes_and_consistent() {
        let t = Timings::DEFAULT.checked().unwrap();
        let secs = |d: Duration| d.as_secs();
        assert_eq!(
            (
                secs(t.lease_duration),
                secs(t.renew_deadline),
                secs(t.retry_period)
            ),
            (15, 10, 2)
        );
        assert_eq!(t.lease_seconds(), 15);
    }

    #[test]
    fn timings_that_could_overlap_two_leaders_are_refused() {
        let with = |lease, deadline, retry| Timings {
            lease_duration: Duration::from_secs(lease),
            renew_deadline: Duration::from_secs(deadline),
            retry_period: Duration::from_secs(retry),
        };
        assert!(with(15, 15, 2).checked().is_err());
        assert!(with(15, 10, 10).checked().is_err());
        assert!(with(15, 10, 0).checked().is_err());
        assert!(with(3, 2, 1).checked().is_ok());
    }

    #[test]
    fn the_leader_tries_every_retry_period_and_last_at_its_deadline() {
        let t = Timings::DEFAULT;
        let now = Instant::now();
        let far = now + Duration::from_secs(10);
        assert_eq!(t.next_renewal(now, far), now + Duration::from_secs(2));
        let near = now + Duration::from_millis(500);
        assert_eq!(t.next_renewal(now, near), near);
    }

    #[test]
    fn another_holder_keeps_the_lease_for_its_duration_on_our_clock() {
        let t0 = Instant::now();
        let seen = Observed::update(None, held(Some("b"), 15), t0);
        assert_eq!(seen.held_by_other("a", t0), Some("b"));
        assert_eq!(
            seen.held_by_other("a", t0 + Duration::from_millis(14_999)),
            Some("b")
        );
        assert_eq!(seen.held_by_other("a", t0 + Duration::from_secs(15)), None);
        // Our own hold, and a released Lease, stop nobody.
        assert_eq!(seen.held_by_other("b", t0), None);
        let given_back = Observed::update(None, released(&seen.spec, Timestamp::now()), t0);
        assert_eq!(given_back.held_by_other("a", t0), None);
        let empty = Observed::update(None, held(Some(""), 15), t0);
        assert_eq!(empty.held_by_other("a", t0), None);
    }

    #[test]
    fn the_clock_restarts_only_when_the_lease_changes() {
        let t0 = Instant::now();
        let later = t0 + Duration::from_secs(10);
        let seen = Observed::update(None, held(Some("b"), 15), t0);
        let same = Observed::update(Some(seen.clone()), held(Some("b"), 15), later);
        assert_eq!(same.since, t0);
        let mut renewed = held(Some("b"), 15);
        renewed.renew_time = Some(MicroTime(Timestamp::now()));
        let renewed = Observed::update(Some(same), renewed, later);
        assert_eq!(renewed.since, later);
        let expires = later + Duration::from_secs(15);
        assert_eq!(
            renewed.held_by_other("a", expires - Duration::from_millis(1)),
            Some("b")
        );
    }

    #[test]
    fn a_takeover_counts_a_transition_and_a_renewal_keeps_the_acquire_time() {
        let now = Timestamp::now();
        let t = Timings::DEFAULT;
        let taken = claim(&held(Some("b"), 15), "a", &t, now);
        assert_eq!(taken.holder_identity.as_deref(), Some("a"));
        assert_eq!(taken.lease_duration_seconds, Some(15));
        assert_eq!(taken.lease_transitions, Some(5));
        assert_eq!(taken.acquire_time, Some(MicroTime(now)));
        assert_eq!(taken.renew_time, Some(MicroTime(now)));
        let later = now + Duration::from_secs(2);
        let renewed = claim(&taken, "a", &t, later);
        assert_eq!(renewed.lease_transitions, Some(5));
        assert_eq!(renewed.acquire_time, Some(MicroTime(now)));
        assert_eq!(renewed.renew_time, Some(MicroTime(later)));
    }

    #[test]
    fn a_release_clears_the_holder_and_keeps_the_count() {
        let spec = released(&held(Some("a"), 15), Timestamp::now());
        assert_eq!(spec.holder_identity, None);
        assert_eq!(spec.lease_duration_seconds, Some(1));
        assert_eq!(spec.lease_transitions, Some(4));
    }

    #[test]
    fn the_identity_is_the_pod_name_else_host_and_pid() {
        let some = |s: &str| Some(s.to_string());
        assert_eq!(
            identity_from(some("app-7f9-x2"), some("node"), 7),
            "app-7f9-x2"
        );
        assert_eq!(identity_from(some(""), some("laptop"), 7), "laptop_7");
        assert_eq!(identity_from(None, None, 7), "localhost_7");
    }
}
