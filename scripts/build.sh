#!/usr/bin/env bash
# Builds one weir binary the way a release does, for $GOOS/$GOARCH (default:
# this machine's):
#
#   scripts/build.sh OUT VERSION
#
# Static (CGO_ENABLED=0: no libc, runs on any Linux, in an image from
# scratch), -trimpath (no build machine paths, so the same source and Go give
# the same bytes), the time zone database embedded (timetzdata: an image
# from scratch has no /usr/share/zoneinfo), symbols stripped, and VERSION
# stamped into internal/cli.Version (weir version prints it). The VCS
# revision and time are stamped by go build itself when the source is a git
# checkout. The release script, the Dockerfile's build stage and CI all
# build through this one script.
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: scripts/build.sh OUT VERSION   (GOOS and GOARCH from the environment)" >&2
  exit 2
fi
out=$1 version=$2
if ! [[ $version =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$ ]] && [ "$version" != dev ]; then
  echo "scripts/build.sh: version $version is not a semantic version tag (vMAJOR.MINOR.PATCH[-PRERELEASE]) or dev" >&2
  exit 2
fi
cd "$(dirname "$0")/.."
CGO_ENABLED=0 go build -trimpath -buildvcs=auto -tags timetzdata \
  -ldflags "-s -w -X github.com/weir-etl/weir/internal/cli.Version=$version" \
  -o "$out" ./cmd/weir
