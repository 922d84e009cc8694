#!/usr/bin/env bash
# Container start-to-exit overhead of DockerSandbox against `docker run --rm` of the same image
# and command (`true`), measured in one run. Needs dockerd and the image (sandbox/image/build.sh).
#   bench/docker-overhead/run.sh [RUNS] [IMAGE]      RUNS defaults to 20
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS="${1:-20}"
IMAGE="${2:-outrun-sandbox:latest}"
CP_FILE="$(mktemp /tmp/outrun-bench-cp.XXXXXX)"
trap 'rm -f "$CP_FILE"' EXIT
./mvnw -q -pl sandbox compile dependency:build-classpath -Dmdep.includeScope=runtime -Dmdep.outputFile="$CP_FILE"
java -Dlogback.configurationFile=bench/docker-overhead/logback.xml -cp "sandbox/target/classes:$(cat "$CP_FILE")" bench/docker-overhead/DockerOverhead.java "$RUNS" "$IMAGE"
