package harness

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// inUserNamespaceEnv marks the test binary Main runs again.
const inUserNamespaceEnv = "ISOBAR_IN_USER_NAMESPACE"

// NoUserNamespace, set in the environment, keeps Main from running the
// tests in a user namespace: to show what an ordinary user meets without
// one.
const NoUserNamespace = "ISOBAR_NO_USER_NAMESPACE"

// Main runs the tests of a package whose Pods have network namespaces of
// their own (NewNetns, ProcessOptions.Netns). As root it runs them as they
// are. As any other user it runs the test binary again in a user
// namespace of its own, mapping the user to root there (the kernel's
// unprivileged user namespaces), and in a network namespace of that user
// namespace: creating and entering the Pods' network namespaces, and
// returning to the tests' own, then needs no privilege on the host. The
// tests reach only what runs on their loopback interface, as they do
// anyway (the API server, etcd, the Pods); every file they write is
// still the user's. It returns the exit code.
func Main(run func() int) int {
	if os.Getenv(inUserNamespaceEnv) != "" {
		// The network namespace made with the user namespace starts with
		// its loopback interface down.
		if err := loopbackUp(); err != nil {
			fmt.Fprintln(os.Stderr, "setting up the tests' network namespace:", err)
			return 1
		}
		return run()
	}
	if os.Geteuid() == 0 || os.Getenv(NoUserNamespace) != "" {
		return run()
	}
	code, err := inUserNamespace()
	if err != nil {
		fmt.Fprintln(os.Stderr, "running the tests in a user namespace of their own (Pods need network namespaces):", err)
		return 1
	}
	return code
}

// inUserNamespace runs this binary again, with the same arguments, as root
// of a new user namespace, and returns its exit code.
func inUserNamespace() (int, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(self, os.Args[1:]...)
	cmd.Env = append(os.Environ(), inUserNamespaceEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		// The tests end with this process, even when it is killed.
		Pdeathsig: syscall.SIGKILL,
	}
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), nil
	}
	if err != nil {
		return 0, fmt.Errorf("%w (are unprivileged user namespaces off? see /proc/sys/user/max_user_namespaces)", err)
	}
	return 0, nil
}
