package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// BenchmarkThreeGatewaysCapacity measures, for docs/scaling.md's capacity
// model, what one admitted request costs on three gateways (the shipped
// caddyfile/Caddyfile.local) over a Redis Cluster of three masters with a
// replica each, and, as a baseline in the same run, on one gateway over one
// standalone Redis. Requests are GET /bills?limit=1 with enterprise keys
// (1000/min: leases of 20, docs/design.md D26), the response cache off
// (CIVICGATE_CACHE=off) so that every admitted request is a page recordsd
// reads from PostgreSQL; 8 clients, spread evenly over the gateways, on
// HTTPS keep-alive connections. Keys are used for 900 admissions each (a
// pool issued ahead, refilled in the background) so that nearly every
// request is admitted.
//
// Reported per run: gw-cpu-µs/req (user + system CPU of the gateway
// processes from /proc, over all requests), recordsd-cpu-µs/req (same for
// recordsd), gw-idle-cpu-ms/s (a gateway's CPU per second with no request,
// measured before), redis-cmds/1000-admitted (INFO commandstats calls
// summed over the masters, INFO itself and replication left out; the
// commands a Lua script runs count, replicas' replayed writes do not),
// redis-scripts/1000-admitted (EVALSHA calls: the rate limiter's round
// trips), rl-calls/1000-admitted (the gateways' own
// civicgate_ratelimit_redis_calls_total), admitted-% and req/s. All
// processes share this machine's cores with the load generator, PostgreSQL
// and Redis: CPU per request is the model's input, req/s only this box's.
//
//	go test -run '^$' -bench BenchmarkThreeGatewaysCapacity -benchtime 20s ./e2e/
func BenchmarkThreeGatewaysCapacity(b *testing.B) {
	cluster := testenv.StartRedisCluster(b, 3, 1)
	three := startFleet(b, 3, cluster.URL(), "CIVICGATE_CACHE=off")
	standalone := testenv.StartRedisServer(b)
	one := startFleet(b, 1, standalone.URL(), "CIVICGATE_CACHE=off")
	idle3, idle1 := idleCPU(b, three), idleCPU(b, one)
	b.Run("cluster-3-gateways", func(b *testing.B) { measureCapacity(b, three, cluster.Addrs(), idle3) })
	b.Run("standalone-1-gateway", func(b *testing.B) { measureCapacity(b, one, []string{standalone.Addr()}, idle1) })
	// The same three-gateway run with the response cache on (shipped): one
	// document, so nearly every admitted request is a hit (cache-hit-%).
	cached := startFleet(b, 3, cluster.URL(), "CIVICGATE_CACHE=on")
	idleCached := idleCPU(b, cached)
	b.Run("cluster-3-gateways-cached", func(b *testing.B) { measureCapacity(b, cached, cluster.Addrs(), idleCached) })
}

// idleCPU is the CPU a fleet's gateways use per second with no request (the
// webhooks poll, usage flushes, the runtime), per gateway, measured over 3 s.
func idleCPU(b *testing.B, f fleet) time.Duration {
	before, start := cpuOf(b, f.procs...), time.Now()
	time.Sleep(3 * time.Second) // a measurement interval, not a wait for a condition
	return time.Duration(float64(cpuOf(b, f.procs...)-before) / time.Since(start).Seconds() / float64(len(f.procs)))
}

