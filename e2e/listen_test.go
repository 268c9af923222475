package e2e

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// listeningAddrs returns the local addresses of the TCP listeners and UDP
// sockets the process pid holds, read from /proc (no traffic is sent).
func listeningAddrs(t *testing.T, pid int) []string {
	t.Helper()
	inodes := map[string]bool{}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(fmt.Sprintf("/proc/%d/fd", pid), fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	var out []string
	for _, table := range []string{"tcp", "tcp6", "udp", "udp6"} {
		f, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			continue // no IPv6 in this namespace
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || !inodes[fields[9]] {
				continue
			}
			// TCP: only listeners (state 0A); UDP: every bound socket.
			if strings.HasPrefix(table, "tcp") && fields[3] != "0A" {
				continue
			}
			out = append(out, table+" "+procAddr(t, fields[1]))
		}
		f.Close()
	}
	return out
}

// procAddr decodes /proc/net's "0100007F:1F90" (little-endian words) form.
func procAddr(t *testing.T, s string) string {
	t.Helper()
	host, port, _ := strings.Cut(s, ":")
	raw, err := hex.DecodeString(host)
	if err != nil {
		t.Fatalf("bad /proc address %q", s)
	}
	for i := 0; i+4 <= len(raw); i += 4 {
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	p, _ := strconv.ParseUint(port, 16, 16)
	return net.JoinHostPort(net.IP(raw).String(), strconv.Itoa(int(p)))
}

// testLoopbackOnly: the development Caddyfile binds every socket of the
// gateway to loopback (docs/security.md "Deployment"; finding 3 of its
// "Review of 2026-11": make up listened on all interfaces while allowing
// webhooks to loopback targets).
func testLoopbackOnly(t *testing.T, pid int) {
	addrs := listeningAddrs(t, pid)
	if len(addrs) < 2 {
		t.Fatalf("found only %v listening", addrs)
	}
	for _, a := range addrs {
		_, hp, _ := strings.Cut(a, " ")
		host, _, _ := net.SplitHostPort(hp)
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			t.Errorf("gateway listens on %s, not on loopback (all: %v)", a, addrs)
		}
	}
}
