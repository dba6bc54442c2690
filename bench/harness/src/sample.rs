//! Sampling from /proc: a process's RSS, threads and CPU time, the control plane's CPU time,
//! and the whole machine's busy time.

use std::collections::BTreeMap;
use std::process::Command;

use crate::Error;

pub struct Sample {
    pub rss_kb: u64,
    pub anon_kb: u64,
    pub hwm_kb: u64,
    pub threads: u64,
    pub cpu_s: f64,
}

pub fn sample(pid: u32, ticks: f64) -> Result<Sample, Error> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    Ok(Sample {
        rss_kb: field("VmRSS:"),
        anon_kb: field("RssAnon:"),
        hwm_kb: field("VmHWM:"),
        threads: field("Threads:"),
        cpu_s: cpu_seconds(pid, ticks).ok_or("cannot read /proc/<pid>/stat")?,
    })
}

/// utime + stime of `pid`, in seconds.
pub fn cpu_seconds(pid: u32, ticks: f64) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // rest[0] is field 3 (state); utime is field 14, stime field 15.
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / ticks)
}

/// Busy CPU seconds of the whole machine since boot (all cores), from /proc/stat.
pub fn machine_busy_s(ticks: f64) -> f64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let Some(cpu) = stat.lines().find(|l| l.starts_with("cpu ")) else {
        return 0.0;
    };
    let f: Vec<f64> = cpu
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal: everything but idle and iowait.
    let busy: f64 = [0, 1, 2, 5, 6, 7].iter().filter_map(|&i| f.get(i)).sum();
    busy / ticks
}

pub fn clock_ticks() -> Result<f64, Error> {
    let out = Command::new("getconf").arg("CLK_TCK").output()?;
    Ok(String::from_utf8(out.stdout)?.trim().parse()?)
}

/// CPU seconds of this process's children by name: etcd, kube-apiserver, kube-controller-manager.
pub fn control_plane_cpu(ticks: f64) -> BTreeMap<String, f64> {
    let me = std::process::id().to_string();
    let mut cpu = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return cpu;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let name = &stat[open + 1..close];
        let ppid = stat[close + 2..].split_whitespace().nth(1);
        if ppid == Some(me.as_str())
            && ["etcd", "kube-apiserver", "kube-controller"].contains(&name)
            && let Some(s) = cpu_seconds(pid, ticks)
        {
            cpu.insert(name.to_string(), s);
        }
    }
    cpu
}
