package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
)

// Caddy binds its listeners with SO_REUSEPORT, so a second civicgate given
// the admin address of a running one binds it too and starts without an
// error; `curl localhost:2019/config/` or a plain `civicgate reload` may then
// reach either process (docs/operations.md "Validate, format, reload").
// Before `run` or `start`, the admin address the configuration names is
// dialled: if something answers there, civicgate refuses to start and says
// which address to change.

// adminTakenError is the refusal: which address, and what to do.
type adminTakenError struct{ addr string }

func (e adminTakenError) Error() string {
	return fmt.Sprintf("the admin address %s is already served by another process (another civicgate or Caddy); "+
		"give this configuration its own with the `admin` global option, e.g. admin localhost:2029 "+
		"(docs/operations.md \"Validate, format, reload\")", e.addr)
}

// checkAdminAddress returns adminTakenError when args (os.Args[1:]) run or
// start a configuration whose admin endpoint is enabled on an address that
// already accepts connections. Anything it cannot work out (no such
// command, a configuration that does not load) is left to Caddy: nil.
func checkAdminAddress(args []string) error {
	if len(args) == 0 || (args[0] != "run" && args[0] != "start") {
		return nil
	}
	configFile, adapter := flagValue(args[1:], "config", "c"), flagValue(args[1:], "adapter", "a")
	if flagValue(args[1:], "envfile", "") != "" || hasFlag(args[1:], "resume") {
		return nil // the configuration is not what this file adapts to alone
	}
	cfg := adaptQuietly(configFile, adapter)
	if cfg == nil {
		return nil
	}
	var c struct {
		Admin *struct {
			Disabled bool   `json:"disabled"`
			Listen   string `json:"listen"`
		} `json:"admin"`
	}
	if err := json.Unmarshal(cfg, &c); err != nil {
		return nil
	}
	listen := caddy.DefaultAdminListen
	if c.Admin != nil {
		if c.Admin.Disabled {
			return nil
		}
		if c.Admin.Listen != "" {
			listen = c.Admin.Listen
		}
	}
	na, err := caddy.ParseNetworkAddress(listen)
	if err != nil || na.PortRangeSize() != 1 {
		return nil
	}
	dialAddr := na.JoinHostPort(0)
	if na.IsUnixNetwork() {
		dialAddr = na.Host
	}
	conn, err := net.DialTimeout(na.Network, dialAddr, time.Second)
	if err != nil {
		return nil // nothing there: Caddy binds it
	}
	_ = conn.Close()
	return adminTakenError{addr: listen}
}

// adaptQuietly reads and adapts the configuration file as `run` would find
// it (Caddyfile in the working directory by default; the caddyfile adapter
// for a file named Caddyfile* or *.caddyfile), without logging: Caddy
// adapts it again and reports warnings and errors once. nil if it cannot.
func adaptQuietly(configFile, adapter string) []byte {
	if configFile == "" {
		configFile = "Caddyfile"
	}
	body, err := os.ReadFile(configFile)
	if err != nil {
		return nil
	}
	base := filepath.Base(configFile)
	if adapter == "" && (strings.HasPrefix(base, "Caddyfile") || filepath.Ext(base) == ".caddyfile") {
		adapter = "caddyfile"
	}
	if adapter == "" {
		return body
	}
	a := caddyconfig.GetAdapter(adapter)
	if a == nil {
		return nil
	}
	cfg, _, err := a.Adapt(body, map[string]any{"filename": configFile})
	if err != nil {
		return nil
	}
	return cfg
}

// flagValue is the value of --name/-short (also --name=v, -name v) in args.
func flagValue(args []string, name, short string) string {
	for i, a := range args {
		for _, f := range []string{"--" + name, "-" + name, "-" + short} {
			if f == "-" {
				continue
			}
			if a == f && i+1 < len(args) {
				return args[i+1]
			}
			if v, ok := strings.CutPrefix(a, f+"="); ok {
				return v
			}
		}
	}
	return ""
}

// hasFlag reports whether the boolean --name (or -name) is set in args.
func hasFlag(args []string, name string) bool {
	for _, a := range args {
		if a == "--"+name || a == "-"+name || a == "--"+name+"=true" || a == "-"+name+"=true" {
			return true
		}
	}
	return false
}
