package harness

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// nobody is the uid and gid of an ordinary user with no privilege.
const nobody = 65534

// The rig's network namespaces work for an ordinary user: this package's
// Pod network test passes as nobody, run in a user namespace of its own
// (Main), and fails without one, as it did before.
func TestNetnsAsAnOrdinaryUser(t *testing.T) {
	if os.Geteuid() != 0 || os.Getenv(inUserNamespaceEnv) != "" {
		// Root of Main's user namespace is an ordinary user on the host,
		// who cannot become nobody.
		t.Skip("not root on the host: every test of the package already runs as an ordinary user")
	}
	dir, err := os.MkdirTemp("", "isobar-userns-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "harness.test")
	if err := copyFile(self, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(env ...string) (string, error) {
		cmd := exec.Command(bin, "-test.run=^TestNetworkReachesEachPodOnItsPort$", "-test.count=1")
		cmd.Dir = dir
		cmd.Env = append([]string{"HOME=" + dir, "PATH=" + os.Getenv("PATH")}, env...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}, Pdeathsig: syscall.SIGKILL}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run(); err != nil || !strings.Contains(out, "PASS") {
		t.Errorf("as nobody, in a user namespace: %v\n%s", err, out)
	}
	if out, err := run(NoUserNamespace + "=1"); err == nil || !strings.Contains(out, "operation not permitted") {
		t.Errorf("as nobody, without a user namespace: %v, want unshare refused\n%s", err, out)
	}
}

func copyFile(from, to string, mode os.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
