package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"isobar.dev/controller/pkg/offline"
)

// tryLine is an example file's "Try:" command.
var tryLine = regexp.MustCompile(`(?m)^#\s+isobar-controller (.+)$`)

// Every example translates with nothing refused and nothing left
// unserved, and the command each file suggests runs as written (from the
// repository's root).
func TestExamples(t *testing.T) {
	root := "../../.."
	dirs, err := filepath.Glob(filepath.Join(root, "examples", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, dir := range dirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue // the folder's README
		}
		t.Run(filepath.Base(dir), func(t *testing.T) {
			res, _, err := offline.LoadFiles([]string{dir}, "")
			if err != nil {
				t.Fatal(err)
			}
			r, err := offline.Translate(res, offline.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range r.Notes {
				t.Errorf("note: %s", n)
			}
			st := r.Gateways.Status
			for k, parents := range st.Routes {
				for _, p := range parents {
					for _, c := range p.Conditions {
						if (c.Type == "Accepted" || c.Type == "ResolvedRefs") && c.Status != metav1.ConditionTrue {
							t.Errorf("%s %s/%s: %s %s: %s", k.Kind, k.Namespace, k.Name, c.Type, c.Reason, c.Message)
						}
					}
				}
			}
			for k, p := range st.HTTPProxies {
				if p.Status.CurrentStatus != "valid" {
					t.Errorf("HTTPProxy %s: %s: %s", k, p.Status.CurrentStatus, p.Status.Description)
				}
			}
			for k, i := range st.Ingresses {
				for _, p := range i.Problems {
					t.Errorf("Ingress %s: %s", k, p)
				}
			}
			files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
			tried := 0
			for _, f := range files {
				data, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range tryLine.FindAllStringSubmatch(string(data), -1) {
					args := shellWords(t, m[1])
					for i, a := range args {
						if strings.HasPrefix(a, "examples/") {
							args[i] = filepath.Join(root, a)
						}
					}
					tried++
					var stdout, stderr bytes.Buffer
					if code := run(args, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "route #") {
						t.Errorf("%s: isobar-controller %s: exit %d, no route\n%s%s", f, m[1], code, stdout.String(), stderr.String())
					}
				}
			}
			if tried == 0 {
				t.Error("no file of the example suggests a command to try")
			}
		})
	}
}

// shellWords splits a command line as a shell does, for the single
// quotes the examples use.
func shellWords(t *testing.T, line string) []string {
	var out []string
	for len(line) > 0 {
		line = strings.TrimLeft(line, " ")
		if line == "" {
			break
		}
		if line[0] == '\'' {
			end := strings.IndexByte(line[1:], '\'')
			if end < 0 {
				t.Fatalf("unbalanced quote in %q", line)
			}
			out, line = append(out, line[1:end+1]), line[end+2:]
			continue
		}
		word, rest, _ := strings.Cut(line, " ")
		out, line = append(out, word), rest
	}
	return out
}
