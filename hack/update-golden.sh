#!/usr/bin/env bash
# Regenerates testdata/k8s-operator-talk, the golden copy of the article's project, and
# testdata/k8s-operator-talk-helm, the files its Helm plugin adds or changes, from the
# templates. Review `git diff testdata/` before committing it.
set -euo pipefail
cd "$(dirname "$0")/.."
OPSDK_UPDATE_GOLDEN=1 cargo test --quiet --test cli golden::
git status --short testdata/
