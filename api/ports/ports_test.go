package ports

import (
	"strings"
	"testing"
)

func TestContainerPort(t *testing.T) {
	for _, tc := range []struct{ in, want int32 }{
		{1, 64513},
		{80, 64592},
		{443, 64955},
		{1023, 65535},
		{1024, 1024},
		{8443, 8443},
		{65535, 65535},
	} {
		if got := ContainerPort(tc.in); got != tc.want {
			t.Errorf("ContainerPort(%d) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		port    int32
		wantErr string
	}{
		{port: 80},
		{port: 8443},
		{port: 0, wantErr: "outside 1-65535"},
		{port: 65536, wantErr: "outside 1-65535"},
		{port: -1, wantErr: "outside 1-65535"},
		{port: XDS, wantErr: "xDS"},
		{port: EnvoyAdmin, wantErr: "admin"},
		{port: EnvoyStats, wantErr: "stats"},
		{port: EnvoyOverloadHealth, wantErr: "overload-enforced readiness"},
	} {
		err := Validate(tc.port)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("Validate(%d) = %v, want nil", tc.port, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("Validate(%d) = %v, want an error containing %q", tc.port, err, tc.wantErr)
		}
	}
}

func TestMap(t *testing.T) {
	m := Map([]int32{80, 80, 443, 8080, 1, 64513, 8001, 8003, 0})
	wantContainer := map[int32]int32{80: 64592, 443: 64955, 8080: 8080}
	if len(m.Container) != len(wantContainer) {
		t.Errorf("Container = %v, want %v", m.Container, wantContainer)
	}
	for p, c := range wantContainer {
		if m.Container[p] != c {
			t.Errorf("Container[%d] = %d, want %d", p, m.Container[p], c)
		}
	}
	for p, want := range map[int32]string{
		1:     "ports [1 64513] all map to container port 64513",
		64513: "ports [1 64513] all map to container port 64513",
		8001:  "xDS",
		8003:  "metrics",
		0:     "outside",
	} {
		err, ok := m.Refused[p]
		if !ok || !strings.Contains(err.Error(), want) {
			t.Errorf("Refused[%d] = %v, want an error containing %q", p, err, want)
		}
	}
	if len(m.Refused) != 5 {
		t.Errorf("Refused = %v, want 5 entries", m.Refused)
	}
}

// The reserved ports must never be reachable by the privileged mapping
// either, or a listener on a low port could silently shadow them.
func TestReservedPortsAreNotPrivilegedTargets(t *testing.T) {
	for p := range reserved {
		if p > PrivilegedOffset {
			t.Errorf("reserved port %d lies in the privileged mapping's range", p)
		}
	}
}
