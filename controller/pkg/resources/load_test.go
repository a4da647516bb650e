package resources

import (
	"strings"
	"testing"
)

func TestLoadReplacesDuplicates(t *testing.T) {
	r := &Resources{}
	in := `apiVersion: v1
kind: Service
metadata: {name: app, namespace: default}
spec: {ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: app, namespace: other}
---
apiVersion: v1
kind: Service
metadata: {name: app, namespace: default}
spec: {ports: [{port: 8080}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: app, namespace: default}
`
	if _, err := r.Load("test.yaml", strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	if len(r.Services) != 2 || r.Services[0].Spec.Ports[0].Port != 8080 {
		t.Errorf("services %d (first port %v): want the later default/app to replace the earlier, other/app kept", len(r.Services), r.Services[0].Spec.Ports)
	}
	if len(r.ConfigMaps) != 1 || len(r.Replaced) != 1 || !strings.Contains(r.Replaced[0], "Service default/app") {
		t.Errorf("replaced %v, config maps %d", r.Replaced, len(r.ConfigMaps))
	}
}
