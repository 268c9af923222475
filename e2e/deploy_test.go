package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/internal/stack"
	"github.com/civicgate/civicgate/internal/testenv"

	"gopkg.in/yaml.v3"
)

// TestShippedCaddyfilesValidateAndAreFormatted runs `civicgate validate` and
// `civicgate fmt` on every shipped Caddyfile with the environment it documents.
func TestShippedCaddyfilesValidateAndAreFormatted(t *testing.T) {
	s := stack.New(t, &bins)
	s.Setenv("CIVICGATE_DOMAIN", "api.example.org")
	s.Setenv("CIVICGATE_ACME_EMAIL", "ops@example.org")
	s.Setenv("CIVIC_WEBHOOK_SECRET_KEY", testenv.RandomSuffix(32))
	files, err := filepath.Glob(filepath.Join(s.Root, "caddyfile", "*"))
	if err != nil || len(files) < 4 {
		t.Fatalf("shipped Caddyfiles: %v %v", files, err)
	}
	for _, f := range files {
		rel, _ := filepath.Rel(s.Root, f)
		t.Run(rel, func(t *testing.T) {
			want, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got := s.Run(bins.Civicgate, "fmt", rel)
			if got != string(want) {
				t.Fatalf("%s is not formatted as `civicgate fmt` would write it:\n%s", rel, got)
			}
			if strings.HasPrefix(filepath.Base(f), "Caddyfile") {
				out, err := s.RunErr(bins.Civicgate, "validate", "--config", rel, "--adapter", "caddyfile")
				if err != nil {
					t.Fatalf("validate %s: %v\n%s", rel, err, out)
				}
			}
		})
	}
}

type composeFile struct {
	Services map[string]struct {
		Build       any               `yaml:"build"`
		Image       string            `yaml:"image"`
		Command     []string          `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
		EnvFile     []string          `yaml:"env_file"`
		Ports       []string          `yaml:"ports"`
		DependsOn   map[string]struct {
			Condition string `yaml:"condition"`
		} `yaml:"depends_on"`
		Healthcheck *struct {
			Test []string `yaml:"test"`
		} `yaml:"healthcheck"`
	} `yaml:"services"`
}

// TestComposeFile checks docker-compose.yml against the real binaries: every
// service and dependency exists, every command is one the binaries accept,
// every environment variable the shipped Caddyfiles read is provided, and one
// port is published. (No Docker engine runs here, so it is checked, not run.)
func TestComposeFile(t *testing.T) {
	s := stack.New(t, &bins)
	raw, err := os.ReadFile(filepath.Join(s.Root, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	for _, name := range []string{"postgres", "redis", "migrate", "keys-migrate", "webhooks-migrate", "recordsd", "gateway-1", "gateway-2", "edge"} {
		if _, ok := c.Services[name]; !ok {
			t.Fatalf("service %s missing", name)
		}
	}
	example, err := os.ReadFile(filepath.Join(s.Root, "deploy.env.example"))
	if err != nil {
		t.Fatal(err)
	}
	envFileVars := map[string]bool{}
	for _, line := range strings.Split(string(example), "\n") {
		if k, _, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(k, "#") {
			envFileVars[strings.TrimSpace(k)] = true
		}
	}
	placeholder := regexp.MustCompile(`\{(?:env\.|\$)([A-Z0-9_]+)(:[^}]*)?\}`)
	published := 0
	names := make([]string, 0, len(c.Services))
	for n := range c.Services {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		svc := c.Services[name]
		published += len(svc.Ports)
		for dep := range svc.DependsOn {
			if _, ok := c.Services[dep]; !ok {
				t.Errorf("%s depends on unknown service %s", name, dep)
			}
		}
		if svc.Build == nil {
			continue
		}
		if svc.Healthcheck == nil && name != "migrate" && !strings.HasSuffix(name, "-migrate") {
			t.Errorf("%s has no health check", name)
		}
		target := svc.Build.(map[string]any)["target"]
		bin := bins.Civicgate
		if target == "recordsd" {
			bin = bins.Recordsd
		}
		// The command must be accepted: ask for its help.
		if len(svc.Command) == 0 {
			t.Fatalf("%s has no command", name)
		}
		args := append([]string{}, svc.Command[:1]...)
		if svc.Command[0] == "keys" || svc.Command[0] == "webhooks" {
			args = append(args, svc.Command[1])
		}
		if out, err := s.RunErr(bin, append(args, "--help")...); err != nil && !strings.Contains(strings.ToLower(out), "usage") {
			t.Errorf("%s: %s %v is not a command the binary knows: %v\n%s", name, filepath.Base(bin), args, err, out)
		}
		// Caddyfile it runs: every variable it reads must be set.
		for i, a := range svc.Command {
			if a != "--config" || i+1 >= len(svc.Command) {
				continue
			}
			cf := filepath.Join(s.Root, "caddyfile", filepath.Base(svc.Command[i+1]))
			text, err := os.ReadFile(cf)
			if err != nil {
				t.Fatalf("%s runs %s: %v", name, svc.Command[i+1], err)
			}
			if strings.Contains(string(text), "import routes.caddy") {
				more, _ := os.ReadFile(filepath.Join(s.Root, "caddyfile", "routes.caddy"))
				text = append(text, more...)
			}
			for _, m := range placeholder.FindAllStringSubmatch(string(text), -1) {
				v, hasDefault := m[1], m[2] != ""
				if hasDefault || envFileVars[v] {
					continue
				}
				if _, ok := svc.Environment[v]; !ok {
					t.Errorf("%s: %s reads %s, which neither the service nor deploy.env.example sets", name, filepath.Base(cf), v)
				}
			}
		}
	}
	if published != 2 || len(c.Services["edge"].Ports) != 2 {
		t.Errorf("want only the edge to publish ports (443 and 80), got %d published", published)
	}
}
