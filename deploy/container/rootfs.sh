#!/usr/bin/env bash
# The container image's build stage: lays out the root filesystem of weir's
# image in DIR/rootfs, for the run stage (FROM scratch) to copy whole, and
# the state directory's own (empty) tree in DIR/state, which the run stage
# copies to /var/lib/weir owned by weir (a COPY --chown owns what it
# creates; /var/lib itself is in rootfs, so it stays root's):
#
#   deploy/container/rootfs.sh DIR VERSION    (GOOS/GOARCH from the environment)
#
#   /weir                      the static binary (scripts/build.sh)
#   /etc/passwd, /etc/group    the user weir (65532), whose home is the state
#                              directory, so that tools show a name
#   /etc/ssl/certs/ca-certificates.crt
#                              the build machine's CA bundle: Kafka, PostgreSQL
#                              and S3 over TLS verify their servers with it
#   /var/lib/weir              the state volume, owned by weir (from DIR/state)
#   /etc/weir                  where the configuration is mounted
#   /tmp                       for the Go runtime and libraries that want one
#
# The Dockerfile runs it in its Go stage; CI runs it directly and builds the
# run stage with buildah from its output (.ci/release.sh), so both stages of
# the Dockerfile are what CI tests.
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: deploy/container/rootfs.sh DIR VERSION" >&2
  exit 2
fi
dir=$1 version=$2
root=$dir/rootfs
here=$(cd "$(dirname "$0")/../.." && pwd)
ca=${WEIR_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
if [ ! -s "$ca" ]; then
  echo "deploy/container/rootfs.sh: no CA bundle at $ca (install ca-certificates, or set WEIR_CA_BUNDLE)" >&2
  exit 1
fi
rm -rf "$root" "$dir/state"
mkdir -p "$root/etc/ssl/certs" "$root/var/lib" "$root/etc/weir" "$root/tmp" "$dir/state"
"$here/scripts/build.sh" "$root/weir" "$version"
cp "$ca" "$root/etc/ssl/certs/ca-certificates.crt"
printf 'root:x:0:0:root:/root:/sbin/nologin\nweir:x:65532:65532:weir:/var/lib/weir:/sbin/nologin\n' > "$root/etc/passwd"
printf 'root:x:0:\nweir:x:65532:\n' > "$root/etc/group"
chmod 1777 "$root/tmp"
chmod 0755 "$dir/state" "$root/etc/weir"
