#!/usr/bin/env bash
# Builds the default sandbox image locally from Debian packages: no container registry is
# reachable, so the image is a debootstrap rootfs imported into the engine.
#
#   sandbox/image/build.sh [IMAGE]        IMAGE defaults to outrun-sandbox:latest
#
# Cached by tag and recipe: does nothing when IMAGE exists and was built by this version of the
# script (label outrun.image.recipe); an image of an older recipe is rebuilt under the same tag.
# Environment: OUTRUN_DEBIAN_MIRROR (default http://deb.debian.org/debian, the mirror apt uses here),
#              OUTRUN_DEBIAN_SUITE (default bookworm). Needs root, docker and debootstrap.
set -euo pipefail

IMAGE="${1:-outrun-sandbox:latest}"
MIRROR="${OUTRUN_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
SUITE="${OUTRUN_DEBIAN_SUITE:-bookworm}"
# The unprivileged user every container runs as (DockerSandbox uses --user 10001:10001).
SANDBOX_UID=10001
# Bump when the image's content changes, so that cached images of older recipes are rebuilt.
RECIPE=3
# What commands find in the default image: a toolchain for the builds, test suites and data
# sweeps Outrun exists to run (issue 27). --no-install-recommends keeps it to these and their
# dependencies. OUTRUN_IMAGE_VARIANT=slim builds the old minimal image (bash, coreutils, python3).
TOOLCHAIN="git make gcc g++ libc6-dev python3 python3-pip python3-venv nodejs npm curl jq zip unzip tar"
TOOLCHAIN="$TOOLCHAIN xz-utils gzip bzip2 procps ca-certificates less file patch diffutils findutils sed gawk grep socat"
VARIANT="${OUTRUN_IMAGE_VARIANT:-full}"
case "$VARIANT" in
  full) ;;
  slim) TOOLCHAIN=""; RECIPE="$RECIPE-slim" ;;
  *) printf 'OUTRUN_IMAGE_VARIANT must be full or slim, not %s\n' "$VARIANT" >&2; exit 2 ;;
esac

log() { printf '== sandbox image: %s\n' "$*" >&2; }

if docker image inspect "$IMAGE" >/dev/null 2>&1; then
  have="$(docker image inspect -f '{{index .Config.Labels "outrun.image.recipe"}}' "$IMAGE" 2>/dev/null || true)"
  if [ "$have" = "$RECIPE" ]; then
    log "$IMAGE (recipe $RECIPE) already exists; nothing to do"
    exit 0
  fi
  log "$IMAGE exists from recipe '${have:-1}'; rebuilding with recipe $RECIPE"
  OLD_ID="$(docker image inspect -f '{{.Id}}' "$IMAGE")"
fi
command -v debootstrap >/dev/null 2>&1 || { log "debootstrap is missing (apt-get install debootstrap)"; exit 1; }

WORK="$(mktemp -d /tmp/outrun-image.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
ROOTFS="$WORK/rootfs"

STARTED=$(date +%s)
log "debootstrap $SUITE from $MIRROR into $ROOTFS (about a minute)"
debootstrap --variant=minbase --include=bash,coreutils,procps,python3 \
  "$SUITE" "$ROOTFS" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 \
  || { tail -n 40 "$WORK/debootstrap.log" >&2; log "debootstrap failed"; exit 1; }

if [ -n "$TOOLCHAIN" ]; then
  # apt inside the new root resolves the toolchain's dependencies as a Debian system would;
  # /proc is mounted for the packages' scripts and unmounted whatever happens.
  log "installing the toolchain with apt in the rootfs (a few minutes): $TOOLCHAIN"
  echo "deb $MIRROR $SUITE main" >"$ROOTFS/etc/apt/sources.list"
  mount -t proc proc "$ROOTFS/proc"
  trap 'umount "$ROOTFS/proc" 2>/dev/null || true; rm -rf "$WORK"' EXIT
  # shellcheck disable=SC2086 # the package list is meant to split
  if ! chroot "$ROOTFS" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
      bash -c "apt-get update && apt-get install -y --no-install-recommends $TOOLCHAIN && apt-get clean" \
      >"$WORK/apt.log" 2>&1; then
    tail -n 40 "$WORK/apt.log" >&2
    log "apt-get install in the rootfs failed"
    exit 1
  fi
  umount "$ROOTFS/proc"
fi

log "adding user outrun ($SANDBOX_UID:$SANDBOX_UID) and trimming caches"
# Written directly rather than with useradd: no chroot tooling needed, and the ids are fixed.
echo "outrun:x:$SANDBOX_UID:$SANDBOX_UID:outrun sandbox:/work:/bin/bash" >>"$ROOTFS/etc/passwd"
echo "outrun:x:$SANDBOX_UID:" >>"$ROOTFS/etc/group"
echo "outrun:*:19000:0:99999:7:::" >>"$ROOTFS/etc/shadow"
# Mount points of the tmpfs workdir; the engine creates /tmp's itself but keep it sane.
mkdir -p "$ROOTFS/work"
chmod 1777 "$ROOTFS/work" "$ROOTFS/tmp"
# No setuid or setgid programs (su, mount, passwd...): no-new-privileges already makes them
# inert; without the bits there is nothing to make inert.
find "$ROOTFS" -xdev -perm /6000 -type f -exec chmod a-s {} +
rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/* \
  "$ROOTFS"/usr/share/doc/* "$ROOTFS"/usr/share/man/* "$ROOTFS"/usr/share/info/*

log "importing as $IMAGE"
tar -C "$ROOTFS" -c . | docker import \
  --change 'USER 10001:10001' --change 'WORKDIR /work' --change 'CMD ["/bin/bash"]' \
  --change "LABEL outrun.image.recipe=$RECIPE" \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  - "$IMAGE" >/dev/null

# Prove the image is usable the way the sandbox uses it before declaring success.
SMOKE='test "$(id -u)" = 10001 && python3 -c "pass" && ps -p 1 >/dev/null && command -v timeout >/dev/null'
SMOKE="$SMOKE"' && test -x /usr/bin/setpriv && test -z "$(find / -xdev -perm /6000 -type f 2>/dev/null)"'
if [ -n "$TOOLCHAIN" ]; then
  SMOKE="$SMOKE"' && git --version && make --version && gcc --version && g++ --version && python3 -m pip --version'
  SMOKE="$SMOKE"' && python3 -m venv /tmp/v && node --version && npm --version && curl --version && jq --version'
  SMOKE="$SMOKE"' && zip -v >/dev/null && unzip -v >/dev/null'
fi
if ! docker run --rm --network none "$IMAGE" bash -c "$SMOKE" >"$WORK/smoke.log" 2>&1; then
  cat "$WORK/smoke.log" >&2
  docker rmi "$IMAGE" >/dev/null 2>&1 || true
  log "the imported image failed its smoke test; removed"
  exit 1
fi
if [ -n "${OLD_ID:-}" ]; then
  docker rmi "$OLD_ID" >/dev/null 2>&1 || log "the image of the older recipe ($OLD_ID) is still in use; left in place"
fi
log "built $IMAGE ($VARIANT, recipe $RECIPE): $(( $(docker image inspect -f '{{.Size}}' "$IMAGE") / 1048576 )) MiB in $(( $(date +%s) - STARTED )) s"
