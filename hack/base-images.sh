#!/usr/bin/env bash
# Makes the base images of build/*.Dockerfile locally, from Debian packages,
# for machines that cannot pull golang:1.26-bookworm and gcr.io/distroless/*
# (docs/images.md). Each is made once and re-used while its inputs are
# unchanged: the image tags carry a key hashed from the code here that makes
# it, the mirror, and for the builder the Go toolchain's version and the
# host's CA bundle.
#
#   hack/base-images.sh [ARCH...]       ARCH: amd64, arm64 (default: the host's)
#
# It writes bin/base-images/ARCH.env with the build arguments that select
# the bases (BUILDER_IMAGE, RUNTIME_IMAGE, STATIC_IMAGE) and prints its path.
#
#   builder  gpuheal-local/builder:GOVERSION-KEY (host architecture only)
#            `debootstrap --variant=minbase bookworm` + gcc, libc6-dev,
#            ca-certificates and the cross compiler for the other architecture;
#            the host's Go toolchain ($(go env GOROOT)) at /usr/local/go; the
#            host's CA bundle in place of Debian's, so that the build stage
#            reaches the Go module proxy through this network's re-signing
#            TLS. The public golang:1.26-bookworm is the same thing made
#            upstream (it has git and a few more tools).
#   static   gpuheal-local/base-static:KEY-ARCH, what distroless/static-debian12
#            has: Debian's CA bundle, tzdata, netbase's /etc/services and
#            friends, os-release, /etc/passwd and /etc/group with root,
#            nobody and nonroot (65532), /tmp, /home/nonroot; runs as 65532.
#            No binaries, so the files are the same for every architecture.
#   glibc    gpuheal-local/base-glibc:KEY-ARCH, static + Debian's libc6 for
#            ARCH, as distroless/base-debian12 (without its libssl/openssl,
#            which the agent does not use); runs as root. No shell.
#
# The static and glibc bases are assembled with `dpkg-deb -x` from .debs that
# `debootstrap --download-only` fetched and verified against the archive's
# signed Release file: nothing runs for the target architecture, so arm64
# bases need no emulation. Their layer is bit-for-bit the same from the same
# .debs (sorted tar, numeric owners, every mtime 0). The builder's rootfs is
# not (debootstrap's second stage writes logs and generated files).
#
# Environment: DEBIAN_MIRROR (default: the Debian URI apt uses here, else
# http://deb.debian.org/debian), DEBIAN_SUITE (bookworm), DOCKER, GO,
# BASE_IMAGES_REBUILD=1 (make them again even if present).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
work="${GPUHEAL_BIN_DIR:-$root/bin}/base-images"
docker="${DOCKER:-$(command -v /usr/bin/docker || command -v docker)}"
go="${GO:-go}"
suite="${DEBIAN_SUITE:-bookworm}"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

die() { echo "base-images.sh: $*" >&2; exit 1; }
log() { echo ">> base-images: $*" >&2; }

[[ $(id -u) -eq 0 ]] || die "needs root (debootstrap, chroot)"
for t in debootstrap dpkg-deb "$go" sha256sum; do
  command -v "$t" >/dev/null || die "$t not found (make deps installs debootstrap)"
done
"$docker" info >/dev/null 2>&1 || die "no dockerd answers (hack/dockerd.sh start)"

mirror_from_apt() {
  # The deb822 sources apt uses here first, then a one-line sources.list.
  local f uri
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -f "$f" ]] || continue
    uri="$(awk '/^URIs:/ {for (i = 2; i <= NF; i++) if ($i ~ /\/debian\/?$/) {print $i; exit}}' "$f")"
    [[ -n "$uri" ]] && { echo "${uri%/}"; return; }
  done
  if [[ -f /etc/apt/sources.list ]]; then
    uri="$(awk '$1 == "deb" && $2 ~ /\/debian\/?$/ {print $2; exit}' /etc/apt/sources.list)"
    [[ -n "$uri" ]] && { echo "${uri%/}"; return; }
  fi
  echo http://deb.debian.org/debian
}
mirror="${DEBIAN_MIRROR:-$(mirror_from_apt)}"

host_arch="$(dpkg --print-architecture)"
goroot="$("$go" env GOROOT)"
goversion="$("$go" env GOVERSION)"
host_ca=/etc/ssl/certs/ca-certificates.crt
[[ -f "$host_ca" ]] || die "no CA bundle at $host_ca"

