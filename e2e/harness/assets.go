package harness

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// RepoRoot is the directory of the workspace's go.work, found through the go
// command so that tests work from any package directory.
func RepoRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOWORK").Output()
	if err != nil {
		var stderr []byte
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = ee.Stderr
		}
		return "", fmt.Errorf("go env GOWORK: %w: %s", err, bytes.TrimSpace(stderr))
	}
	work := strings.TrimSpace(string(out))
	if work == "" || work == "off" {
		return "", fmt.Errorf("not in the Isobar workspace (go env GOWORK is %q)", work)
	}
	return filepath.Dir(work), nil
}

// BinaryAssets returns the directory holding kube-apiserver, etcd and
// kube-controller-manager: $KUBEBUILDER_ASSETS when it is set (make test sets
// it), else what hack/envtest/build.sh builds or finds in its cache.
func BinaryAssets() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("bash", filepath.Join(root, "hack", "envtest", "build.sh"))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("hack/envtest/build.sh: %w: %s", err, stderr.String())
	}
	return strings.TrimSpace(stdout.String()), nil
}

// GatewayAPICRDs is the directory of the Gateway API CRDs of a release
// channel ("standard" or "experimental") shipped in the gateway-api module
// this workspace requires, so the CRDs always match the Go types.
func GatewayAPICRDs(channel string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/gateway-api")
	cmd.Dir = filepath.Join(root, "e2e")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locating the gateway-api module: %w", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "config", "crd", channel)
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("gateway-api CRDs for channel %q: %w", channel, err)
	}
	return dir, nil
}
