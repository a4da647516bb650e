package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// WriteDeploy writes into dir a kustomization of config/default that runs
// the images opts names: the operator's, and the controller image the
// operator deploys for each Gateway (its --controller-image argument).
func WriteDeploy(root, dir string, opts Options) error {
	data, err := os.ReadFile(filepath.Join(root, "config", "operator", "deployment.yaml"))
	if err != nil {
		return err
	}
	var d appsv1.Deployment
	if err := yaml.Unmarshal(data, &d); err != nil {
		return fmt.Errorf("config/operator/deployment.yaml: %w", err)
	}
	arg := -1
	for i, a := range d.Spec.Template.Spec.Containers[0].Args {
		if strings.HasPrefix(a, "--controller-image=") {
			arg = i
		}
	}
	if arg < 0 {
		return fmt.Errorf("config/operator/deployment.yaml: the operator has no --controller-image argument")
	}
	image := d.Spec.Template.Spec.Containers[0].Image
	repo, _, _ := strings.Cut(image, ":")
	base, err := filepath.Rel(dir, filepath.Join(root, "config", "default"))
	if err != nil {
		return err
	}
	k := fmt.Sprintf(`# Written by make deploy: config/default with the images of %[1]s at %[2]s.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- %[3]s
images:
- name: %[4]s
  newName: %[1]s/isobar-operator
  newTag: %[2]s
patches:
- target:
    group: apps
    version: v1
    kind: Deployment
    name: %[5]s
  patch: |-
    - op: replace
      path: /spec/template/spec/containers/0/args/%[6]d
      value: --controller-image=%[1]s/isobar-controller:%[2]s
`, opts.Prefix, opts.Version, filepath.ToSlash(base), repo, d.Name, arg)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644)
}
