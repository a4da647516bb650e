package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"isobar.dev/e2e/harness"
)

// runController runs isobar-controller as the controller Deployment's pod
// template describes it (harness.RunPodProcess: its Secret and ConfigMap
// volumes written to files, listen addresses on a loopback address of its
// own), as one Pod of it would run.
func (d *demo) runController(ctx context.Context) error {
	dep := &appsv1.Deployment{}
	key := types.NamespacedName{Namespace: sampleGateway.Namespace, Name: d.names.Controller}
	if err := d.env.Client.Get(ctx, key, dep); err != nil {
		return err
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: dep.Namespace, Name: dep.Name + "-demo"}, Spec: dep.Spec.Template.Spec}
	// An address of its own, so that the controller's ports (health,
	// xDS, metrics) are free whatever listens on 127.0.0.1.
	ip, release, err := harness.PodAddress()
	if err != nil {
		return err
	}
	d.releaseAddress = release
	pod.Status.PodIP = ip
	c := pod.Spec.Containers[0]
	p, err := d.env.RunPodProcess(ctx, d.kubeconfig, pod, c.Name, "isobar-controller")
	if err != nil {
		return err
	}
	d.controller = p.Process
	d.xdsAddress = p.Listen["--xds-address"]
	health := p.Listen["--health-address"]
	fmt.Fprintf(d.out, "    image %s, run as isobar-controller %s\n", c.Image, strings.Join(c.Args, " "))
	fmt.Fprintf(d.out, "    isobar-controller logs: %s\n", d.controller.Log)
	return poll(ctx, func() (bool, error) {
		if exited, err := d.controller.Exited(); exited {
			return false, fmt.Errorf("isobar-controller exited (%w); see %s", err, d.controller.Log)
		}
		// Bounded: something else on the address may take the connection
		// and never answer.
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+health+"/readyz", nil)
		if err != nil {
			return false, err
		}
		resp, err := readyzClient.Do(req)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// readyzClient asks the controller whether it is ready, giving up on an
// answer that does not come.
var readyzClient = &http.Client{Timeout: 2 * time.Second}
