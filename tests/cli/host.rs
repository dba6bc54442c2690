//! Host helpers for the end-to-end tests: free ports, plain HTTP, HTTPS with curl, PATH, and background
//! processes that never outlive a test.

use std::ffi::OsString;
use std::fs::File;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// GET `path` from 127.0.0.1:`port`; the whole response, or "" when nothing listens yet.
pub fn http_get(port: u16, path: &str) -> String {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return String::new();
    };
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
}

/// An HTTPS response as curl saw it.
#[derive(Debug)]
pub struct Scraped {
    pub status: u16,
    /// The HTTP version spoken, as curl reports it: "1.1", "2".
    pub http_version: String,
    pub body: String,
}

/// GET `https://127.0.0.1:port/path` with curl, as a user scrapes the manager's metrics:
/// `-k` (its certificate is self-signed), the bearer `token` if any, HTTP/2 offered.
pub fn https_get(port: u16, path: &str, token: Option<&str>) -> Scraped {
    let mut cmd = Command::new("curl");
    cmd.args([
        "-sSk",
        "--http2",
        "--max-time",
        "10",
        "-w",
        "\n%{http_code} %{http_version}",
    ]);
    if let Some(token) = token {
        cmd.arg("-H").arg(format!("Authorization: Bearer {token}"));
    }
    let (out, _) = checked(cmd.arg(format!("https://127.0.0.1:{port}{path}")));
    let (body, trailer) = out.rsplit_once('\n').unwrap();
    let (status, version) = trailer.split_once(' ').unwrap();
    Scraped {
        status: status.parse().unwrap(),
        http_version: version.to_string(),
        body: body.to_string(),
    }
}

/// Polls `http_get` until the response starts with `HTTP/1.1 200`.
pub fn wait_for_ok(what: &str, port: u16, path: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let response = http_get(port, path);
        if response.starts_with("HTTP/1.1 200") {
            return response;
        }
        assert!(
            Instant::now() < deadline,
            "{what} never answered 200 on {path}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Runs `cmd`, failing the test with its output if it fails; returns stdout and stderr.
pub fn checked(cmd: &mut Command) -> (String, String) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("running {cmd:?} (is it installed?): {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    (stdout, stderr)
}

/// The control plane's binaries (hack/k8s-assets.sh builds them; hack/test.sh sets this).
pub fn kubebuilder_assets() -> PathBuf {
    PathBuf::from(
        std::env::var_os("KUBEBUILDER_ASSETS")
            .expect("KUBEBUILDER_ASSETS must name the control-plane binaries (hack/k8s-assets.sh)"),
    )
}

/// $PATH with `dir` first.
pub fn path_with(dir: &Path) -> OsString {
    let mut paths = vec![dir.to_path_buf()];
    paths.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(paths).unwrap()
}

/// A process started in its own process group, its output in a log file. Dropping it kills the
/// whole group (a `buildah run` forks the container's process) and, if the test is failing,
/// prints the log.
pub struct Background {
    pub child: Child,
    log: PathBuf,
}

impl Background {
    pub fn spawn(mut cmd: Command, log: PathBuf) -> Self {
        let out = File::create(&log).unwrap();
        let child = cmd
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {cmd:?}: {e}"));
        Self { child, log }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGTERM to the group; the exit status, or a failed test after `grace`.
    pub fn terminate(&mut self, grace: Duration) -> ExitStatus {
        self.sigterm();
        self.wait(grace)
    }

    /// SIGTERM to the group, without waiting.
    pub fn sigterm(&self) {
        self.signal_group("-TERM");
    }

    /// The exit status, or a failed test if the process is still running after `grace`.
    pub fn wait(&mut self, grace: Duration) -> ExitStatus {
        let deadline = Instant::now() + grace;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "{:?} did not stop within {grace:?}",
                self.log
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn signal_group(&self, signal: &str) {
        // The group id is the child's pid (process_group(0)).
        let _ = Command::new("kill")
            .args([signal, "--", &format!("-{}", self.child.id())])
            .stderr(std::process::Stdio::null())
            .status();
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.signal_group("-KILL");
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("log of {}:\n{}", self.log.display(), self.log());
        }
    }
}