arches=("$@")
((${#arches[@]})) || arches=("$host_arch")
for a in "${arches[@]}"; do
  case "$a" in amd64 | arm64) ;; *) die "unsupported architecture $a (amd64, arm64)" ;; esac
done

have() { [[ "${BASE_IMAGES_REBUILD:-}" != 1 ]] && "$docker" image inspect "$1" >/dev/null 2>&1; }

# tar_rootfs DIR: a reproducible tar of DIR on stdout.
tar_rootfs() {
  tar -C "$1" --sort=name --numeric-owner --mtime=@0 --format=posix \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime -c .
}

# json STRING: STRING as a JSON string.
json() {
  local v="$1"
  v="${v//\\/\\\\}"
  v="${v//\"/\\\"}"
  printf '"%s"' "$v"
}

# load_image DIR TAG ARCH USER WORKDIR CMD ENV...: DIR's files as the image TAG
# for linux/ARCH. Made as a `docker save` archive and loaded, rather than
# `docker import`ed: import cannot set the architecture (Docker 20.10 ignores
# its --platform), and the image's config, and so its ID, is then ours to
# fix: no creation time (1970-01-01), no host-dependent fields.
load_image() {
  local dir="$1" tag="$2" arch="$3" user="$4" wd="$5" cmd="$6"; shift 6
  local t="$work/load" diff env="" e variant=""
  rm -rf "$t" && mkdir -p "$t/layer"
  tar_rootfs "$dir" >"$t/layer/layer.tar"
  diff="$(sha256sum <"$t/layer/layer.tar" | cut -d' ' -f1)"
  for e in "$@"; do env+="${env:+,}$(json "$e")"; done
  [[ "$arch" == arm64 ]] && variant='"variant":"v8",'
  printf '{"architecture":"%s",%s"os":"linux","created":"1970-01-01T00:00:00Z","config":{"User":%s,"Env":[%s],"Cmd":%s,"WorkingDir":%s,"Labels":{"io.gpuheal.base.key":%s}},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]},"history":[{"created":"1970-01-01T00:00:00Z","created_by":"hack/base-images.sh"}]}' \
    "$arch" "$variant" "$(json "$user")" "$env" "$cmd" "$(json "$wd")" "$(json "${tag##*:}")" "$diff" >"$t/config.json"
  local id
  id="$(sha256sum <"$t/config.json" | cut -d' ' -f1)"
  mv "$t/config.json" "$t/$id.json"
  printf '[{"Config":"%s.json","RepoTags":[%s],"Layers":["layer/layer.tar"]}]' "$id" "$(json "$tag")" >"$t/manifest.json"
  tar -C "$t" -c manifest.json "$id.json" layer | "$docker" load >/dev/null
  rm -rf "$t"
  [[ "$("$docker" image inspect -f '{{.Id}} {{.Architecture}}' "$tag")" == "sha256:$id $arch" ]] ||
    die "docker load of $tag did not give image sha256:$id for $arch"
  log "made $tag (sha256:${id:0:12}, $(du -sh "$dir" | cut -f1) rootfs)"
}

cross_pkgs() {
  case "$1" in
    amd64) echo gcc-aarch64-linux-gnu,libc6-dev-arm64-cross ;;
    arm64) echo gcc-x86-64-linux-gnu,libc6-dev-amd64-cross ;;
  esac
}

