#!/usr/bin/env bash
# Builds and checks the container image of a generated operator with Debian's buildah (no Docker
# engine, no image registry here), through the project's own `make docker-build`.
#
#   hack/image-test.sh                 # scaffolds the article's project and builds its image
#   hack/image-test.sh PROJECT_DIR [IMG]
#
# Runs as root on a Debian bookworm host; installs buildah and debootstrap if missing. The two base
# images the generated Dockerfile names are made locally first (cached in buildah's storage):
#   docker.io/library/rust:<X.Y>-bookworm   debootstrap'd bookworm + gcc/libc6-dev/ca-certificates
#                                            + rustup-init --profile minimal --default-toolchain <X.Y>,
#                                            laid out like the official image
#   gcr.io/distroless/cc-debian12:nonroot   Debian 12 libraries unpacked: no shell, no dpkg/apt,
#                                            nonroot:x:65532:65532, USER 65532
# Then checks the image: user 65532, entrypoint /manager, no shell, and /manager runs.
#
# Env: FORCE_BASE=1 rebuilds the base images. BUILDAH_ISOLATION=chroot (default) or
#      BUILDAH_RUNTIME=runc: this host's crun refuses to start containers ("cgroups in hybrid mode
#      not supported"). NICE="nice -n 19" lowers the priority of the heavy steps.
# Measured here (2 cores): base images ~95 s, a cold image build ~4 min, a rebuild after editing
# the controller ~2 min (the dependency layer is reused), the image 25.4 MB (binary 11.2 MB).
set -euo pipefail

