package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"isobar.dev/controller/pkg/offline"
)

// subcommand is a command of isobar-controller as shell completion knows
// it: its flags, from the flag set the command parses with, and the values
// of the flags that take one of a few.
type subcommand struct {
	name string
	// words come before the flags ("contour" of convert contour).
	words  []string
	flags  func(io.Writer) *flag.FlagSet
	values map[string][]string
}

func subcommands() []subcommand {
	return []subcommand{
		{name: "serve", flags: func(w io.Writer) *flag.FlagSet { fs, _ := serveFlags(w); return fs },
			values: map[string][]string{"log-level": {"debug", "info", "warn", "error"}, "log-format": {"json", "console"}}},
		{name: "translate", flags: func(w io.Writer) *flag.FlagSet { fs, _ := translateFlags(w); return fs },
			values: map[string][]string{"type": offline.Types, "o": {"yaml", "json", "dot"}}},
		{name: "explain", flags: func(w io.Writer) *flag.FlagSet { fs, _ := explainFlags(w); return fs },
			values: map[string][]string{"o": {"text", "yaml", "json"}}},
		{name: "convert", words: []string{"contour"}, flags: func(w io.Writer) *flag.FlagSet { fs, _ := convertFlags(w); return fs }},
		{name: "bootstrap", flags: func(w io.Writer) *flag.FlagSet { fs, _ := bootstrapFlags(w); return fs }},
		{name: "drain", flags: func(w io.Writer) *flag.FlagSet { fs, _ := drainFlags(w); return fs },
			values: map[string][]string{"strategy": {"gradual", "immediate"}}},
		{name: "version"},
		{name: "completion", words: []string{"bash", "zsh"}},
	}
}

// completion prints a shell's completion script: subcommands, their
// flags (as their flag sets define them), the values of flags that take
// one of a few, and file names for the others.
func completion(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 || (args[0] != "bash" && args[0] != "zsh") {
		fmt.Fprintln(stderr, "Usage: isobar-controller completion bash|zsh\n\n"+
			"Prints a completion script: source <(isobar-controller completion bash), or put it in a file your shell reads.")
		return 2
	}
	var b strings.Builder
	if args[0] == "zsh" {
		// zsh runs the bash script through its bash completion layer.
		b.WriteString("autoload -U +X bashcompinit && bashcompinit\n")
	}
	cmds := subcommands()
	names := make([]string, 0, len(cmds))
	for _, c := range cmds {
		names = append(names, c.name)
	}
	b.WriteString("_isobar_controller() {\n")
	b.WriteString("  local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n")
	b.WriteString("  COMPREPLY=()\n")
	fmt.Fprintf(&b, "  if [[ $COMP_CWORD -eq 1 ]]; then COMPREPLY=($(compgen -W %q -- \"$cur\")); return; fi\n", strings.Join(names, " "))
	b.WriteString("  case \"${COMP_WORDS[1]}\" in\n")
	for _, c := range cmds {
		fmt.Fprintf(&b, "  %s)\n", c.name)
		if len(c.words) > 0 {
			fmt.Fprintf(&b, "    if [[ $COMP_CWORD -eq 2 ]]; then COMPREPLY=($(compgen -W %q -- \"$cur\")); return; fi\n", strings.Join(c.words, " "))
		}
		if c.flags == nil {
			b.WriteString("    ;;\n")
			continue
		}
		var flags []string
		takesValue := map[string]bool{}
		c.flags(io.Discard).VisitAll(func(f *flag.Flag) {
			name := "--" + f.Name
			if len(f.Name) == 1 {
				name = "-" + f.Name
			}
			flags = append(flags, name)
			if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !bf.IsBoolFlag() {
				takesValue[name] = true
			}
		})
		slices.Sort(flags)
		b.WriteString("    case \"$prev\" in\n")
		for _, name := range flags {
			if vs, ok := c.values[strings.TrimLeft(name, "-")]; ok {
				fmt.Fprintf(&b, "    %s) COMPREPLY=($(compgen -W %q -- \"$cur\")); return;;\n", name, strings.Join(vs, " "))
			} else if takesValue[name] {
				// Any other value: file names (-o default).
				fmt.Fprintf(&b, "    %s) return;;\n", name)
			}
		}
		b.WriteString("    esac\n")
		fmt.Fprintf(&b, "    COMPREPLY=($(compgen -W %q -- \"$cur\"));;\n", strings.Join(flags, " "))
	}
	b.WriteString("  esac\n}\n")
	b.WriteString("complete -o default -F _isobar_controller isobar-controller\n")
	_, _ = io.WriteString(stdout, b.String())
	return 0
}
