package main

import (
	"bytes"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The bash script completes subcommands, their words, their flags as
// their flag sets define them, and the values of flags that take one of a
// few, run by bash itself.
func TestCompletion(t *testing.T) {
	var script, stderr bytes.Buffer
	if code := run([]string{"completion", "bash"}, &script, &stderr); code != 0 {
		t.Fatalf("completion bash: exit %d: %s", code, stderr.String())
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal("bash is needed to run the completion script:", err)
	}
	for _, tc := range []struct {
		line string // what is typed, the last word being completed
		want []string
	}{
		{"isobar-controller tr", []string{"translate"}},
		{"isobar-controller c", []string{"completion", "convert"}},
		{"isobar-controller convert c", []string{"contour"}},
		{"isobar-controller translate --ty", []string{"--type"}},
		{"isobar-controller translate --type s", []string{"secrets", "status"}},
		{"isobar-controller translate -f x.yaml -o d", []string{"dot"}},
		{"isobar-controller explain --req", []string{"--request"}},
		{"isobar-controller serve --log-level w", []string{"warn"}},
		{"isobar-controller serve --kubec", []string{"--kubeconfig"}},
		{"isobar-controller bootstrap --om", []string{"--om-enforced-health"}},
		{"isobar-controller drain --strategy g", []string{"gradual"}},
		{"isobar-controller completion z", []string{"zsh"}},
	} {
		words := strings.Fields(tc.line)
		if strings.HasSuffix(tc.line, " ") {
			words = append(words, "")
		}
		var quoted []string
		for _, w := range words {
			quoted = append(quoted, "'"+w+"'")
		}
		prog := script.String() + "\nCOMP_WORDS=(" + strings.Join(quoted, " ") + "); COMP_CWORD=" + strconv.Itoa(len(words)-1) +
			"\n_isobar_controller\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
		out, err := exec.Command(bash, "-c", prog).CombinedOutput()
		if err != nil {
			t.Fatalf("%q: %v\n%s", tc.line, err, out)
		}
		got := strings.Fields(string(out))
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q completes to %q, want %q", tc.line, got, tc.want)
		}
	}
	var zsh bytes.Buffer
	if code := run([]string{"completion", "zsh"}, &zsh, &stderr); code != 0 || !strings.HasPrefix(zsh.String(), "autoload -U +X bashcompinit") {
		t.Errorf("completion zsh: exit %d, script starting %.40q", code, zsh.String())
	}
	if code := run([]string{"completion", "fish"}, &zsh, &stderr); code != 2 {
		t.Errorf("completion fish: exit %d, want 2", code)
	}
}
