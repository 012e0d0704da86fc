#!/usr/bin/env bash
# Builds packaging/Containerfile.local's image, the runtime image of packaging/Dockerfile,
# from a zkd built here: no image registry is needed.
#
#   packaging/build-local.sh [IMAGE]        (default localhost/zkd:local)
#
# CONTAINER_ENGINE picks podman (the default) or docker.
set -euo pipefail
image="${1:-localhost/zkd:local}"
engine="${CONTAINER_ENGINE:-podman}"
repo="$(cd "$(dirname "$0")/.." && pwd)"
ctx="$(mktemp -d)"
trap 'rm -rf "$ctx"' EXIT
(cd "$repo" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$ctx/zkd" ./cmd/zkd)
mkdir "$ctx/conf" "$ctx/data" "$ctx/datalog" "$ctx/tmp"
chmod 0755 "$ctx/conf" "$ctx/data" "$ctx/datalog"
chmod 1777 "$ctx/tmp"
cp "$repo/packaging/Containerfile.local" "$ctx/Containerfile"
"$engine" build -q -f "$ctx/Containerfile" -t "$image" "$ctx"
