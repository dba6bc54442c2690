//! The kube-apiserver's audit log: who sent each request (by user agent), which verb on which
//! resource, when it was received and how long it took; followed while it grows, and read whole
//! after the run.

use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::Error;
use crate::control_plane::USER_AGENT;
use crate::report::round;

const WRITE_VERBS: &[&str] = &["create", "update", "patch", "delete", "deletecollection"];

/// Follows the audit log while it grows, to see when kube-controller-manager stops writing.
pub struct AuditTail {
    path: PathBuf,
    offset: u64,
    /// When kube-controller-manager's last write so far was received, in µs since 1970.
    pub last_kcm_write_us: i64,
}

impl AuditTail {
    pub fn new(path: PathBuf) -> Self {
        Self {
            path,
            offset: 0,
            last_kcm_write_us: 0,
        }
    }

    pub fn poll(&mut self) -> Result<(), Error> {
        use std::io::{Seek, SeekFrom};
        let mut file = std::fs::File::open(&self.path)?;
        file.seek(SeekFrom::Start(self.offset))?;
        let mut buf = Vec::new();
        file.read_to_end(&mut buf)?;
        // Only whole lines: the apiserver may be in the middle of one.
        let Some(end) = buf.iter().rposition(|&b| b == b'\n') else {
            return Ok(());
        };
        self.offset += end as u64 + 1;
        for line in buf[..end].split(|&b| b == b'\n') {
            let event: Value = serde_json::from_slice(line)?;
            let kcm = event["userAgent"]
                .as_str()
                .is_some_and(|ua| who(ua) == "kube-controller-manager");
            let write = event["verb"]
                .as_str()
                .is_some_and(|v| WRITE_VERBS.contains(&v));
            if kcm && write {
                let at = parse_time_us(
                    event["requestReceivedTimestamp"]
                        .as_str()
                        .unwrap_or_default(),
                )
                .unwrap_or_default();
                self.last_kcm_write_us = self.last_kcm_write_us.max(at);
            }
        }
        Ok(())
    }
}

pub struct AuditRequest {
    pub at_us: i64,
    /// From received to the audit event's stage (the response, or a watch's start).
    latency_us: i64,
    pub verb: String,
    /// The API group, empty for the core group and for requests that name no object.
    api_group: String,
    resource: String,
    pub user_agent: String,
    pub who: &'static str,
}

impl AuditRequest {
    pub fn is_write(&self) -> bool {
        WRITE_VERBS.contains(&self.verb.as_str())
    }

    /// A leader-election request: on a Lease (`leases` in coordination.k8s.io).
    pub fn is_lease(&self) -> bool {
        self.api_group == "coordination.k8s.io" && self.resource == "leases"
    }
}

/// One entry per request (audit ID), stamped with when the apiserver received it.
pub fn read_audit(path: &Path) -> Result<Vec<AuditRequest>, Error> {
    let file = std::fs::File::open(path)?;
    let mut seen = HashSet::new();
    let mut requests = Vec::new();
    for line in BufReader::new(file).lines() {
        let event: Value = serde_json::from_str(&line?)?;
        let id = event["auditID"].as_str().unwrap_or_default().to_string();
        if !seen.insert(id) {
            continue;
        }
        requests.push(request(&event)?);
    }
    Ok(requests)
}

/// The request an audit event is about.
fn request(event: &Value) -> Result<AuditRequest, Error> {
    let user_agent = event["userAgent"].as_str().unwrap_or_default().to_string();
    let object = &event["objectRef"];
    let resource = match (object["resource"].as_str(), object["subresource"].as_str()) {
        (Some(r), Some(s)) => format!("{r}/{s}"),
        (Some(r), None) => r.to_string(),
        _ => event["requestURI"]
            .as_str()
            .unwrap_or_default()
            .split('?')
            .next()
            .unwrap_or_default()
            .to_string(),
    };
    let time = |key: &str| {
        parse_time_us(event[key].as_str().unwrap_or_default())
            .ok_or(format!("bad {key} in the audit log"))
    };
    let at_us = time("requestReceivedTimestamp")?;
    Ok(AuditRequest {
        at_us,
        latency_us: time("stageTimestamp")? - at_us,
        verb: event["verb"].as_str().unwrap_or_default().to_string(),
        api_group: object["apiGroup"].as_str().unwrap_or_default().to_string(),
        resource,
        who: who(&user_agent),
        user_agent,
    })
}

