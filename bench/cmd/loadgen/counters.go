package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat
// (100 on every Linux architecture Go supports).
const clockTicks = 100

// readCPU returns utime+stime of every process, plus "loadgen" (this process).
func readCPU(procs []proc) (map[string]time.Duration, error) {
	out := make(map[string]time.Duration, len(procs)+1)
	self, err := procCPU("/proc/self/stat")
	if err != nil {
		return nil, err
	}
	out["loadgen"] = self
	for _, p := range procs {
		v, err := procCPU("/proc/" + strconv.Itoa(p.pid) + "/stat")
		if err != nil {
			return nil, fmt.Errorf("process %s: %w", p.name, err)
		}
		out[p.name] = v
	}
	return out, nil
}

// procCPU parses utime (field 14) and stime (field 15) of a stat file; the
// command name (field 2) may hold spaces, so fields are counted after ")".
func procCPU(path string) (time.Duration, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("%s: no command field", path)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime is field 14 → f[11], stime f[12].
	if len(f) < 13 {
		return 0, fmt.Errorf("%s: %d fields", path, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("%s: bad utime/stime: %w", path, errors.Join(err1, err2))
	}
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}

// redisCommands is the total of calls over every command in INFO
// commandstats, except INFO itself (this program's own probe).
func redisCommands(ctx context.Context, addr string) (int64, error) {
	if addr == "" {
		return 0, nil
	}
	var d net.Dialer
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		return 0, fmt.Errorf("dial redis: %w", err)
	}
	defer conn.Close()
	if dl, ok := dctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := conn.Write([]byte("*2\r\n$4\r\nINFO\r\n$12\r\ncommandstats\r\n")); err != nil {
		return 0, fmt.Errorf("write INFO: %w", err)
	}
	br := bufio.NewReader(conn)
	head, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(head, "$") {
		return 0, fmt.Errorf("INFO reply %q: %w", head, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(head[1:]))
	if err != nil {
		return 0, fmt.Errorf("INFO reply length %q: %w", head, err)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(br, body); err != nil {
		return 0, fmt.Errorf("read INFO: %w", err)
	}
	return sumCommandStats(string(body))
}

// sumCommandStats adds the calls= of every cmdstat_ line except info.
func sumCommandStats(info string) (int64, error) {
	var total int64
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		name, rest, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") || name == "cmdstat_info" {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(kv, "calls="); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return 0, fmt.Errorf("commandstats %q: %w", line, err)
				}
				total += n
			}
		}
	}
	return total, nil
}
