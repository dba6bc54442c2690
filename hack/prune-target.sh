#!/usr/bin/env bash
# Frees a shared cargo target directory of what no later build can reuse: the artifacts of
# generated projects whose sources are gone (each test scaffolds into a fresh temporary
# directory, so each leaves a new crate of up to 2 GB behind) and incremental caches.
# Dependencies' artifacts stay, so the next build is still warm.
set -euo pipefail
dir=${1:?usage: hack/prune-target.sh TARGET_DIR}
[ -d "$dir" ] || exit 0
for profile in "$dir"/*/; do
    [ -d "$profile/deps" ] || continue
    rm -rf "$profile/incremental"
    for depfile in "$profile"/deps/*.d; do
        [ -e "$depfile" ] || continue
        # The first line is "<output>: <first source> ...": a crate whose first source is gone
        # belonged to a deleted project.
        source=$(head -n 1 "$depfile" | cut -d: -f2- | awk '{print $1}')
        if [ -z "$source" ] || [ -e "$source" ]; then continue; fi
        stem=$(basename "$depfile" .d)
        hash=${stem##*-}
        rm -rf "$profile"/deps/*-"$hash" "$profile"/deps/*-"$hash".* \
            "$profile"/.fingerprint/*-"$hash" "$profile"/build/*-"$hash"
    done
done
