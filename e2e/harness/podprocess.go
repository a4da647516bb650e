package harness

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
)

// PodProcess is one container of a Pod played as a process of a binary we
// built.
type PodProcess struct {
	*Process
	// Listen maps each listen flag of the container's arguments
	// ("--xds-address") to the address the process listens on.
	Listen map[string]string
	// Volumes maps the container's volume names to their directories.
	Volumes map[string]string
	// Netns is the process's network namespace, when it has its own.
	Netns *Netns
}

// Loopback is where a process playing a Pod with IP podIP listens: the
// same address in 127.0.0.0/8, which is all loopback on Linux, so that
// every Pod has its own ports as in a cluster. (EndpointSlices refuse
// loopback addresses, so Pods keep ordinary IPs.) A Pod without an IP
// listens on 127.0.0.1.
func Loopback(podIP string) string {
	ip, err := netip.ParseAddr(podIP)
	if err != nil || !ip.Is4() {
		return "127.0.0.1"
	}
	b := ip.As4()
	b[0] = 127
	return netip.AddrFrom4(b).String()
}

// RunPodProcess runs binary (in the Env's built binaries, or at an
// absolute path) with the command
// arguments and environment of one of the Pod's containers (or init
// containers), as a kubelet
// would run its image, with what differs for lack of a container: its
// Secret and ConfigMap volumes are written to files (mount paths in the
// arguments point at them), environment from the Pod's fields is filled
// in, KUBECONFIG stands for the service account, and ":port" listen
// addresses bind to the Pod's Loopback address.
func (e *Env) RunPodProcess(ctx context.Context, kubeconfig string, pod *corev1.Pod, container, binary string) (*PodProcess, error) {
	return e.RunPodProcessWith(ctx, kubeconfig, pod, container, binary, ProcessOptions{})
}

// RunPodProcessWith is RunPodProcess with options: in a network namespace
// of its own (opts.Netns; listen addresses then stay as the container
// has them, and Netns is set), with its output copied to opts.Output.
func (e *Env) RunPodProcessWith(ctx context.Context, kubeconfig string, pod *corev1.Pod, container, binary string, opts ProcessOptions) (*PodProcess, error) {
	var c *corev1.Container
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Name == container {
				c = &list[i]
			}
		}
	}
	if c == nil {
		return nil, fmt.Errorf("pod %s/%s has no container %q", pod.Namespace, pod.Name, container)
	}
	mounts, err := e.Mount(ctx, pod, c)
	if err != nil {
		return nil, err
	}
	volumes := map[string]string{} // volume name -> local directory
	for _, m := range c.VolumeMounts {
		volumes[m.Name] = mounts[m.MountPath]
	}
	root := e.podDir(pod)
	host := Loopback(pod.Status.PodIP)
	listen := map[string]string{}
	args := append([]string(nil), c.Command[min(1, len(c.Command)):]...)
	for _, a := range c.Args {
		a = mounts.Rewrite(a)
		if name, port, ok := strings.Cut(a, "=:"); ok && !opts.Netns {
			a = name + "=" + host + ":" + port
			listen[name] = host + ":" + port
		}
		args = append(args, a)
	}
	if sa := pod.Spec.ServiceAccountName; sa != "" {
		// The process holds exactly what the Pod's ServiceAccount is
		// granted, as in a cluster.
		if kubeconfig, err = Impersonating(kubeconfig, root, pod.Namespace, sa); err != nil {
			return nil, err
		}
	}
	env := []string{"KUBECONFIG=" + kubeconfig}
	for _, v := range c.Env {
		value := v.Value
		if f := v.ValueFrom; f != nil && f.FieldRef != nil {
			switch f.FieldRef.FieldPath {
			case "metadata.name":
				value = pod.Name
			case "metadata.namespace":
				value = pod.Namespace
			case "status.podIP":
				value = pod.Status.PodIP
			default:
				return nil, fmt.Errorf("container %s: env %s: field %s cannot be played here", c.Name, v.Name, f.FieldRef.FieldPath)
			}
		} else if v.ValueFrom != nil {
			return nil, fmt.Errorf("container %s: env %s: only values and Pod fields can be played here", c.Name, v.Name)
		}
		env = append(env, v.Name+"="+mounts.Rewrite(value))
	}
	bin, err := e.Binaries()
	if err != nil {
		return nil, err
	}
	opts.Dir, opts.Env = root, env
	if !filepath.IsAbs(binary) {
		binary = filepath.Join(bin, binary)
	}
	p, err := StartProcessWith(opts, binary, args...)
	if err != nil {
		return nil, err
	}
	pp := &PodProcess{Process: p, Listen: listen, Volumes: volumes}
	if opts.Netns {
		if pp.Netns, err = NetnsOf(p.PID()); err != nil {
			_, _ = p.Stop(time.Second)
			return nil, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
	}
	return pp, nil
}