/// Every client but the operator announces itself; the operator is whatever is left.
fn who(user_agent: &str) -> &'static str {
    if user_agent == USER_AGENT {
        "harness"
    } else if user_agent.starts_with("kube-controller-manager") {
        "kube-controller-manager"
    } else if user_agent.starts_with("kube-apiserver") {
        "kube-apiserver"
    } else if user_agent.starts_with("kubectl") {
        "kubectl"
    } else {
        "operator"
    }
}

pub fn by_verb(requests: &[&AuditRequest]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for r in requests {
        *out.entry(r.verb.clone()).or_default() += 1;
    }
    out.insert("total".into(), requests.len());
    out
}

pub fn by_verb_resource(requests: &[&AuditRequest]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for r in requests {
        *out.entry(format!("{} {}", r.verb, r.resource)).or_default() += 1;
    }
    out
}

/// Mean time the API server took to answer, in ms, by verb and resource.
pub fn latency_by_verb_resource(requests: &[&AuditRequest]) -> BTreeMap<String, f64> {
    let mut sums: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    for r in requests.iter().filter(|r| r.verb != "watch") {
        let (total, n) = sums
            .entry(format!("{} {}", r.verb, r.resource))
            .or_default();
        *total += r.latency_us;
        *n += 1;
    }
    sums.into_iter()
        .map(|(key, (total, n))| (key, round(total as f64 / n as f64 / 1000.0, 1)))
        .collect()
}

/// RFC 3339 in UTC as the audit log writes it (`2026-01-02T03:04:05.123456Z`), in µs since 1970.
fn parse_time_us(s: &str) -> Option<i64> {
    let (date, time) = s.strip_suffix('Z')?.split_once('T')?;
    let mut d = date.split('-').map(|p| p.parse::<i64>());
    let (y, m, day) = (d.next()?.ok()?, d.next()?.ok()?, d.next()?.ok()?);
    let (hms, frac) = time.split_once('.').unwrap_or((time, "0"));
    let mut t = hms.split(':').map(|p| p.parse::<i64>());
    let (h, min, sec) = (t.next()?.ok()?, t.next()?.ok()?, t.next()?.ok()?);
    let micros: i64 = format!("{frac:0<6}")[..6].parse().ok()?;
    // Days from civil (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 86_400 + h * 3600 + min * 60 + sec) * 1_000_000) + micros)
}

/// Now, on the audit log's clock: µs since 1970.
pub fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_micros() as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn audit_timestamps() {
        assert_eq!(
            parse_time_us("1970-01-01T00:00:01.000002Z"),
            Some(1_000_002)
        );
        assert_eq!(
            parse_time_us("2026-03-01T12:00:00.5Z"),
            Some(1_772_366_400_500_000)
        );
    }

    #[test]
    fn clients_are_told_apart() {
        assert_eq!(
            who("kube-controller-manager/v1.37.2 (linux/amd64)"),
            "kube-controller-manager"
        );
        assert_eq!(who(USER_AGENT), "harness");
        assert_eq!(who(""), "operator");
        assert_eq!(
            who("manager/v0.0.0 (linux/amd64) kubernetes/$Format"),
            "operator"
        );
    }

    #[test]
    fn lease_requests_are_told_apart() {
        let event = |group: &str, resource: &str, verb: &str| {
            serde_json::json!({
                "verb": verb,
                "userAgent": "manager/v0.0.0",
                "objectRef": {"apiGroup": group, "resource": resource, "namespace": "default"},
                "requestReceivedTimestamp": "2026-03-01T12:00:00.000100Z",
                "stageTimestamp": "2026-03-01T12:00:00.001100Z",
            })
        };
        let lease = request(&event("coordination.k8s.io", "leases", "update")).unwrap();
        assert!(lease.is_lease() && lease.is_write());
        assert_eq!(lease.latency_us, 1000);
        let get = request(&event("apps", "deployments", "get")).unwrap();
        assert!(!get.is_lease() && !get.is_write());
        // A resource named like it in another group is not leader election.
        assert!(
            !request(&event("example.dev", "leases", "get"))
                .unwrap()
                .is_lease()
        );
    }
}
