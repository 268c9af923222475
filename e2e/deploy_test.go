package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/internal/testkit/testenv"

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
		if base := filepath.Base(f); !strings.HasPrefix(base, "Caddyfile") && filepath.Ext(base) != ".caddy" {
			continue // data the Caddyfiles name (mcp-tools.json), not Caddyfile text
		}
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
		Networks    []string          `yaml:"networks"`
		DependsOn   map[string]struct {
			Condition string `yaml:"condition"`
		} `yaml:"depends_on"`
		Healthcheck *struct {
			Test []string `yaml:"test"`
		} `yaml:"healthcheck"`
	} `yaml:"services"`
	Networks map[string]struct {
		Internal bool `yaml:"internal"`
	} `yaml:"networks"`
}

// TestComposeFile checks docker-compose.yml against the real binaries: every
// service and dependency exists, every command is one the binaries accept,
// every environment variable the shipped Caddyfiles read is provided, and one
// port is published. (No Docker engine runs here, so it is checked, not run.)
func TestComposeFile(t *testing.T) {
	s := stack.New(t, &bins)
	c := readCompose(t, s.Root)
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
				if hasDefault {
					continue
				}
				if _, ok := svc.Environment[v]; !ok {
					t.Errorf("%s: %s reads %s, which the service's environment does not set", name, filepath.Base(cf), v)
				}
			}
		}
	}
	checkComposeLeastPrivilege(t, c, envFileVars)
	if published != 2 || len(c.Services["edge"].Ports) != 2 {
		t.Errorf("want only the edge to publish ports (443 and 80), got %d published", published)
	}
}

// checkComposeLeastPrivilege: no service loads the whole env file, each gets
// only what it reads, the edge holds no secret, every interpolated variable is
// documented in deploy.env.example, and the networks keep the edge away from
// recordsd, Redis and PostgreSQL (docs/security.md "Deployment"; finding 8
// of its "Review of 2026-11").
func checkComposeLeastPrivilege(t *testing.T, c composeFile, documented map[string]bool) {
	t.Helper()
	interpolated := regexp.MustCompile(`\$\{([A-Z0-9_]+)`)
	secrets := []string{"POSTGRES_PASSWORD", "REDIS_PASSWORD", "CIVIC_IDENTITY_SECRET", "RECORDSD_CURSOR_SECRET", "CIVIC_WEBHOOK_SECRET_KEY"}
	onNet := map[string]map[string]bool{}
	for name, svc := range c.Services {
		if len(svc.EnvFile) > 0 {
			t.Errorf("%s loads env files %v: give each service only the variables it reads", name, svc.EnvFile)
		}
		if len(svc.Networks) == 0 {
			t.Errorf("%s is on no named network (the default network would join everything)", name)
		}
		for _, n := range svc.Networks {
			if _, ok := c.Networks[n]; !ok {
				t.Errorf("%s is on undeclared network %s", name, n)
			}
			if onNet[n] == nil {
				onNet[n] = map[string]bool{}
			}
			onNet[n][name] = true
		}
		for k, v := range svc.Environment {
			for _, m := range interpolated.FindAllStringSubmatch(v, -1) {
				if !documented[m[1]] {
					t.Errorf("%s: %s interpolates %s, which deploy.env.example does not document", name, k, m[1])
				}
			}
		}
	}
	edge := c.Services["edge"]
	for k, v := range edge.Environment {
		for _, secret := range secrets {
			if k == secret || strings.Contains(v, "${"+secret) {
				t.Errorf("edge is given %s (via %s): the internet-facing process needs no secret", secret, k)
			}
		}
	}
	for _, n := range edge.Networks {
		for _, other := range []string{"recordsd", "redis", "postgres"} {
			if onNet[n][other] {
				t.Errorf("edge shares network %s with %s", n, other)
			}
		}
	}
	for _, n := range c.Services["redis"].Networks {
		if !c.Networks[n].Internal {
			t.Errorf("redis is on network %s, which is not internal", n)
		}
	}
	if url := c.Services["gateway-1"].Environment["REDIS_URL"]; !strings.Contains(url, "${REDIS_PASSWORD") {
		t.Errorf("gateways reach Redis without a password: REDIS_URL=%s", url)
	}
}

// readCompose parses the repository's docker-compose.yml.
func readCompose(t *testing.T, root string) composeFile {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return c
}
