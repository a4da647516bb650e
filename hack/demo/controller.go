package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"isobar.dev/e2e/harness"
)

// runController runs isobar-controller with the command, arguments and
// environment of the controller Deployment's pod template, its Secret and
// ConfigMap volumes written to files. Two changes only, as there is no pod:
// mount paths point at those files, and listen addresses at loopback.
func (d *demo) runController(ctx context.Context) error {
	dep := &appsv1.Deployment{}
	key := types.NamespacedName{Namespace: sampleGateway.Namespace, Name: d.names.Controller}
	if err := d.env.Client.Get(ctx, key, dep); err != nil {
		return err
	}
	pod := dep.Spec.Template.Spec
	c := pod.Containers[0]
	mounts := map[string]string{} // mount path -> local directory
	for _, m := range c.VolumeMounts {
		dir := filepath.Join(d.env.Dir, "controller-volumes", m.Name)
		if err := d.writeVolume(ctx, pod.Volumes, m.Name, dir); err != nil {
			return err
		}
		mounts[m.MountPath] = dir
	}
	var args []string
	health := ""
	for _, a := range c.Args {
		for from, to := range mounts {
			a = strings.ReplaceAll(a, from, to)
		}
		if name, addr, ok := strings.Cut(a, "=:"); ok {
			a = name + "=127.0.0.1:" + addr
			switch name {
			case "--health-address":
				health = "127.0.0.1:" + addr
			case "--xds-address":
				d.xdsAddress = "127.0.0.1:" + addr
			}
		}
		args = append(args, a)
	}
	env := []string{"KUBECONFIG=" + d.kubeconfig}
	for _, e := range c.Env {
		v := e.Value
		if f := e.ValueFrom; f != nil && f.FieldRef != nil {
			switch f.FieldRef.FieldPath {
			case "metadata.name":
				v = dep.Name + "-demo"
			case "metadata.namespace":
				v = dep.Namespace
			}
		}
		env = append(env, e.Name+"="+v)
	}
	bin, err := d.env.Binaries()
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "    image %s, run as %s/isobar-controller %s\n", c.Image, bin, strings.Join(args, " "))
	if d.controller, err = harness.StartProcessEnv(d.env.Dir, env, bin+"/isobar-controller", args...); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "    isobar-controller logs: %s\n", d.controller.Log)
	return poll(ctx, func() (bool, error) {
		if exited, err := d.controller.Exited(); exited {
			return false, fmt.Errorf("isobar-controller exited (%v); see %s", err, d.controller.Log)
		}
		resp, err := http.Get("http://" + health + "/readyz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// writeVolume writes a Secret or ConfigMap volume's keys as files, as the
// kubelet would.
func (d *demo) writeVolume(ctx context.Context, volumes []corev1.Volume, name, dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, v := range volumes {
		if v.Name != name {
			continue
		}
		data := map[string][]byte{}
		switch {
		case v.Secret != nil:
			s := &corev1.Secret{}
			if err := d.env.Client.Get(ctx, types.NamespacedName{Namespace: sampleGateway.Namespace, Name: v.Secret.SecretName}, s); err != nil {
				return err
			}
			data = s.Data
		case v.ConfigMap != nil:
			cm := &corev1.ConfigMap{}
			if err := d.env.Client.Get(ctx, types.NamespacedName{Namespace: sampleGateway.Namespace, Name: v.ConfigMap.Name}, cm); err != nil {
				return err
			}
			for k, val := range cm.Data {
				data[k] = []byte(val)
			}
		default:
			return fmt.Errorf("volume %s: only Secret and ConfigMap volumes can be played here", name)
		}
		for k, val := range data {
			if err := os.WriteFile(filepath.Join(dir, k), val, 0o600); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("no volume %s", name)
}
