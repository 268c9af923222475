// Command genfamilies writes recordsd's map of root fields to families from
// caddyfile/families.caddy (docs/design.md D62); the generate directive of
// backend/httpapi/entitlement.go runs it:
//
//	go run ../../internal/familyfile/genfamilies -in ../../caddyfile/families.caddy -out families_gen.go
package main

import (
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/civicgate/civicgate/internal/familyfile"
)

func main() {
	in := flag.String("in", "", "the families file (caddyfile/families.caddy)")
	out := flag.String("out", "", "the Go file to write")
	pkg := flag.String("pkg", "httpapi", "the Go package of the written file")
	flag.Parse()
	if err := run(*in, *out, *pkg); err != nil {
		fmt.Fprintln(os.Stderr, "genfamilies:", err)
		os.Exit(1)
	}
}

func run(in, out, pkg string) error {
	if in == "" || out == "" {
		return fmt.Errorf("-in and -out are required")
	}
	src, err := os.ReadFile(in)
	if err != nil {
		return fmt.Errorf("read the families file: %w", err)
	}
	families, err := familyfile.Parse(src)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	code, err := familyfile.GoSource(pkg, sourceName(in), families)
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, code, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	return nil
}

// sourceName is how the generated file names its source: the path given,
// slash-separated, without the leading ../ that only says where go generate ran.
func sourceName(in string) string {
	name := path.Clean(filepath.ToSlash(in))
	for strings.HasPrefix(name, "../") {
		name = strings.TrimPrefix(name, "../")
	}
	return name
}
