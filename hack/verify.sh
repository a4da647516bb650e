#!/usr/bin/env bash
# Fails when a generated file is stale, a Go file is unformatted, go vet or
# golangci-lint complains, or a build output is tracked. Generated files are
# regenerated in place, so after a failure the fix is in the working tree.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

fail=0

# The generated files are compared before and after regenerating them, so
# uncommitted edits elsewhere in the tree do not count as staleness.
generated() { { find config/crd/bases config/crd/contour api bundle controller/pkg/resources \( -name '*.yaml' -o -name 'zz_generated*.go' \); echo config/rbac/role.yaml; echo bundle.Dockerfile; echo docs/features.md; echo docs/reference/contourdeployment.md; } | sort; }
snapshot=$(mktemp -d)
trap 'rm -rf "$snapshot"' EXIT
before=$(generated)
while read -r f; do
	mkdir -p "$snapshot/$(dirname "$f")" && cp "$f" "$snapshot/$f"
done <<<"$before"
make --no-print-directory generate manifests bundle docs >/dev/null
after=$(generated)
stale=()
[[ $before == "$after" ]] || stale+=("the set of generated files: before [$before] after [$after]")
while read -r f; do
	cmp -s "$f" "$snapshot/$f" 2>/dev/null || stale+=("$f")
done <<<"$after"
if ((${#stale[@]})); then
	echo "generated files were stale; 'make generate manifests bundle docs' has updated them:" >&2
	printf '  %s\n' "${stale[@]}" >&2
	fail=1
fi

unformatted=$(gofmt -l api operator controller e2e hack)
if [[ -n $unformatted ]]; then
	echo "gofmt would change:" >&2
	echo "$unformatted" >&2
	fail=1
fi

make --no-print-directory vet || fail=1
make --no-print-directory lint || fail=1

# Our modules must not use replace directives (go.work joins them, and
# replaces their v0.0.0 requirements on each other); the envtest wrapper
# modules are the exception, and are not in the workspace.
if grep -l '^replace' api/go.mod operator/go.mod controller/go.mod e2e/go.mod hack/go.mod 2>/dev/null; then
	echo "replace directives found in the modules above" >&2
	fail=1
fi

# Each module's go.mod requires exactly the isobar.dev modules its code
# imports: the operator must not come to depend on the controller unseen.
for m in api operator controller e2e hack; do
	imported=$(grep -rhoE --include='*.go' '"isobar\.dev/(api|operator|controller|e2e|hack)[/"]' "$m" | grep -oE 'isobar\.dev/[a-z0-9]+' | { grep -vx "isobar.dev/$m" || true; } | sort -u)
	required=$({ grep -oE '^(require)?\s*isobar\.dev/[a-z0-9]+ v0\.0\.0' "$m/go.mod" | grep -oE 'isobar\.dev/[a-z0-9]+' || true; } | sort -u)
	if [[ $imported != "$required" ]]; then
		echo "$m/go.mod requires [$(echo $required)] but its code imports [$(echo $imported)]" >&2
		fail=1
	fi
done

# The repository holds sources, not build outputs: no tracked file over
# 1 MiB, and no executable file but a shell script.
while read -r size f; do
	if ((size > 1048576)); then
		echo "$f is tracked and $((size / 1048576)) MiB: build outputs belong in .gitignore" >&2
		fail=1
	fi
done < <(git ls-files -z | xargs -0 stat -c '%s %n' 2>/dev/null)
while read -r mode _ _ f; do
	if [[ $mode == 100755 && $(head -c 2 "$f") != '#!' ]]; then
		echo "$f is tracked as an executable and is not a script" >&2
		fail=1
	fi
done < <(git ls-files -s)
# `go build` in a command's directory leaves a binary named after it:
# every such binary is ignored, so that it cannot be committed.
while read -r dir; do
	if ! git check-ignore -q "$dir/$(basename "$dir")"; then
		echo "$dir/$(basename "$dir") (what go build leaves in that command's directory) is not in .gitignore" >&2
		fail=1
	fi
done < <(grep -rlE --include='*.go' '^package main$' api operator controller e2e hack | xargs -n1 dirname | sort -u)

exit $fail
