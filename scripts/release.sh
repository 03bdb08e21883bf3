#!/usr/bin/env bash
# Builds a release of weir into DIST (default dist/):
#
#   scripts/release.sh [VERSION] [DIST]
#
# VERSION defaults to the tag on HEAD (git describe --exact-match): a
# release is cut from a tag vMAJOR.MINOR.PATCH (CHANGELOG.md says what each
# number promises). For each of linux/amd64, linux/arm64 and darwin/arm64:
# a static binary (scripts/build.sh) in weir_VERSION_OS_ARCH.tar.gz with
# LICENSE, NOTICE, THIRD_PARTY_LICENSES, README.md and CHANGELOG.md, and a
# CycloneDX SBOM of the binary (weir_VERSION_OS_ARCH.cdx.json, from the
# module versions the binary records). SHA256SUMS lists every file.
#
# Needs cyclonedx-gomod on PATH (go install
# github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@v1.10.0).
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:-$(git describe --tags --exact-match HEAD 2>/dev/null || true)}
if [ -z "$version" ]; then
  echo "scripts/release.sh: HEAD has no tag; tag it (git tag v0.1.0) or name the version" >&2
  exit 2
fi
dist=${2:-dist}
targets=${WEIR_RELEASE_TARGETS:-"linux/amd64 linux/arm64 darwin/arm64"}
command -v cyclonedx-gomod >/dev/null || { echo "scripts/release.sh: cyclonedx-gomod is not on PATH (go install github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@v1.10.0)" >&2; exit 1; }

rm -rf "$dist"
mkdir -p "$dist"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The licences of every module in the binary, checked against the policy
# (internal/licenses) on the way: a release never carries a refused one.
go test -count=1 -run '^TestDependencyLicences$' ./internal/licenses/ -args -third-party="$work/THIRD_PARTY_LICENSES" >/dev/null

for target in $targets; do
  os=${target%/*} arch=${target#*/}
  name=weir_${version}_${os}_${arch}
  mkdir -p "$work/$name"
  GOOS=$os GOARCH=$arch scripts/build.sh "$work/$name/weir" "$version"
  cp LICENSE NOTICE README.md CHANGELOG.md "$work/THIRD_PARTY_LICENSES" "$work/$name/"
  # Archive members in a fixed order, owner and time, so the same binary
  # gives the same archive.
  tar -C "$work" --sort=name --owner=0 --group=0 --numeric-owner \
    --mtime="@${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}" -cf - "$name" | gzip -n -9 > "$dist/$name.tar.gz"
  cyclonedx-gomod bin -json -licenses=false -version "$version" -output "$dist/$name.cdx.json" "$work/$name/weir" 2>/dev/null
  echo "$dist/$name.tar.gz"
done
(cd "$dist" && sha256sum -- *.tar.gz *.cdx.json > SHA256SUMS)
echo "$dist/SHA256SUMS"
