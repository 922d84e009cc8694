#!/usr/bin/env bash
# Builds a Java 17 runtime base image locally from Debian packages, for machines that cannot pull
# public images (CI here): a debootstrap rootfs with openjdk-17-jre-headless, imported into the
# engine. deploy/Dockerfile takes it as its BASE build argument instead of eclipse-temurin:17-jre.
#
#   deploy/base/build.sh [IMAGE]        IMAGE defaults to outrun-jre-base:bookworm
#
# Cached by tag and recipe: does nothing when IMAGE exists and was built by this version of the
# script (label outrun.base.recipe). Environment: OUTRUN_DEBIAN_MIRROR (default
# http://deb.debian.org/debian), OUTRUN_DEBIAN_SUITE (default bookworm). Needs root, docker and
# debootstrap.
set -euo pipefail

IMAGE="${1:-outrun-jre-base:bookworm}"
MIRROR="${OUTRUN_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
SUITE="${OUTRUN_DEBIAN_SUITE:-bookworm}"
# Bump when the image's content changes, so that cached images of older recipes are rebuilt.
RECIPE=1

log() { printf '== base image: %s\n' "$*" >&2; }

if docker image inspect "$IMAGE" >/dev/null 2>&1; then
  have="$(docker image inspect -f '{{index .Config.Labels "outrun.base.recipe"}}' "$IMAGE" 2>/dev/null || true)"
  if [ "$have" = "$RECIPE" ]; then
    log "$IMAGE (recipe $RECIPE) already exists; nothing to do"
    exit 0
  fi
  log "$IMAGE exists from recipe '${have:-?}'; rebuilding with recipe $RECIPE"
fi
command -v debootstrap >/dev/null 2>&1 || { log "debootstrap is missing (apt-get install debootstrap)"; exit 1; }

WORK="$(mktemp -d /tmp/outrun-base.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
ROOTFS="$WORK/rootfs"

log "debootstrap $SUITE with openjdk-17-jre-headless from $MIRROR (a few minutes)"
# ca-certificates: JDBC over TLS and HTTPS calls; the JRE's own cacerts come from it on Debian.
debootstrap --variant=minbase --include=openjdk-17-jre-headless,ca-certificates \
  "$SUITE" "$ROOTFS" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 \
  || { tail -n 40 "$WORK/debootstrap.log" >&2; log "debootstrap failed"; exit 1; }

rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/* \
  "$ROOTFS"/usr/share/doc/* "$ROOTFS"/usr/share/man/* "$ROOTFS"/usr/share/info/*

log "importing as $IMAGE"
tar -C "$ROOTFS" -c . | docker import \
  --change 'CMD ["/bin/bash"]' \
  --change "LABEL outrun.base.recipe=$RECIPE" \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  - "$IMAGE" >/dev/null

if ! docker run --rm --network none "$IMAGE" java -version >/dev/null 2>&1; then
  docker rmi "$IMAGE" >/dev/null 2>&1 || true
  log "the imported image has no working java; removed"
  exit 1
fi
log "built $IMAGE ($(docker image inspect -f '{{.Size}}' "$IMAGE") bytes)"
