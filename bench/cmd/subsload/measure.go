package main

// What a proxy process costs: its memory (VmRSS, Go heap and stacks from its
// admin /metrics) and its CPU time (/proc/<pid>/stat).

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// memory returns the proxy's VmRSS and, after two forced GCs (pprof
// heap?gc=1; a sync.Pool's victim cache outlives one, so buffers pooled by
// the last delivery would count as per-socket memory), go_memstats
// heap_inuse+stack_inuse and go_goroutines from its /metrics.
func memory(t target) (rss, inuse, goroutines int64, err error) {
	if t.pid == 0 {
		return 0, 0, 0, nil
	}
	st, err := os.ReadFile("/proc/" + strconv.Itoa(t.pid) + "/status")
	if err != nil {
		return 0, 0, 0, err
	}
	for _, line := range strings.Split(string(st), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			rss = kb << 10
		}
	}
	if t.admin == "" {
		return rss, 0, 0, nil
	}
	for range 2 {
		resp, err := http.Get(t.admin + "/debug/pprof/heap?gc=1")
		if err != nil {
			return 0, 0, 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	resp, err := http.Get(t.admin + "/metrics")
	if err != nil {
		return 0, 0, 0, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return 0, 0, 0, err
	}
	for _, line := range strings.Split(string(body), "\n") {
		name, val, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			continue
		}
		switch name {
		case "go_memstats_heap_inuse_bytes", "go_memstats_stack_inuse_bytes":
			inuse += int64(f)
		case "go_goroutines":
			goroutines = int64(f)
		}
	}
	return rss, inuse, goroutines, nil
}

func procCPU(pid int) (time.Duration, error) {
	if pid == 0 {
		return 0, nil
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("short stat")
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100, nil
}
