#!/usr/bin/env bash
# Makes, once, local stand-ins for the base images a generated Dockerfile names in its FROM
# lines, under exactly those names, so that `make docker-build CONTAINER_TOOL=buildah` builds
# the Dockerfile unchanged on a machine that cannot pull images.
#
#   hack/local-images.sh              # the base images of the golden project's Dockerfile
#   hack/local-images.sh DOCKERFILE   # those of another generated Dockerfile
#
# Recipes (Debian bookworm host, as root; installs buildah and debootstrap if missing):
#   docker.io/library/rust:X.Y-bookworm   `debootstrap --variant=minbase bookworm` plus gcc,
#       libc6-dev, make and ca-certificates, and this machine's own Rust X.Y toolchain (rustc,
#       cargo, the host's standard library) at the official image's paths: RUSTUP_HOME
#       /usr/local/rustup, CARGO_HOME /usr/local/cargo, cargo and rustc on PATH. It also trusts
#       the host's locally added CAs (/usr/local/share/ca-certificates), which this network's
#       TLS-inspecting proxy needs for cargo to reach crates.io inside a build.
#   scratch                                nothing to make.
# Images live in buildah's storage (/var/lib/containers), outside any clone; a second run only
# checks that they exist. FORCE=1 rebuilds them.
# Measured here (2 cores): about 40 s cold (debootstrap ~20 s), 0.1 s cached.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
DOCKERFILE=${1:-$repo/testdata/k8s-operator-talk/Dockerfile}
WORK=${WORK:-${XDG_CACHE_HOME:-$HOME/.cache}/opsdk/images}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
# The recipe's version: bump it to rebuild the images when a recipe changes.
MINBASE=localhost/opsdk/bookworm-minbase:2

log() { printf '=== %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }
have_image() { [ -z "${FORCE:-}" ] && buildah inspect --type image "$1" >/dev/null 2>&1; }

command -v buildah >/dev/null && command -v debootstrap >/dev/null || {
    log "installing buildah debootstrap"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq buildah debootstrap >/dev/null
}

# Commits the directory $1 as image $2, with the `buildah config` arguments that follow.
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

minbase() {
    have_image "$MINBASE" && return
    log "debootstrap bookworm -> $MINBASE"
    mkdir -p "$WORK"
    rm -rf "$WORK/minbase"
    debootstrap --variant=minbase --include=ca-certificates,gcc,libc6-dev,make \
        bookworm "$WORK/minbase" "$MIRROR" >"$WORK/debootstrap.log"
    chroot "$WORK/minbase" apt-get clean
    rm -rf "$WORK/minbase/var/lib/apt/lists/"*
    commit_dir "$WORK/minbase" "$MINBASE" --cmd bash \
        --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
    rm -rf "$WORK/minbase"
}

# The folder of an installed rustup toolchain whose rustc is version $1 (X.Y).
host_toolchain() {
    local want=$1 dir
    for dir in "${RUSTUP_HOME:-$HOME/.rustup}"/toolchains/*/; do
        if "$dir/bin/rustc" -V 2>/dev/null | grep -q "^rustc $want\.[0-9]* "; then
            readlink -f "$dir"
            return
        fi
    done
    die "no Rust $want toolchain on this machine for the $want builder image; install it with \`rustup toolchain install $want --profile minimal\`"
}

rust_image() {
    local name=$1 tag=$2 toolchain full host ctx
    have_image "$name" && return
    toolchain=$(host_toolchain "$tag")
    full=$("$toolchain/bin/rustc" -V | cut -d' ' -f2)
    host=$("$toolchain/bin/rustc" -vV | sed -n 's/^host: //p')
    log "$name <- minbase + Rust $full from $toolchain"
    minbase
    ctx=$WORK/rust-context
    rm -rf "$ctx" && mkdir -p "$ctx/extra-ca" "$ctx/toolchain"
    cp /usr/local/share/ca-certificates/*.crt "$ctx/extra-ca/" 2>/dev/null || true
    # The compiler and the host's standard library; no docs, sources, clippy or rustfmt.
    tar -C "$toolchain" --exclude=./share --exclude=./lib/rustlib/src -cf - \
        ./bin/cargo ./bin/rustc ./bin/rustdoc ./lib ./libexec | tar -C "$ctx/toolchain" -xf -
    cat >"$ctx/Containerfile" <<EOF
FROM $MINBASE
COPY extra-ca/ /usr/local/share/ca-certificates/
RUN update-ca-certificates >/dev/null 2>&1
COPY toolchain/ /usr/local/rustup/toolchains/$full-$host/
RUN mkdir -p /usr/local/cargo/bin \\
    && for tool in cargo rustc rustdoc; do \\
        ln -s /usr/local/rustup/toolchains/$full-$host/bin/\$tool /usr/local/cargo/bin/\$tool; \\
    done
ENV RUSTUP_HOME=/usr/local/rustup \\
    CARGO_HOME=/usr/local/cargo \\
    PATH=/usr/local/cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \\
    RUST_VERSION=$full
RUN cargo --version && rustc --version
EOF
    buildah build --isolation chroot --layers=false -q -t "$name" "$ctx" >/dev/null
    rm -rf "$ctx"
}

[ -f "$DOCKERFILE" ] || die "no Dockerfile at $DOCKERFILE"
found=0
while read -r image; do
    found=1
    case "$image" in
    scratch) ;;
    docker.io/library/rust:*-bookworm)
        tag=${image#docker.io/library/rust:}
        rust_image "$image" "${tag%-bookworm}"
        ;;
    *) die "no local recipe for base image $image (in $DOCKERFILE)" ;;
    esac
    echo "$image"
done < <(awk 'toupper($1) == "FROM" { print ($2 ~ /^--/ ? $3 : $2) }' "$DOCKERFILE")
[ "$found" = 1 ] || die "no FROM line in $DOCKERFILE"
