package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Tether returns a directory in which each of the named binaries of dir is
// a wrapper that runs the real one with the parent-death signal set to
// SIGKILL (util-linux's setpriv), and every other entry of dir a link to
// it. envtest starts etcd and kube-apiserver itself, without a way to set
// that signal: through the wrappers they die with the test binary, even
// when it is killed or times out, instead of running on and taking the
// machine's two cores. Without setpriv, dir is returned as it is.
func Tether(dir, into string, names ...string) (string, error) {
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		return dir, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(into, 0o755); err != nil {
		return "", err
	}
	wrapped := map[string]bool{}
	for _, n := range names {
		wrapped[n] = true
		script := fmt.Sprintf("#!/bin/sh\nexec %s --pdeathsig KILL -- %s \"$@\"\n", setpriv, filepath.Join(dir, n))
		if err := os.WriteFile(filepath.Join(into, n), []byte(script), 0o755); err != nil {
			return "", err
		}
	}
	for _, e := range entries {
		if !wrapped[e.Name()] {
			if err := os.Symlink(filepath.Join(dir, e.Name()), filepath.Join(into, e.Name())); err != nil {
				return "", err
			}
		}
	}
	return into, nil
}
