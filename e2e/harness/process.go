package harness

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Process is a binary under test, its output captured in a log file.
type Process struct {
	Name string
	Log  string // path of the combined stdout and stderr

	cmd  *exec.Cmd
	done chan struct{}
	err  error // from Wait, once done is closed
}

// StartProcess runs path with args and env appended to this process's
// environment, writing its output to a file in dir.
func StartProcess(dir, path string, args ...string) (*Process, error) {
	return StartProcessEnv(dir, nil, path, args...)
}

// StartProcessEnv is StartProcess with extra environment variables.
func StartProcessEnv(dir string, env []string, path string, args ...string) (*Process, error) {
	return StartProcessWith(ProcessOptions{Dir: dir, Env: env}, path, args...)
}

// ProcessOptions are how StartProcessWith runs a binary.
type ProcessOptions struct {
	// Dir holds the log file.
	Dir string
	// Env is appended to this process's environment.
	Env []string
	// Netns starts the process in a network namespace of its own, as a
	// Pod's container runs (see NetnsOf).
	Netns bool
	// Output, when set, gets the process's output too.
	Output io.Writer
}

// StartProcessWith runs path with args as opts say, writing its output to
// a file in opts.Dir.
func StartProcessWith(opts ProcessOptions, path string, args ...string) (*Process, error) {
	name := filepath.Base(path)
	logFile, err := os.CreateTemp(opts.Dir, name+"-*.log")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), opts.Env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if opts.Output != nil {
		w := io.MultiWriter(logFile, opts.Output)
		cmd.Stdout, cmd.Stderr = w, w
	}
	// Its own process group, so an interrupted test run's signals do not
	// reach it before Stop does; killed when the test binary dies, even by
	// SIGKILL or a test timeout, so that it never outlives the test.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if opts.Netns {
		cmd.SysProcAttr.Cloneflags = syscall.CLONE_NEWNET
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Process{Name: name, Log: logFile.Name(), cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// PID is the process's id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited reports whether the process has ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Done is closed once the process has ended.
func (p *Process) Done() <-chan struct{} { return p.done }

// Stop sends SIGTERM and waits up to timeout for the process to exit, then
// kills it. It returns the exit code; an error means it had to be killed or
// could not be signalled.
func (p *Process) Stop(timeout time.Duration) (int, error) {
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode(), nil
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return -1, fmt.Errorf("signalling %s: %w", p.Name, err)
	}
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode(), nil
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		return -1, fmt.Errorf("%s did not stop within %s of SIGTERM; killed", p.Name, timeout)
	}
}

// Wait waits up to timeout for the process to exit by itself and returns
// its exit code; an error means it did not.
func (p *Process) Wait(timeout time.Duration) (int, error) {
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode(), nil
	case <-time.After(timeout):
		return -1, fmt.Errorf("%s did not exit within %s", p.Name, timeout)
	}
}

// Output is what the process has written so far.
func (p *Process) Output() string {
	data, err := os.ReadFile(p.Log)
	if err != nil {
		return fmt.Sprintf("(reading %s: %v)", p.Log, err)
	}
	return string(data)
}

// Binaries builds isobar-operator, isobar-controller, echo-basic and our
// test servers (authz-server, ratelimit-server, jwks-server,
// otlp-collector) into the Env's scratch directory, once, and returns
// the directory holding them.
func (e *Env) Binaries() (string, error) {
	e.buildOnce.Do(func() {
		root, err := RepoRoot()
		if err != nil {
			e.buildErr = err
			return
		}
		dir := filepath.Join(e.Dir, "bin")
		// echo-basic is the conformance suite's echo server, which its
		// backend Pods run; the others the servers the fleet's tests run
		// as Pods.
		cmd := exec.Command("go", "build", "-o", dir+string(os.PathSeparator),
			"isobar.dev/operator/cmd/isobar-operator", "isobar.dev/controller/cmd/isobar-controller",
			"sigs.k8s.io/gateway-api/conformance/echo-basic", "isobar.dev/e2e/cmd/authz-server", "isobar.dev/e2e/cmd/ratelimit-server",
			"isobar.dev/e2e/cmd/jwks-server", "isobar.dev/e2e/cmd/otlp-collector")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			e.buildErr = fmt.Errorf("building binaries: %w\n%s", err, out)
			return
		}
		e.binDir = dir
	})
	return e.binDir, e.buildErr
}
