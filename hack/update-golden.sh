#!/usr/bin/env bash
# Regenerates testdata/k8s-operator-talk, the golden copy of the article's project, from the
# templates. Review `git diff testdata/` before committing it.
set -euo pipefail
cd "$(dirname "$0")/.."
OPSDK_UPDATE_GOLDEN=1 cargo test --quiet --test cli golden -- --exact golden::golden_copy_matches_the_templates
git status --short testdata/
