package bench

import (
	"net/http"
	"slices"
	"testing"
)

// opCountingRuns alternates which half of BenchmarkOperationCounting runs
// first, count after count, so a load that rises or falls during a run
// weighs on both halves alike.
var opCountingRuns int

// BenchmarkOperationCounting is the shipped route (cost budget, usage
// counted per key) with and without counting each request's operation
// (`operations off`, docs/design.md D70): with − without is what operation
// counting adds per request, and with ÷ without its ratio. Run it with
// several counts, as bench/opcount.sh does: each count provisions both
// routes anew and runs them one after the other, in alternating order, and
// the script pairs them count by count (docs/design.md D83).
//
//	go test -run '^$' -bench OperationCounting -benchmem -count 8 ./bench/
func BenchmarkOperationCounting(b *testing.B) {
	order := []string{"with", "without"}
	if opCountingRuns%2 == 1 {
		slices.Reverse(order)
	}
	opCountingRuns++
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
