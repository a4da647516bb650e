package harness

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// IsobarCRDs builds config/crd with kustomize, as `kubectl apply -k` would,
// so the tests install exactly what users install.
func IsobarCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	return Kustomize(filepath.Join(root, "config", "crd"))
}

// Kustomize builds a kustomization directory and returns its CRDs.
func Kustomize(dir string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	objs, err := KustomizeObjects(dir)
	if err != nil {
		return nil, err
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, crd); err != nil {
			return nil, fmt.Errorf("decoding CRD %s: %w", o.GetName(), err)
		}
		crds = append(crds, crd)
	}
	return crds, nil
}

// KustomizeObjects builds a kustomization directory, as `kubectl apply -k`
// would, and returns its objects in order.
func KustomizeObjects(dir string) ([]*unstructured.Unstructured, error) {
	resources, err := krusty.MakeKustomizer(kustomizeOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range resources.Resources() {
		m, err := r.Map()
		if err != nil {
			return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	return objs, nil
}

// ReadCRDs reads every CRD in the YAML files of dir, skipping other kinds
// (the Gateway API ships a ValidatingAdmissionPolicy beside its CRDs).
func ReadCRDs(dir string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		got, err := decodeCRDs(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		crds = append(crds, got...)
	}
	return crds, nil
}

func decodeCRDs(data []byte) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return crds, nil
		}
		if err != nil {
			return nil, err
		}
		if !strings.Contains(string(doc), "kind: CustomResourceDefinition") {
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(doc, crd); err != nil {
			return nil, fmt.Errorf("decoding CRD: %w", err)
		}
		if crd.Kind != "CustomResourceDefinition" {
			continue
		}
		crds = append(crds, crd)
	}
}

// kustomizeOptions leave the resource order to each kustomization's
// sortOptions (config/default asks for kubectl's order).
func kustomizeOptions() *krusty.Options {
	o := krusty.MakeDefaultOptions()
	o.Reorder = krusty.ReorderOptionUnspecified
	return o
}