// measureCapacity sends b.N requests through f's gateways and reports the
// metrics BenchmarkThreeGatewaysCapacity describes.
func measureCapacity(b *testing.B, f fleet, redisAddrs []string, idle time.Duration) {
	keys := newKeyPool(b, f.gateways[0])
	clients := make([]*http.Client, len(f.gateways))
	for i, s := range f.gateways {
		tr := s.Client.Transport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 64
		tr.TLSClientConfig = &tls.Config{RootCAs: tr.TLSClientConfig.RootCAs, MinVersion: tls.VersionTLS12}
		clients[i] = &http.Client{Transport: tr, Timeout: 30 * time.Second}
	}
	var admitted, refused, next, hits atomic.Int64
	var failed atomic.Value
	gwBefore, rdBefore := cpuOf(b, f.procs...), cpuOf(b, f.recordsd)
	pgBefore, redisBefore, selfBefore := postgresCPU(b), redisCPU(b, redisAddrs), selfCPU(b)
	cmdsBefore, callsBefore := redisCommands(b, redisAddrs), metricSum(b, f.gateways, "civicgate_ratelimit_redis_calls_total")
	b.SetParallelism(4)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := int(next.Add(1)) % len(f.gateways)
			req, _ := http.NewRequest(http.MethodGet, f.gateways[i].HTTPSURL+"/bills?limit=1", nil)
			req.Header.Set("Authorization", "Bearer "+keys.key(admitted.Load()))
			resp, err := clients[i].Do(req)
			if err != nil {
				failed.Store(err.Error())
				return
			}
			// Read to the end so the keep-alive connection is reused: an
			// unread body closes it, and every request would pay a TLS
			// handshake on both sides.
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			switch resp.StatusCode {
			case http.StatusOK:
				admitted.Add(1)
				if strings.Contains(resp.Header.Get("Cache-Status"), "; hit") {
					hits.Add(1)
				}
			case http.StatusTooManyRequests:
				refused.Add(1)
			default:
				failed.Store("status " + strconv.Itoa(resp.StatusCode))
				return
			}
		}
	})
	elapsed := time.Since(start)
	b.StopTimer()
	if msg := failed.Load(); msg != nil {
		b.Fatalf("a request failed: %v", msg)
	}
	n, adm := float64(admitted.Load()+refused.Load()), float64(admitted.Load())
	if adm == 0 {
		b.Fatal("nothing admitted")
	}
	b.ReportMetric(float64((cpuOf(b, f.procs...)-gwBefore).Microseconds())/n, "gw-cpu-µs/req")
	b.ReportMetric(float64((cpuOf(b, f.recordsd)-rdBefore).Microseconds())/adm, "recordsd-cpu-µs/req")
	// What the rest of the machine spent per request: PostgreSQL (every
	// postgres process: the run is alone on the server), Redis (every node,
	// replicas included) and this process (the load generator).
	b.ReportMetric(float64((postgresCPU(b)-pgBefore).Microseconds())/n, "pg-cpu-µs/req")
	b.ReportMetric(float64((redisCPU(b, redisAddrs)-redisBefore).Microseconds())/n, "redis-cpu-µs/req")
	b.ReportMetric(float64((selfCPU(b)-selfBefore).Microseconds())/n, "client-cpu-µs/req")
	b.ReportMetric(100*float64(hits.Load())/adm, "cache-hit-%")
	cmds, scripts, byCommand := commandsSince(cmdsBefore, redisCommands(b, redisAddrs))
	b.Logf("%d requests, %d admitted in %s; Redis commands: %s", int64(n), int64(adm), elapsed.Round(time.Millisecond), byCommand)
	b.ReportMetric(float64(cmds)*1000/adm, "redis-cmds/1000-admitted")
	b.ReportMetric(float64(scripts)*1000/adm, "redis-scripts/1000-admitted")
	if scripts > 0 {
		after := redisCommands(b, redisAddrs)
		usec := after["evalsha#usec"] - cmdsBefore["evalsha#usec"]
		b.ReportMetric(float64(usec)/float64(scripts), "redis-µs/script")
	}
	b.ReportMetric(float64(idle.Microseconds())/1000, "gw-idle-cpu-ms/s")
	b.ReportMetric((metricSum(b, f.gateways, "civicgate_ratelimit_redis_calls_total")-callsBefore)*1000/adm, "rl-calls/1000-admitted")
	b.ReportMetric(100*adm/n, "admitted-%")
	b.ReportMetric(n/elapsed.Seconds(), "req/s")
}

// keyPool hands out enterprise keys, 900 admissions each, issuing more in the
// background before they run out.
type keyPool struct {
	b       testing.TB
	s       *stack.Stack
	mu      sync.Mutex
	cond    *sync.Cond
	keys    []string
	issuing bool
	err     error
}

func newKeyPool(b testing.TB, s *stack.Stack) *keyPool {
	p := &keyPool{b: b, s: s}
	p.cond = sync.NewCond(&p.mu)
	p.keys, _ = issueKeys(b, s, "capacity"+testenv.RandomSuffix(3)+"-", 8)
	return p
}

