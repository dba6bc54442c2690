#!/usr/bin/env bash
# Runs every test of opsdk: formatting and clippy of opsdk itself (and of the benchmark
# harness, which compiles the generated envtest harness into itself), its unit and CLI tests, the
# golden copy, the generated projects' own checks (rustfmt, clippy, unit tests, envtest suites
# against a real kube-apiserver, crdgen), the article's walkthrough end to end, a leader
# handover between two managers (with the Grafana dashboard's metrics in its scrape), a
# namespace-scoped manager with a Role only, the generated CI workflows under actionlint, and
# the article's image steps (docker-build, docker-push, deploy) with buildah and a local registry.
#
# Builds (or reuses) the control plane with hack/k8s-assets.sh and the stand-in base images with
# hack/local-images.sh. Needs root on Debian for the image steps: it installs buildah,
# debootstrap, docker-registry and shellcheck (actionlint checks the workflows' scripts with it)
# when missing. Nothing that is missing is skipped: it fails.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
for pkg in buildah debootstrap docker-registry shellcheck; do
    command -v "$pkg" >/dev/null || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "installing ${missing[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

KUBEBUILDER_ASSETS=$(hack/k8s-assets.sh | tail -n 1)
export KUBEBUILDER_ASSETS
export ENVTEST_REQUIRED=1
hack/local-images.sh >/dev/null
# One target directory for every generated project, outside the clone.
export OPSDK_TARGET_DIR=${OPSDK_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/opsdk/target-gen}
# Each generated project is built a few times at most: its incremental cache (about 1 GB per
# project in that shared directory) would cost more disk than it saves time.
export CARGO_INCREMENTAL=0
# Every test scaffolds into a new directory, so every run leaves its projects' crates behind in
# that shared directory (tens of GB over a few runs, on the disk CI shares): drop them before
# and after.
hack/prune-target.sh "$OPSDK_TARGET_DIR"
trap 'hack/prune-target.sh "$OPSDK_TARGET_DIR"' EXIT

cargo fmt --check
cargo clippy --all-targets -- -D warnings
# The benchmark harness compiles the generated projects' envtest harness (templates/tests/envtest)
# into itself, so a change there can break bench/run.sh: keep it building, warning-free.
cargo fmt --check --manifest-path bench/harness/Cargo.toml
CARGO_TARGET_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/opsdk/harness-check" \
    cargo clippy --locked --manifest-path bench/harness/Cargo.toml -- -D warnings
# The slow suites are #[ignore]d for a plain `cargo test`; run them too, one at a time
# (each builds a project or starts control planes, and the machine has 2 cores).
cargo test -- --include-ignored --test-threads=1
