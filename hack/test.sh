#!/usr/bin/env bash
# Runs every test of opsdk: formatting and clippy of opsdk itself, its unit and CLI tests, the
# golden copy, the generated projects' own checks (rustfmt, clippy, unit tests, envtest suites
# against a real kube-apiserver, crdgen), and the article's walkthrough end to end.
#
# Builds (or reuses) the control plane with hack/k8s-assets.sh. A missing control plane fails
# the run instead of skipping the suites that need it.
set -euo pipefail
cd "$(dirname "$0")/.."

KUBEBUILDER_ASSETS=$(hack/k8s-assets.sh | tail -n 1)
export KUBEBUILDER_ASSETS
export ENVTEST_REQUIRED=1
# One target directory for every generated project, outside the clone.
export OPSDK_TARGET_DIR=${OPSDK_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/opsdk/target-gen}

cargo fmt --check
cargo clippy --all-targets -- -D warnings
# The slow suites are #[ignore]d for a plain `cargo test`; run them too, one at a time
# (each builds a project or starts control planes, and the machine has 2 cores).
cargo test -- --include-ignored --test-threads=1