// Mounts maps a container's mount paths to the local directories that
// stand for them.
type Mounts map[string]string

// Rewrite replaces the mount paths in s (an argument, a file path) with
// their local directories.
func (m Mounts) Rewrite(s string) string {
	for from, to := range m {
		if s == from || strings.HasPrefix(s, from+"/") || strings.Contains(s, "="+from) {
			s = strings.Replace(s, from, to, 1)
		}
	}
	return s
}

// Mount writes the volumes a container of the Pod mounts, as the kubelet
// would, and returns where they are. The Pod's containers share its
// emptyDir volumes, as an init container hands files to the others.
func (e *Env) Mount(ctx context.Context, pod *corev1.Pod, c *corev1.Container) (Mounts, error) {
	root := e.podDir(pod)
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, err
	}
	mounts := Mounts{}
	for _, m := range c.VolumeMounts {
		dir := filepath.Join(root, "volumes", m.Name)
		if err := e.writeVolume(ctx, pod, m.Name, dir); err != nil {
			return nil, err
		}
		mounts[m.MountPath] = dir
	}
	return mounts, nil
}

func (e *Env) podDir(pod *corev1.Pod) string {
	return filepath.Join(e.Dir, "pods", pod.Namespace+"_"+pod.Name+"_"+string(pod.UID))
}

// writeVolume writes a Secret or ConfigMap volume's keys as files, as the
// kubelet would; an emptyDir is the directory itself.
func (e *Env) writeVolume(ctx context.Context, pod *corev1.Pod, name, dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, v := range pod.Spec.Volumes {
		if v.Name != name {
			continue
		}
		data := map[string][]byte{}
		var items []corev1.KeyToPath
		switch {
		case v.EmptyDir != nil:
			return nil
		case v.Secret != nil:
			s := &corev1.Secret{}
			if err := e.Client.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: v.Secret.SecretName}, s); err != nil {
				return volumeError(name, err)
			}
			data, items = s.Data, v.Secret.Items
		case v.ConfigMap != nil:
			cm := &corev1.ConfigMap{}
			if err := e.Client.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: v.ConfigMap.Name}, cm); err != nil {
				return volumeError(name, err)
			}
			for k, val := range cm.Data {
				data[k] = []byte(val)
			}
			items = v.ConfigMap.Items
		default:
			return fmt.Errorf("volume %s: only Secret, ConfigMap and emptyDir volumes can be played here", name)
		}
		// Without items every key is a file; with them, only the keys
		// they list, at their paths.
		paths := map[string]string{}
		for k := range data {
			paths[k] = k
		}
		if len(items) > 0 {
			paths = map[string]string{}
			for _, it := range items {
				if _, ok := data[it.Key]; !ok {
					return fmt.Errorf("volume %s: key %s is not in the object", name, it.Key)
				}
				paths[it.Key] = it.Path
			}
		}
		for k, p := range paths {
			file := filepath.Join(dir, p)
			if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
				return err
			}
			if err := os.WriteFile(file, data[k], 0o600); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("no volume %s", name)
}

// MountPending is a volume whose Secret or ConfigMap does not exist (yet):
// the kubelet keeps such a Pod waiting and mounts it when it appears, so
// the node agent retries it rather than failing it.
type MountPending struct{ err error }

func (m *MountPending) Error() string { return m.err.Error() }
func (m *MountPending) Unwrap() error { return m.err }

func volumeError(name string, err error) error {
	err = fmt.Errorf("volume %s: %w", name, err)
	if apierrors.IsNotFound(err) {
		return &MountPending{err}
	}
	return err
}

// Impersonating writes, in dir, a copy of kubeconfig that acts as the
// ServiceAccount ns/sa (with the groups the API server gives a
// ServiceAccount's token): envtest's API server has no token signer, and
// impersonation is authorized the same way.
func Impersonating(kubeconfig, dir, ns, sa string) (string, error) {
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", kubeconfig, err)
	}
	for _, a := range cfg.AuthInfos {
		a.Impersonate = "system:serviceaccount:" + ns + ":" + sa
		a.ImpersonateGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	out := filepath.Join(dir, "serviceaccount.kubeconfig")
	return out, clientcmd.WriteToFile(*cfg, out)
}
