#!/usr/bin/env bash
# Regenerates testdata/k8s-operator-talk, the golden copy of the article's project, and
# testdata/k8s-operator-talk-helm and -webhook, the files its Helm plugin and the
# Application's webhooks add or change, from the templates. Review `git diff testdata/` before committing it.
set -euo pipefail
cd "$(dirname "$0")/.."
OPSDK_UPDATE_GOLDEN=1 cargo test --quiet --test cli golden::
git status --short testdata/
