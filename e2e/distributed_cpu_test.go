package e2e

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// ticksCPU is the user + system CPU of /proc/<pid>/stat (pid "self" for this
// process), in clock ticks of 10 ms; a process that is gone counts 0.
func ticksCPU(pid string) time.Duration {
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0
	}
	// Fields after the command name (which may hold spaces): utime is the
	// 14th field of the file and stime the 15th.
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	var total time.Duration
	for _, field := range f[11:13] {
		ticks, _ := strconv.ParseInt(field, 10, 64)
		total += time.Duration(ticks) * 10 * time.Millisecond
	}
	return total
}

// selfCPU is this process's CPU: the benchmark's load generator.
func selfCPU(testing.TB) time.Duration { return ticksCPU("self") }

// postgresCPU is the CPU of every process named postgres on the machine (the
// server the stack's databases live on, its backends and workers).
func postgresCPU(b testing.TB) time.Duration {
	b.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		b.Fatal(err)
	}
	var total time.Duration
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		if comm, err := os.ReadFile("/proc/" + e.Name() + "/comm"); err == nil && strings.TrimSpace(string(comm)) == "postgres" {
			total += ticksCPU(e.Name())
		}
	}
	return total
}

// redisCPU is used_cpu_sys + used_cpu_user summed over the nodes (INFO cpu).
func redisCPU(b testing.TB, addrs []string) time.Duration {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var total time.Duration
	for _, addr := range addrs {
		c := redis.NewClient(&redis.Options{Addr: addr})
		info, err := c.Info(ctx, "cpu").Result()
		_ = c.Close()
		if err != nil {
			b.Fatalf("INFO cpu on %s: %v", addr, err)
		}
		for _, line := range strings.Split(info, "\n") {
			k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
			if ok && (k == "used_cpu_sys" || k == "used_cpu_user") {
				sec, _ := strconv.ParseFloat(v, 64)
				total += time.Duration(sec * float64(time.Second))
			}
		}
	}
	return total
}
