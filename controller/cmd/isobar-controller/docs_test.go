package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// placeholder marks a documented command line that is a pattern, not a
// command: a FILE or NS/NAME to fill in (an upper-case word that is not
// an HTTP method), alternatives, optional parts.
var placeholder = regexp.MustCompile(`\b(?:GET|POST|PUT|DELETE|HEAD|PATCH|OPTIONS)\b|\b[A-Z][A-Z-]{2,}\b|\||\[`)

func isPattern(cmd string) bool {
	for _, m := range placeholder.FindAllString(cmd, -1) {
		switch m {
		case "GET", "POST", "PUT", "DELETE", "HEAD", "PATCH", "OPTIONS":
		default:
			return true
		}
	}
	return false
}

// Every isobar-controller command in a code block of the README and the
// install documents that needs no cluster runs as written, from the
// repository's root, and succeeds.
func TestDocumentedCommands(t *testing.T) {
	root := "../../.."
	ran := 0
	for _, doc := range []string{"README.md", "docs/quickstart.md", "docs/install.md"} {
		for _, cmd := range documentedCommands(t, filepath.Join(root, doc)) {
			args := shellWords(t, cmd)
			for i, a := range args {
				if strings.HasPrefix(a, "config/") || strings.HasPrefix(a, "examples/") {
					args[i] = filepath.Join(root, a)
				}
			}
			ran++
			var stdout, stderr bytes.Buffer
			if code := run(args, &stdout, &stderr); code != 0 || stdout.Len() == 0 {
				t.Errorf("%s: isobar-controller %s: exit %d\n%s%s", doc, cmd, code, stdout.String(), stderr.String())
			}
		}
	}
	if ran < 4 {
		t.Errorf("%d documented commands ran; the README and quickstart have at least 4", ran)
	}
}

// documentedCommands are the isobar-controller command lines of path's
// code blocks (continued lines joined), without the program, leaving out
// patterns and commands that need a cluster.
func documentedCommands(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	inBlock, line := false, ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		text := sc.Text()
		if strings.HasPrefix(text, "```") {
			inBlock = !inBlock
			continue
		}
		if !inBlock {
			continue
		}
		line += strings.TrimSpace(text)
		if strings.HasSuffix(line, "\\") {
			line = strings.TrimSuffix(line, "\\") + " "
			continue
		}
		cmd := strings.TrimPrefix(line, "$ ")
		line = ""
		cmd, _, _ = strings.Cut(cmd, " #")
		for _, prog := range []string{"go run ./controller/cmd/isobar-controller ", "isobar-controller "} {
			rest, ok := strings.CutPrefix(cmd, prog)
			if !ok || isPattern(rest) || strings.ContainsAny(rest, "<>") || strings.HasPrefix(rest, "serve") {
				continue
			}
			out = append(out, strings.TrimSpace(rest))
		}
	}
	return out
}