if [ $# -eq 0 ]; then
    # The article's project, scaffolded by this checkout's opsdk.
    repo=$(cd "$(dirname "$0")/.." && pwd)
    scratch=$(mktemp -d)
    trap 'rm -rf "$scratch"' EXIT
    cargo build --quiet --release --manifest-path "$repo/Cargo.toml"
    opsdk=$(cargo metadata --format-version 1 --no-deps --manifest-path "$repo/Cargo.toml" | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')/release/opsdk
    mkdir -p "$scratch/k8s-operator-talk"
    (cd "$scratch/k8s-operator-talk" &&
        "$opsdk" init --domain minetto.dev --repo github.com/eminetto/k8s-operator-talk >/dev/null &&
        "$opsdk" create api --version v1alpha1 --kind Application --resource --controller >/dev/null)
    set -- "$scratch/k8s-operator-talk" k8s-operator-talk:test
fi
PROJECT=$(cd "$1" && pwd)
IMG=${2:-k8s-operator:dev}
WORK=${WORK:-${XDG_CACHE_HOME:-$HOME/.cache}/opsdk/images}
NICE=${NICE:-}
export BUILDAH_LAYERS=true
if [ -z "${BUILDAH_RUNTIME:-}" ]; then export BUILDAH_ISOLATION=${BUILDAH_ISOLATION:-chroot}; fi
MIRROR=${MIRROR:-http://deb.debian.org/debian}

log() { printf '\n=== %s\n' "$*" >&2; }
have_image() { [ -z "${FORCE_BASE:-}" ] && buildah inspect --type image "$1" >/dev/null 2>&1; }

# Commit the directory $1 as image $2 with the buildah config arguments that follow.
commit_dir() {
    local dir=$1 name=$2 ctr mnt
    shift 2
    ctr=$(buildah from scratch)
    mnt=$(buildah mount "$ctr")
    tar -C "$dir" --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' -cf - . | tar -C "$mnt" -xpf -
    buildah umount "$ctr" >/dev/null
    buildah config "$@" "$ctr"
    buildah commit --rm -q "$ctr" "$name" >/dev/null
}

command -v buildah >/dev/null && command -v debootstrap >/dev/null || {
    log "installing buildah debootstrap"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq buildah debootstrap >/dev/null
}
buildah --version

RUST_TAG=$(sed -n 's#^FROM docker.io/library/rust:\([0-9.]*\)-bookworm.*#\1#p' "$PROJECT/Dockerfile")
[ -n "$RUST_TAG" ] || { echo "no 'FROM docker.io/library/rust:X.Y-bookworm' in $PROJECT/Dockerfile" >&2; exit 1; }
RUST_IMAGE=docker.io/library/rust:$RUST_TAG-bookworm
RUNTIME_IMAGE=gcr.io/distroless/cc-debian12:nonroot
grep -q "^FROM $RUNTIME_IMAGE" "$PROJECT/Dockerfile" || { echo "Dockerfile does not use $RUNTIME_IMAGE" >&2; exit 1; }
mkdir -p "$WORK"

# --- 1. debootstrap'd bookworm ------------------------------------------------------------------
MINBASE=localhost/debian-bookworm-minbase:local
if ! have_image "$MINBASE"; then
    log "debootstrap bookworm -> $MINBASE"
    rm -rf "$WORK/minbase"
    $NICE debootstrap --variant=minbase --include=ca-certificates,gcc,libc6-dev,curl \
        bookworm "$WORK/minbase" "$MIRROR" >"$WORK/debootstrap.log"
    chroot "$WORK/minbase" apt-get clean
    rm -rf "$WORK/minbase/var/lib/apt/lists/"*
    commit_dir "$WORK/minbase" "$MINBASE" --cmd bash \
        --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
    rm -rf "$WORK/minbase"
fi

# --- 2. rust:X.Y-bookworm -------------------------------------------------------------------------
if ! have_image "$RUST_IMAGE"; then
    log "$RUST_IMAGE (rustup-init --default-toolchain $RUST_TAG inside the build)"
    ctx=$WORK/rust-context
    rm -rf "$ctx" && mkdir -p "$ctx/extra-ca"
    cp "$(command -v rustup)" "$ctx/rustup-init"  # the rustup binary acts as rustup-init by its name
    # Locally added trust anchors of this host (here: a TLS-intercepting egress proxy in front of
    # crates.io and static.rust-lang.org). Builder stand-in only; never the runtime image.
    cp /usr/local/share/ca-certificates/*.crt "$ctx/extra-ca/" 2>/dev/null || true
    cat >"$ctx/Containerfile" <<EOF
FROM $MINBASE
COPY extra-ca/ /usr/local/share/ca-certificates/
RUN update-ca-certificates
ENV RUSTUP_HOME=/usr/local/rustup \\
    CARGO_HOME=/usr/local/cargo \\
    PATH=/usr/local/cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \\
    RUST_VERSION=$RUST_TAG
COPY rustup-init /tmp/rustup-init
RUN /tmp/rustup-init -y --no-modify-path --profile minimal --default-toolchain \$RUST_VERSION \\
        --default-host x86_64-unknown-linux-gnu \\
    && rm /tmp/rustup-init && chmod -R a+w \$RUSTUP_HOME \$CARGO_HOME \\
    && rustup --version && cargo --version && rustc --version
EOF
    $NICE buildah build --layers=false -q -t "$RUST_IMAGE" "$ctx" >/dev/null
    rm -rf "$ctx"
fi

# --- 3. distroless/cc-debian12:nonroot -------------------------------------------------------------
if ! have_image "$RUNTIME_IMAGE"; then
    log "$RUNTIME_IMAGE from Debian 12 debs"
    d=$WORK/distroless
    rm -rf "$d" && mkdir -p "$d/debs" "$d/rootfs"
    (cd "$d/debs" && apt-get download -q libc6 libgcc-s1 libssl3 libstdc++6 libgomp1 tzdata netbase base-files 2>/dev/null)
    for deb in "$d"/debs/*.deb; do dpkg-deb -x "$deb" "$d/rootfs"; done
    (
        cd "$d/rootfs"
        # No shell, no package manager, no tools: shared libraries and data only.
        rm -rf bin sbin usr/bin usr/sbin usr/libexec usr/games usr/include usr/src var/lib/dpkg \
            var/backups var/spool etc/update-motd.d etc/profile etc/profile.d etc/skel etc/dpkg \
            usr/share/doc usr/share/man usr/share/info usr/share/lintian usr/share/locale \
            usr/share/base-files usr/share/common-licenses usr/share/gcc usr/share/gdb \
            usr/lib/x86_64-linux-gnu/gconv usr/share/zoneinfo/right usr/share/zoneinfo/posix
        printf '%s\n' 'root:x:0:0:root:/root:/sbin/nologin' \
            'nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin' \
            'nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin' >etc/passwd
        printf '%s\n' 'root:x:0:' 'tty:x:5:' 'staff:x:50:' 'nonroot:x:65532:' 'nobody:x:65534:' >etc/group
        printf '%s\n' 'passwd: files' 'group: files' 'shadow: files' 'hosts: files dns' \
            'networks: files' 'protocols: files' 'services: files' >etc/nsswitch.conf
        mkdir -p etc/ssl/certs home/nonroot
        chown 65532:65532 home/nonroot && chmod 700 home/nonroot && chmod 1777 tmp
    )
    # Debian's own CA bundle (from the bookworm image, before any extra CA was added).
    ctr=$(buildah from "$MINBASE")
    cp "$(buildah mount "$ctr")/etc/ssl/certs/ca-certificates.crt" "$d/rootfs/etc/ssl/certs/"
    buildah umount "$ctr" >/dev/null && buildah rm "$ctr" >/dev/null
    commit_dir "$d/rootfs" "$RUNTIME_IMAGE" --user 65532 --workingdir /home/nonroot \
        --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
    rm -rf "$d"
fi

# --- 4. the project's own Makefile ---------------------------------------------------------------
log "make docker-build IMG=$IMG CONTAINER_TOOL=buildah (BUILDAH_ISOLATION=${BUILDAH_ISOLATION:-} BUILDAH_RUNTIME=${BUILDAH_RUNTIME:-} BUILDAH_LAYERS=$BUILDAH_LAYERS)"
start=$(date +%s)
$NICE make -C "$PROJECT" docker-build IMG="$IMG" CONTAINER_TOOL=buildah
echo "docker-build: $(($(date +%s) - start)) s"

# --- 5. checks ----------------------------------------------------------------------------------
log "checks"
ref=$IMG
case "$ref" in */*) ;; *) ref=localhost/$ref ;; esac
user=$(buildah inspect --type image --format '{{.OCIv1.Config.User}}' "$ref")
entry=$(buildah inspect --type image --format '{{.OCIv1.Config.Entrypoint}}' "$ref")
echo "user=$user entrypoint=$entry"
[ "$user" = 65532:65532 ] || { echo "FAIL: image user is '$user'" >&2; exit 1; }
[ "$entry" = '[/manager]' ] || { echo "FAIL: entrypoint is $entry" >&2; exit 1; }
buildah images --format '{{.Name}}:{{.Tag}} {{.Size}}' "$ref"
ctr=$(buildah from "$ref")
trap 'buildah rm "$ctr" >/dev/null 2>&1 || true; rm -rf "${scratch:-}"' EXIT
mnt=$(buildah mount "$ctr")
for f in bin/sh usr/bin/sh bin/bash usr/bin/apt usr/bin/dpkg; do
    [ ! -e "$mnt/$f" ] || { echo "FAIL: /$f exists in the runtime image" >&2; exit 1; }
done
echo "no shell, no apt/dpkg in the image"
buildah umount "$ctr" >/dev/null
buildah run --isolation chroot "$ctr" -- /manager --help >/dev/null
buildah run --isolation chroot "$ctr" -- /manager --version
if buildah run --isolation chroot "$ctr" -- /bin/sh -c true 2>/dev/null; then
    echo "FAIL: /bin/sh ran in the image" >&2; exit 1
fi
echo "OK: $IMG runs /manager as 65532:65532"