// key is the key for the request after admitted admissions.
func (p *keyPool) key(admitted int64) string {
	i := int(admitted / 900)
	p.mu.Lock()
	defer p.mu.Unlock()
	if i+4 >= len(p.keys) && !p.issuing && p.err == nil {
		p.issuing = true
		go p.issue()
	}
	for i >= len(p.keys) && p.err == nil {
		p.cond.Wait()
	}
	if p.err != nil {
		return "" // answered 401: the run fails
	}
	return p.keys[i]
}

func (p *keyPool) issue() {
	var fresh []string
	var err error
	for i := range 8 {
		out, e := p.s.RunErr(bins.Civicgate, "keys", "issue", "--org", "capacity"+testenv.RandomSuffix(4)+strconv.Itoa(i),
			"--tier", "enterprise", "--env", "live")
		if k := liveKey.FindString(out); e == nil && k != "" {
			fresh = append(fresh, k)
		} else if e != nil {
			err = fmt.Errorf("keys issue: %w", e)
		}
	}
	p.mu.Lock()
	p.keys, p.issuing, p.err = append(p.keys, fresh...), false, err
	p.cond.Broadcast()
	p.mu.Unlock()
}

// cpuOf is the user + system CPU time the processes have used.
func cpuOf(b testing.TB, procs ...*stack.Proc) time.Duration {
	b.Helper()
	var total time.Duration
	for _, p := range procs {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(p.Pid()) + "/stat")
		if err != nil {
			b.Fatal(err)
		}
		// Fields after the command name (which may hold spaces): state is the
		// 3rd field of the file, utime the 14th and stime the 15th, in clock
		// ticks (USER_HZ, 100 on Linux).
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		for _, field := range f[11:13] {
			ticks, err := strconv.ParseInt(field, 10, 64)
			if err != nil {
				b.Fatalf("/proc/%d/stat: %v", p.Pid(), err)
			}
			total += time.Duration(ticks) * 10 * time.Millisecond
		}
	}
	return total
}

// redisCommands counts the calls of every command but INFO in INFO
// commandstats, summed over the given nodes that are masters, by command.
func redisCommands(b testing.TB, addrs []string) map[string]int64 {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	total := map[string]int64{}
	for _, addr := range addrs {
		c := redis.NewClient(&redis.Options{Addr: addr})
		info, err := c.Info(ctx, "replication", "commandstats").Result()
		_ = c.Close()
		if err != nil {
			b.Fatalf("INFO on %s: %v", addr, err)
		}
		if !strings.Contains(info, "role:master") {
			continue
		}
		for _, line := range strings.Split(info, "\n") {
			rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_")
			if !ok || strings.HasPrefix(rest, "info:") {
				continue
			}
			cmd, stats, _ := strings.Cut(rest, ":")
			calls, rest, _ := strings.Cut(strings.TrimPrefix(stats, "calls="), ",")
			n, err := strconv.ParseInt(calls, 10, 64)
			if err != nil {
				b.Fatalf("INFO commandstats line %q: %v", line, err)
			}
			total[cmd] += n
			// usec=: the time Redis spent executing the command, in all.
			usec, _, _ := strings.Cut(strings.TrimPrefix(rest, "usec="), ",")
			if u, err := strconv.ParseInt(usec, 10, 64); err == nil {
				total[cmd+"#usec"] += u
			}
		}
	}
	return total
}

// commandsSince is the calls in now minus those in before: in all (the
// replicas' REPLCONF ACKs left out), the script calls (EVALSHA, EVAL: one
// per rate-limit round trip; the commands a script runs count in all), and,
// as text, by command (most first).
func commandsSince(before, now map[string]int64) (all, scripts int64, text string) {
	var by []string
	for cmd, n := range now {
		if d := n - before[cmd]; d > 0 && cmd != "replconf" && !strings.Contains(cmd, "#") {
			all += d
			if cmd == "evalsha" || cmd == "eval" {
				scripts += d
			}
			by = append(by, fmt.Sprintf("%d %s", d, cmd))
		}
	}
	slices.SortFunc(by, func(a, b string) int {
		x, _ := strconv.Atoi(strings.Fields(a)[0])
		y, _ := strconv.Atoi(strings.Fields(b)[0])
		return y - x
	})
	return all, scripts, strings.Join(by, ", ")
}
