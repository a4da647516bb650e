package contourconfig

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	contourv1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Parse reads the Contour configuration objects of a YAML file: each
// ContourConfiguration and ContourDeployment (projectcontour.io/v1alpha1),
// decoded strictly, so that a misspelt or unknown field is an error that
// names it. Other objects are an error too: a file given to convert is
// meant to hold Contour's configuration.
func Parse(file string, data []byte) ([]Source, error) {
	var out []Source
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for n := 1; ; n++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, n, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var generic map[string]any
		if err := yaml.Unmarshal(doc, &generic); err != nil {
			return nil, fmt.Errorf("%s: document %d is not YAML: %w", file, n, err)
		}
		if len(generic) == 0 {
			continue // comments only
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return nil, fmt.Errorf("%s: document %d is not YAML: %w", file, n, err)
		}
		switch {
		case tm.APIVersion == "" && tm.Kind == "":
			// Contour's configuration file, contour.yaml.
			src, err := contourYAMLSource(file, "contour.yaml", doc)
			if err != nil {
				return nil, err
			}
			out = append(out, src)
			continue
		case tm.APIVersion == "v1" && tm.Kind == "ConfigMap":
			// The ConfigMap Contour's install mounts it from.
			var cm corev1.ConfigMap
			if err := yaml.UnmarshalStrict(doc, &cm); err != nil {
				return nil, fmt.Errorf("%s: ConfigMap %s: %w", file, cm.Name, err)
			}
			data, ok := cm.Data["contour.yaml"]
			if !ok {
				return nil, fmt.Errorf("%s: ConfigMap %s has no contour.yaml", file, objectName(cm.ObjectMeta))
			}
			src, err := contourYAMLSource(file, "ConfigMap "+objectName(cm.ObjectMeta)+" contour.yaml", []byte(data))
			if err != nil {
				return nil, err
			}
			out = append(out, src)
			continue
		}
		if tm.APIVersion != contourv1alpha1.GroupVersion.String() {
			return nil, fmt.Errorf("%s: document %d is %s %s; convert reads Contour's ContourConfiguration and ContourDeployment (%s)",
				file, n, tm.APIVersion, tm.Kind, contourv1alpha1.GroupVersion)
		}
		// The settings Contour's release types do not have yet come out
		// before the rest is decoded strictly.
		specPath := []string{"spec"}
		if tm.Kind == "ContourDeployment" {
			specPath = append(specPath, "runtimeSettings")
		}
		var newer map[string]string
		if spec, ok := dig(generic, specPath...); ok {
			if newer, err = takeNewer(spec); err != nil {
				return nil, fmt.Errorf("%s: %s %s: %w", file, tm.Kind, nameOf(generic), err)
			}
			if newer != nil {
				if doc, err = yaml.Marshal(generic); err != nil {
					return nil, fmt.Errorf("%s: document %d: %w", file, n, err)
				}
			}
		}
		switch tm.Kind {
		case "ContourConfiguration":
			var c contourv1alpha1.ContourConfiguration
			if err := yaml.UnmarshalStrict(doc, &c); err != nil {
				return nil, fmt.Errorf("%s: ContourConfiguration %s: %w", file, c.Name, err)
			}
			out = append(out, Source{File: file, Object: "ContourConfiguration " + objectName(c.ObjectMeta), Config: &c.Spec, newer: newer})
		case "ContourDeployment":
			var d contourv1alpha1.ContourDeployment
			if err := yaml.UnmarshalStrict(doc, &d); err != nil {
				return nil, fmt.Errorf("%s: ContourDeployment %s: %w", file, d.Name, err)
			}
			out = append(out, Source{File: file, Object: "ContourDeployment " + objectName(d.ObjectMeta), Config: d.Spec.RuntimeSettings, Deployment: &d.Spec, newer: newer})
		default:
			return nil, fmt.Errorf("%s: document %d is a %s; convert reads Contour's ContourConfiguration and ContourDeployment", file, n, tm.Kind)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no ContourConfiguration or ContourDeployment", file)
	}
	return out, nil
}

// nameOf is a decoded object's namespace/name, for messages.
func nameOf(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	if ns, _ := meta["namespace"].(string); ns != "" {
		return ns + "/" + name
	}
	return name
}

func objectName(m metav1.ObjectMeta) string {
	if m.Namespace == "" {
		return m.Name
	}
	return m.Namespace + "/" + m.Name
}

// contourYAMLSource is a contour.yaml as a Source.
func contourYAMLSource(file, object string, data []byte) (Source, error) {
	spec, notes, err := fromContourYAML(file+": "+object, data)
	if err != nil {
		return Source{}, err
	}
	return Source{File: file, Object: object, Config: spec, notes: notes}, nil
}
