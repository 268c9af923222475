package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/caddyserver/caddy/v2"
)

// printVersion writes civicgate's own version and commit, then Caddy's and
// Go's (`civicgate version`; Caddy's own version command prints only
// Caddy's). The version is the main module's (a tagged build) or
// "(devel)"; the commit comes from the VCS stamp `go build` embeds in a git
// checkout ("unknown" without one, e.g. a source tree without .git).
func printVersion(w io.Writer) {
	version, commit, when, modified := "(devel)", "unknown", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" {
			version = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	line := "civicgate " + version + " commit " + commit
	if when != "" {
		line += " (" + when + ")"
	}
	if modified {
		line += " with local changes"
	}
	_, full := caddy.Version()
	fmt.Fprintf(w, "%s\ncaddy %s\n%s %s/%s\n", line, full, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// isVersionCommand reports whether args (os.Args[1:]) ask for the version.
func isVersionCommand(args []string) bool {
	return len(args) == 1 && (args[0] == "version" || args[0] == "--version" || args[0] == "-v")
}
