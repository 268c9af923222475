package bench

import (
	"net/http"
	"os"
	"strconv"
	"testing"
)

// BenchmarkOperationCounting is the shipped route (cost budget, usage
// counted per key) with and without counting each request's operation
// (`operations off`, docs/design.md D70): with − without is what operation
// counting adds per request, and with ÷ without its ratio. It runs
// BENCH_OPCOUNT_COUNT rounds (default 8) of both halves, one after the
// other in alternating order, each provisioned anew (`go test -count`
// would run every count of one half before the other's, so a load that
// rises or falls during the run would weigh on one half only);
// bench/opcount.sh pairs them round by round (docs/design.md D83).
//
//	go test -run '^$' -bench OperationCounting -benchmem ./bench/
func BenchmarkOperationCounting(b *testing.B) {
	rounds := 8
	if v, err := strconv.Atoi(os.Getenv("BENCH_OPCOUNT_COUNT")); err == nil && v > 0 {
		rounds = v
	}
	for r := range rounds {
		order := []string{"with", "without"}
		if r%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		for _, name := range order {
			b.Run(name, func(b *testing.B) {
				var lines []string
				if name == "without" {
					lines = []string{"operations off"}
				}
				c := startChain(b, true, lines...)
				c.warm(b)
				w := &discard{h: http.Header{}}
				b.ReportAllocs()
				for b.Loop() {
					if s := c.serve(w, "/v1/graphql"); s != http.StatusOK {
						b.Fatalf("status %d", s)
					}
				}
			})
		}
	}
}
