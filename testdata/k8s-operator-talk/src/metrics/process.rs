//! The `process_*` metrics every Go operator exports (Prometheus' process collector), under
//! the same names: CPU time, resident and virtual memory, open and allowed file descriptors,
//! and start time, read from /proc at each scrape. kubebuilder's resources dashboard plots
//! the first two. Where there is no /proc (a manager run on macOS by `make run`), there are
//! none.

use std::fs;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

/// The kernel counts a process's CPU time in ticks of USER_HZ, which is 100 on every Linux
/// architecture (the value Prometheus' own collector assumes).
const TICKS_PER_SECOND: f64 = 100.0;

#[derive(Clone, Copy, Debug, Default)]
pub struct Process;

/// What one scrape reads about the process.
#[derive(Debug, PartialEq)]
struct Sample {
    cpu_seconds: f64,
    resident_bytes: f64,
    virtual_bytes: f64,
    open_fds: f64,
    max_fds: f64,
    start_time_seconds: f64,
}

impl Sample {
    fn read() -> Option<Self> {
        let read = |path| fs::read_to_string(path).ok();
        let open_fds = fs::read_dir("/proc/self/fd").ok()?.count();
        Self::parse(
            &read("/proc/self/stat")?,
            &read("/proc/self/status")?,
            &read("/proc/self/limits")?,
            &read("/proc/stat")?,
            open_fds,
        )
    }

    /// From /proc/self/stat, /proc/self/status, /proc/self/limits and /proc/stat.
    fn parse(
        stat: &str,
        status: &str,
        limits: &str,
        system: &str,
        open_fds: usize,
    ) -> Option<Self> {
        // The command name, in parentheses, may hold spaces and parentheses itself: the fields
        // are counted from after its last one (field 3, the state, is the first).
        let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
        let field = |n: usize| fields.get(n - 3)?.parse::<f64>().ok();
        let kib = |key: &str| {
            let line = status.lines().find_map(|l| l.strip_prefix(key))?;
            line.trim().strip_suffix("kB")?.trim().parse::<f64>().ok()
        };
        let soft_fd_limit = limits
            .lines()
            .find_map(|l| l.strip_prefix("Max open files"))?
            .split_whitespace()
            .next()?;
        let boot = system.lines().find_map(|l| l.strip_prefix("btime "))?;
        Some(Sample {
            cpu_seconds: (field(14)? + field(15)?) / TICKS_PER_SECOND,
            resident_bytes: kib("VmRSS:")? * 1024.0,
            virtual_bytes: field(23)?,
            open_fds: open_fds as f64,
            // "unlimited", as Go's collector reports it: the largest value it can hold.
            max_fds: soft_fd_limit.parse().unwrap_or(u64::MAX as f64),
            start_time_seconds: boot.trim().parse::<f64>().ok()? + field(22)? / TICKS_PER_SECOND,
        })
    }
}

impl Collector for Process {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(sample) = Sample::read() else {
            return Ok(());
        };
        ConstCounter::new(sample.cpu_seconds).encode(encoder.encode_descriptor(
            "process_cpu_seconds",
            "Total user and system CPU time spent in seconds.",
            None,
            MetricType::Counter,
        )?)?;
        for (name, help, value) in [
            (
                "process_resident_memory_bytes",
                "Resident memory size in bytes.",
                sample.resident_bytes,
            ),
            (
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes.",
                sample.virtual_bytes,
            ),
            (
                "process_open_fds",
                "Number of open file descriptors.",
                sample.open_fds,
            ),
            (
                "process_max_fds",
                "Maximum number of open file descriptors.",
                sample.max_fds,
            ),
            (
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds.",
                sample.start_time_seconds,
            ),
        ] {
            let metric = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            ConstGauge::new(value).encode(metric)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_fields_after_a_command_name_holding_spaces_and_parentheses() {
        let stat = "4242 (mana ger) (x) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 130 0 0 20 0 \
                    9 0 5000 1690615808 3080 18446744073709551615 1 1 0 0 0 0 0 4096 17926 0 0 0 \
                    17 1 0 0 0 0 0";
        let status = "Name:\tmanager\nVmSize:\t 1650992 kB\nVmRSS:\t   12320 kB\nThreads:\t9\n";
        let limits = "Limit                     Soft Limit           Hard Limit           Units\n\
                      Max open files            1048576              1048576              files\n";
        let system = "cpu  1 2 3\nbtime 1764806400\nprocesses 9\n";
        assert_eq!(
            Sample::parse(stat, status, limits, system, 11),
            Some(Sample {
                cpu_seconds: 3.8,
                resident_bytes: 12_320.0 * 1024.0,
                virtual_bytes: 1_690_615_808.0,
                open_fds: 11.0,
                max_fds: 1_048_576.0,
                start_time_seconds: 1_764_806_450.0,
            })
        );
        let unlimited = limits.replace("1048576              1048576", "unlimited unlimited");
        let parsed = Sample::parse(stat, status, &unlimited, system, 11).unwrap();
        assert_eq!(parsed.max_fds, u64::MAX as f64);
        assert_eq!(
            Sample::parse("4242 (manager", status, limits, system, 11),
            None
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_scrape_has_this_process_figures() {
        // Enough CPU time to show in ticks of 10 ms.
        let spin = std::time::Instant::now();
        while spin.elapsed() < std::time::Duration::from_millis(50) {
            std::hint::black_box(spin.elapsed());
        }
        let mut registry = prometheus_client::registry::Registry::default();
        registry.register_collector(Box::new(Process));
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &registry).unwrap();
        let value = |name: &str| -> f64 {
            let line = out.lines().find(|l| l.starts_with(&format!("{name} ")));
            let line = line.unwrap_or_else(|| panic!("no {name} in\n{out}"));
            line.rsplit(' ').next().unwrap().parse().unwrap()
        };
        assert!(
            value("process_resident_memory_bytes") > 1_000_000.0,
            "{out}"
        );
        assert!(value("process_virtual_memory_bytes") >= value("process_resident_memory_bytes"));
        assert!(value("process_cpu_seconds_total") > 0.0, "{out}");
        assert!((3.0..=value("process_max_fds")).contains(&value("process_open_fds")));
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        let started = value("process_start_time_seconds");
        assert!(
            now - 3600.0 < started && started <= now + 1.0,
            "{started} against {now}"
        );
    }
}
