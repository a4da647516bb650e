#!/usr/bin/env bash
# Builds the control-plane binaries the tests run (kube-apiserver,
# kube-controller-manager, etcd) and kubectl, which the tests of the install
# documents run as a user would, from the Go modules pinned beside this script,
# into a cache outside the repository, and prints the directory that holds them.
#
# Idempotent: the cache directory is keyed by the pinned versions, and a
# directory that holds all three binaries is reused as it is. A build goes to a
# temporary directory that is renamed into place only when it is complete, so an
# interrupted build never leaves a half-filled cache behind.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export GOTOOLCHAIN=local GOWORK=off GOFLAGS=-buildvcs=false CGO_ENABLED=0

version() { # version MODULE_DIR MODULE_PATH
	(cd "$1" && go list -m -f '{{.Version}}' "$2")
}
kube_version=$(version "$here/kube" k8s.io/kubernetes)
etcd_version=$(version "$here/etcd" go.etcd.io/etcd/server/v3)
go_version=$(go env GOVERSION)

cache=${XDG_CACHE_HOME:-$HOME/.cache}/isobar/envtest
dir=$cache/kube-${kube_version}_etcd-${etcd_version}_${go_version}
if [[ -x $dir/kube-apiserver && -x $dir/kube-controller-manager && -x $dir/etcd && -x $dir/kubectl ]]; then
	echo "$dir"
	exit 0
fi

mkdir -p "$cache"
tmp=$(mktemp -d "$cache/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

start=$SECONDS
echo "building envtest binaries (kubernetes $kube_version, etcd $etcd_version) into $dir; this takes a few minutes once" >&2
(cd "$here/etcd" && go build -trimpath -ldflags=-s -o "$tmp/etcd" go.etcd.io/etcd/server/v3)
# The version stamps are what `kubectl version` and discovery report; without
# them the server calls itself v0.0.0.
minor=${kube_version#v1.}; minor=${minor%%.*}
stamp="-s -X k8s.io/component-base/version.gitVersion=$kube_version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
(cd "$here/kube" && go build -trimpath -ldflags="$stamp" -o "$tmp/" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubectl)
echo "built in $((SECONDS - start))s" >&2

rm -rf "$dir"
chmod 755 "$tmp"
mv "$tmp" "$dir"
trap - EXIT
echo "$dir"
