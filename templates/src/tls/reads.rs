//! controller-runtime's certwatcher metrics, for certificates served from files:
//! `certwatcher_read_certificate_total` counts every read (at start, then at each check, every
//! 10 s) and `certwatcher_read_certificate_errors_total` those that failed (a file missing, a
//! pair that does not parse). The certificate in use stays when a read fails, so an alert on
//! the errors is what catches a renewal gone wrong before that certificate expires. Like
//! controller-runtime's, they belong to the process: every server reading files counts here.

use std::sync::LazyLock;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::registry::Registry;

#[derive(Debug, Default)]
pub struct CertReads {
    total: Counter,
    errors: Counter,
}

static READS: LazyLock<CertReads> = LazyLock::new(CertReads::default);

/// The manager's certificate reads.
pub fn reads() -> &'static CertReads {
    &READS
}

impl CertReads {
    pub fn register(&self, registry: &mut Registry) {
        let certwatcher = registry.sub_registry_with_prefix("certwatcher");
        certwatcher.register(
            "read_certificate",
            "Total number of certificate reads",
            self.total.clone(),
        );
        certwatcher.register(
            "read_certificate_errors",
            "Total number of certificate read errors",
            self.errors.clone(),
        );
    }

    /// Counts `read`, the outcome of reading a certificate's files, and hands it on.
    pub(super) fn count<T, E>(&self, read: Result<T, E>) -> Result<T, E> {
        self.total.inc();
        if read.is_err() {
            self.errors.inc();
        }
        read
    }

    /// The reads so far, and of those the failed ones.
    pub fn counts(&self) -> (u64, u64) {
        (self.total.get(), self.errors.get())
    }
}
