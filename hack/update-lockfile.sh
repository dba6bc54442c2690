#!/usr/bin/env bash
# Rewrites templates/Cargo.lock.tera, the Cargo.lock every generated project ships with: the
# newest versions of the generated Cargo.toml's dependencies that its rust-version allows,
# resolved once here. Run it after changing src/versions.rs or templates/Cargo.toml.tera, then
# run the tests (they build every generated project with --locked) and review the diff.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet --release
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
name=lockfile-reference
(
    cd "$work"
    "$OLDPWD/target/release/opsdk" init --domain example.com --project-name "$name" >/dev/null
    rm Cargo.lock
    cargo generate-lockfile --quiet
)
sed "s/^name = \"$name\"\$/name = \"{{ project.name }}\"/" "$work/Cargo.lock" > templates/Cargo.lock.tera
grep -q '^name = "{{ project.name }}"$' templates/Cargo.lock.tera
git status --short templates/Cargo.lock.tera
