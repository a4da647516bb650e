package kubeconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const file = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://%s:6443"}
users:
- name: u
  user: {token: t}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`

func write(t *testing.T, host string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(p, []byte(strings.Replace(file, "%s", host, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// --kubeconfig wins over $KUBECONFIG, which wins over ~/.kube/config;
// with none of them, outside a Pod, the error is one line that says what
// to set.
func TestLoad(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	t.Setenv("KUBECONFIG", "")

	if _, err := Load(""); err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "--kubeconfig") {
		t.Errorf("nothing configured: %v, want one line naming --kubeconfig", err)
	}
	if err := os.MkdirAll(filepath.Join(home, ".kube"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(write(t, "home.example"), filepath.Join(home, ".kube", "config")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		env, flag, want string
	}{
		{want: "https://home.example:6443"},
		{env: write(t, "env.example"), want: "https://env.example:6443"},
		{env: write(t, "env.example"), flag: write(t, "flag.example"), want: "https://flag.example:6443"},
	} {
		t.Setenv("KUBECONFIG", tc.env)
		cfg, err := Load(tc.flag)
		if err != nil || cfg.Host != tc.want {
			t.Errorf("KUBECONFIG %q, --kubeconfig %q: %v %v, want %s", tc.env, tc.flag, cfg, err, tc.want)
		}
		if err == nil && cfg.QPS >= 0 {
			t.Errorf("QPS %v: client-side rate limiting is on, want it off (the API server's fairness limits us)", cfg.QPS)
		}
	}
	if _, err := Load(filepath.Join(home, "missing")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("a --kubeconfig that does not exist: %v, want an error naming it", err)
	}
}
