package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRuntimeSettings(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, json, err string
		check           func(t *testing.T, o Options, idle time.Duration, hops uint32)
	}{
		{name: "no file: defaults", check: func(t *testing.T, o Options, idle time.Duration, hops uint32) {
			if idle != 60*time.Second || o.UpdateDelay != 100*time.Millisecond || o.MaxUpdateDelay != time.Second {
				t.Errorf("idle %s, update delay %s, max %s", idle, o.UpdateDelay, o.MaxUpdateDelay)
			}
		}},
		{name: "set", json: `{"xds":{"updateDelay":"250ms","maxUpdateDelay":"3s"},"timeouts":{"connectionIdle":"5m"},"http":{"numTrustedHops":2}}`,
			check: func(t *testing.T, o Options, idle time.Duration, hops uint32) {
				if idle != 5*time.Minute || hops != 2 || o.UpdateDelay != 250*time.Millisecond || o.MaxUpdateDelay != 3*time.Second {
					t.Errorf("idle %s, hops %d, update delay %s, max %s", idle, hops, o.UpdateDelay, o.MaxUpdateDelay)
				}
			}},
		{name: "bad access log", json: `{"accessLog":{"format":"Text","textFormat":"100%"}}`, err: "textFormat"},
		{name: "unknown field", json: `{"xds":{"updateDelay":"1s"},"surprise":true}`, err: `unknown field "surprise"`},
		{name: "negative hops", json: `{"http":{"numTrustedHops":-1}}`, err: "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions()
			if tc.json != "" {
				o.RuntimeSettingsFile = filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".json")
				if err := os.WriteFile(o.RuntimeSettingsFile, []byte(tc.json), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			s, err := o.runtimeSettings()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, o, s.ConnectionIdleTimeout, s.NumTrustedHops)
		})
	}
}
