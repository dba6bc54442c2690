//! kubectl, the control plane's own (1.37), driven from tests against a test cluster.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// kubectl (the control plane's own, 1.37) against the test cluster.
pub struct Kubectl {
    pub bin: PathBuf,
    pub kubeconfig: PathBuf,
    /// Working directory, for relative paths such as `-k config/crd`.
    pub dir: PathBuf,
}

impl Kubectl {
    /// A kubeconfig in `dir` authenticated as the ServiceAccount `namespace/name`, with a token
    /// from the TokenRequest API, as a Pod of that account gets.
    pub fn account_kubeconfig(&self, namespace: &str, name: &str, dir: &Path) -> PathBuf {
        let token = self.ok(&["-n", namespace, "create", "token", name, "--duration=1h"]);
        let admin = std::fs::read(&self.kubeconfig).unwrap();
        let mut kubeconfig: serde_json::Value = serde_json::from_slice(&admin).unwrap();
        kubeconfig["users"][0]["user"] = serde_json::json!({ "token": token.trim() });
        let path = dir.join(format!("{name}.kubeconfig"));
        std::fs::write(&path, serde_json::to_vec(&kubeconfig).unwrap()).unwrap();
        path
    }

    pub fn output(&self, args: &[&str], stdin: Option<&str>) -> Output {
        let mut cmd = Command::new(&self.bin);
        cmd.args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .current_dir(&self.dir);
        match stdin {
            None => cmd.output().unwrap(),
            Some(input) => {
                use std::io::Write;
                cmd.stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped());
                let mut child = cmd.spawn().unwrap();
                child
                    .stdin
                    .take()
                    .unwrap()
                    .write_all(input.as_bytes())
                    .unwrap();
                child.wait_with_output().unwrap()
            }
        }
    }

    /// Runs kubectl, failing the test if it fails; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        self.ok_with_stdin(args, None).0
    }

    pub fn ok_with_stdin(&self, args: &[&str], stdin: Option<&str>) -> (String, String) {
        let out = self.output(args, stdin);
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        );
        assert!(
            out.status.success(),
            "kubectl {} failed:\n{stdout}\n{stderr}",
            args.join(" ")
        );
        (stdout, stderr)
    }

    /// Polls `kubectl args` until its stdout satisfies `done`.
    pub fn eventually(&self, what: &str, args: &[&str], done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let out = self.output(args, None);
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            if out.status.success() && done(&stdout) {
                return stdout;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; last `kubectl {}`:\n{stdout}{}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}
