//! The operator's process: its manager binary started as `make run` would start it, its
//! readiness, its stop, and what it logged.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::Error;
use crate::args::{Args, Flavor};
use crate::audit::now_us;

/// The operator's process, killed if the run fails before it is stopped.
pub struct Operator {
    child: Child,
    probe_port: u16,
    /// When it was started: on the audit log's clock (µs since 1970), and monotonic.
    pub started_wall_us: i64,
    pub started: Instant,
}

impl Operator {
    /// Starts the manager with metrics off (nothing scrapes them) and its health probes on a
    /// free port, its output in `manager.log` and `manager.err` under `--logs`.
    pub fn start(args: &Args, kubeconfig: &Path) -> Result<Self, Error> {
        let probe_port = free_port()?;
        let mut cmd = Command::new(&args.manager);
        cmd.args([
            "--metrics-bind-address=0".to_string(),
            format!("--health-probe-bind-address=127.0.0.1:{probe_port}"),
        ])
        .env("KUBECONFIG", kubeconfig)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(args.logs.join("manager.log"))?)
        .stderr(std::fs::File::create(args.logs.join("manager.err"))?);
        if args.flavor == Flavor::Kubebuilder {
            // kubebuilder's deploy-image controller reads the operand image from the environment
            // (config/manager/manager.yaml sets it in the cluster).
            cmd.env("APPLICATION_IMAGE", &args.image);
        }
        let started_wall_us = now_us();
        let started = Instant::now();
        Ok(Self {
            child: cmd.spawn()?,
            probe_port,
            started_wall_us,
            started,
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn ensure_running(&mut self) -> Result<(), Error> {
        match self.child.try_wait()? {
            None => Ok(()),
            Some(status) => Err(format!("the operator exited early: {status}").into()),
        }
    }

    /// Until `/readyz` answers 200, at most `timeout`.
    pub async fn wait_ready(&mut self, timeout: Duration) -> Result<(), Error> {
        let deadline = Instant::now() + timeout;
        loop {
            self.ensure_running()?;
            if http_get(self.probe_port, "/readyz").is_ok_and(|r| r.starts_with("HTTP/1.1 200")) {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!("the operator was not ready after {timeout:?}").into());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// SIGTERM, as the kubelet would; SIGKILL after `grace`. Returns how it ended.
    pub fn stop(&mut self, grace: Duration) -> String {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return format!("SIGTERM: {status}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        format!("did not stop within {grace:?} of SIGTERM; killed")
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn http_get(port: u16, path: &str) -> std::io::Result<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(2)))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    Ok(response)
}

fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Lines the manager logged (stdout and stderr), and how many of them are errors.
pub fn log_stats(logs: &Path) -> Result<(usize, usize), Error> {
    let mut lines = 0;
    let mut errors = 0;
    for name in ["manager.log", "manager.err"] {
        let text = std::fs::read_to_string(logs.join(name)).unwrap_or_default();
        for line in text.lines() {
            lines += 1;
            if line.contains("ERROR") || line.contains("\"level\":\"error\"") {
                errors += 1;
            }
        }
    }
    Ok((lines, errors))
}