make_builder() {
  local rootfs="$work/rootfs-builder"
  log "debootstrap $suite ($host_arch, minbase) from $mirror for the builder; takes a few minutes"
  rm -rf "$rootfs"
  mkdir -p "$work/debs"
  debootstrap --variant=minbase --arch="$host_arch" --keyring="$keyring" \
    --cache-dir="$work/debs" \
    --include="ca-certificates,gcc,libc6-dev,libc-dev-bin,$(cross_pkgs "$host_arch")" \
    "$suite" "$rootfs" "$mirror" >"$work/debootstrap-builder.log" 2>&1 ||
    { tail -n 30 "$work/debootstrap-builder.log" >&2; die "debootstrap of the builder failed (log: $work/debootstrap-builder.log)"; }
  # debootstrap leaves /proc and /sys mounted when a step fails; not when it succeeds.
  chroot "$rootfs" apt-get clean
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/log/* "$rootfs"/var/cache/debconf/*-old \
    "$rootfs"/tmp/* "$rootfs"/root/.cache
  log "copying the Go toolchain $goversion from $goroot"
  mkdir -p "$rootfs/usr/local/go" "$rootfs/go/bin" "$rootfs/go/src"
  cp -a "$goroot/." "$rootfs/usr/local/go/"
  chmod 1777 "$rootfs/go" 2>/dev/null || true
  # The host's CA bundle: this network re-signs TLS.
  cp "$host_ca" "$rootfs/etc/ssl/certs/ca-certificates.crt"
  load_image "$rootfs" "$builder_tag" "$host_arch" 0:0 /go '["bash"]' \
    PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    GOPATH=/go GOTOOLCHAIN=local "GOLANG_VERSION=${goversion#go}" \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
  rm -rf "$rootfs"
}

# download_debs ARCH: verified .debs of a minbase $suite for ARCH (plus what
# the bases take) in $work/debs, shared with the builder's debootstrap, and
# $work/debs-ARCH.list naming the ones this download chose. No second stage,
# no emulation.
download_debs() {
  local arch="$1" list="$work/debs-$1.list" target="$work/download-$1"
  [[ -f "$list" ]] && return
  log "downloading $suite $arch packages from $mirror"
  rm -rf "$target"
  mkdir -p "$work/debs"
  debootstrap --download-only --variant=minbase --arch="$arch" --keyring="$keyring" \
    --cache-dir="$work/debs" --include=ca-certificates,netbase \
    "$suite" "$target" "$mirror" >"$work/download-$arch.log" 2>&1 ||
    { tail -n 30 "$work/download-$arch.log" >&2; die "debootstrap --download-only ($arch) failed (log: $work/download-$arch.log)"; }
  # "package /var/cache/apt/archives/FILE.deb" -> "package FILE.deb"
  awk '{n = split($2, p, "/"); print $1, p[n]}' "$target/debootstrap/debpaths" >"$list.tmp"
  rm -rf "$target"
  mv "$list.tmp" "$list"
}

# deb ARCH PACKAGE: the path of PACKAGE's .deb downloaded for ARCH.
deb() {
  local f
  f="$(awk -v p="$2" '$1 == p {print $2}' "$work/debs-$1.list")"
  [[ -n "$f" && -f "$work/debs/$f" ]] || die "no .deb of $2 for $1 in $work/debs (remove $work/debs-$1.list to download again)"
  echo "$work/debs/$f"
}

# static_rootfs ARCH DIR: distroless/static's files, from ARCH's .debs.
static_rootfs() {
  local arch="$1" dir="$2" x="$work/extract-$1"
  rm -rf "$dir" "$x"
  mkdir -p "$dir" "$x"
  local p
  for p in ca-certificates tzdata netbase base-files; do
    dpkg-deb -x "$(deb "$arch" "$p")" "$x/$p"
    mkdir -p "$dir/usr/share/doc/$p"
    cp "$x/$p/usr/share/doc/$p/copyright" "$dir/usr/share/doc/$p/copyright"
  done
  # The CA bundle, as update-ca-certificates makes it with Debian's default
  # configuration (every Mozilla certificate, in name order).
  mkdir -p "$dir/etc/ssl/certs"
  find "$x/ca-certificates/usr/share/ca-certificates" -name '*.crt' -print0 | LC_ALL=C sort -z |
    xargs -0 sed -s -e '$a\' >"$dir/etc/ssl/certs/ca-certificates.crt"
  grep -q 'BEGIN CERTIFICATE' "$dir/etc/ssl/certs/ca-certificates.crt" || die "empty CA bundle"
  mkdir -p "$dir/usr/share"
  cp -a "$x/tzdata/usr/share/zoneinfo" "$dir/usr/share/zoneinfo"
  cp -a "$x/netbase/etc/." "$dir/etc/"
  mkdir -p "$dir/usr/lib"
  cp "$x/base-files/usr/lib/os-release" "$dir/usr/lib/os-release"
  ln -s ../usr/lib/os-release "$dir/etc/os-release"
  cat >"$dir/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
EOF
  cat >"$dir/etc/group" <<'EOF'
root:x:0:
nobody:x:65534:
tty:x:5:
staff:x:50:
nonroot:x:65532:
EOF
  cat >"$dir/etc/nsswitch.conf" <<'EOF'
passwd:         files
group:          files
shadow:         files
hosts:          files dns
networks:       files
protocols:      files
services:       files
ethers:         files
rpc:            files
EOF
  mkdir -p "$dir/tmp" "$dir/root" "$dir/home/nonroot" "$dir/var/lib"
  chmod 1777 "$dir/tmp"
  chmod 0700 "$dir/root" "$dir/home/nonroot"
  chown 65532:65532 "$dir/home/nonroot"
  rm -rf "$x"
}

make_static() {
  local arch="$1" tag="$2" dir="$work/rootfs-static-$1"
  download_debs "$arch"
  static_rootfs "$arch" "$dir"
  load_image "$dir" "$tag" "$arch" 65532:65532 /home/nonroot null \
    PATH=/usr/local/bin:/usr/bin:/bin SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
  rm -rf "$dir"
}

make_glibc() {
  local arch="$1" tag="$2" dir="$work/rootfs-glibc-$1" x="$work/extract-libc6-$1"
  download_debs "$arch"
  static_rootfs "$arch" "$dir"
  rm -rf "$x"
  dpkg-deb -x "$(deb "$arch" libc6)" "$x"
  mkdir -p "$dir/usr/share/doc/libc6"
  cp "$x/usr/share/doc/libc6/copyright" "$dir/usr/share/doc/libc6/copyright"
  rm -rf "$x/usr/share/doc" "$x/usr/share/lintian"
  cp -a "$x/." "$dir/"
  rm -rf "$x"
  # For ldconfig (the NVIDIA container toolkit runs it on the container's
  # root after mounting the driver's libraries).
  echo 'include /etc/ld.so.conf.d/*.conf' >"$dir/etc/ld.so.conf"
  local interp
  case "$arch" in amd64) interp=lib64/ld-linux-x86-64.so.2 ;; arm64) interp=lib/ld-linux-aarch64.so.1 ;; esac
  [[ -e "$dir/$interp" ]] || die "libc6 ($arch) has no /$interp"
  load_image "$dir" "$tag" "$arch" 0:0 / null \
    PATH=/usr/local/bin:/usr/bin:/bin SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
  rm -rf "$dir"
}

# The cache keys: every input of a base. The code that makes it (the
# functions above, as bash prints them: comments do not count), the mirror
# and suite; for the builder also the Go toolchain and the host's CA bundle.
# The runtime bases depend on neither.
runtime_key="$( { declare -f tar_rootfs json load_image download_debs deb static_rootfs make_static make_glibc
  echo "$mirror $suite"; } | sha256sum | cut -c1-12)"
builder_key="$( { declare -f tar_rootfs json load_image cross_pkgs make_builder
  echo "$mirror $suite $goversion $host_arch"; sha256sum <"$host_ca"; } | sha256sum | cut -c1-12)"
builder_tag="gpuheal-local/builder:${goversion}-${suite}-${builder_key}"

mkdir -p "$work"
if have "$builder_tag"; then
  log "builder $builder_tag present"
else
  make_builder
fi
"$docker" image ls --format '{{.Repository}}:{{.Tag}}' | grep '^gpuheal-local/builder:' |
  grep -vxF "$builder_tag" | xargs -r "$docker" rmi >/dev/null || true
for a in "${arches[@]}"; do
  static_tag="gpuheal-local/base-static:${runtime_key}-$a"
  glibc_tag="gpuheal-local/base-glibc:${runtime_key}-$a"
  have "$static_tag" && log "static base $static_tag present" || make_static "$a" "$static_tag"
  have "$glibc_tag" && log "glibc base $glibc_tag present" || make_glibc "$a" "$glibc_tag"
  # Bases made under an older key are of no further use: untag them (an
  # image built on one keeps its layers).
  "$docker" image ls --format '{{.Repository}}:{{.Tag}}' |
    grep -E "^gpuheal-local/base-(static|glibc):[0-9a-f]{12}-$a\$" |
    grep -vxF -e "$static_tag" -e "$glibc_tag" | xargs -r "$docker" rmi >/dev/null || true
  cat >"$work/$a.env" <<EOF
BUILDER_IMAGE=$builder_tag
RUNTIME_IMAGE=$glibc_tag
STATIC_IMAGE=$static_tag
EOF
  echo "$work/$a.env"
done
