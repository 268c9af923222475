package usagechart

import (
	"encoding/csv"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

// csvHeader is the first line CSV writes.
var csvHeader = []string{"start", "key_id", "admitted", "refused", "client_errors", "server_errors", "cost"}

// CSV writes rows as CSV (RFC 4180, via encoding/csv) with the header
// start,key_id,admitted,refused,client_errors,server_errors,cost and start in
// RFC 3339 UTC. With byKey, it writes one line per row, in the given order.
// Without, rows with the same start are summed into one line with an empty
// key_id, ordered by start.
//
// Text fields (start, key_id) starting with =, +, -, @, tab or CR get a
// leading ' so a spreadsheet does not run them as a formula. Counts are
// written by strconv (digits and at most a leading minus), which spreadsheets
// read as numbers, never as formulas, and are left as they are.
func CSV(w io.Writer, rows []usage.Row, byKey bool) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	if !byKey {
		rows = sumByStart(rows)
	}
	rec := make([]string, len(csvHeader))
	var last time.Time // rows usually come ordered by start: format each once
	for i := range rows {
		r := &rows[i]
		if i == 0 || !r.Start.Equal(last) {
			last, rec[0] = r.Start, defuse(r.Start.UTC().Format(time.RFC3339))
		}
		rec[1] = ""
		if byKey {
			rec[1] = defuse(r.KeyID)
		}
		rec[2] = strconv.FormatInt(r.Admitted, 10)
		rec[3] = strconv.FormatInt(r.Refused, 10)
		rec[4] = strconv.FormatInt(r.ClientErrors, 10)
		rec[5] = strconv.FormatInt(r.ServerErrors, 10)
		rec[6] = strconv.FormatInt(r.Cost, 10)
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// defuse prefixes s with ' when a spreadsheet would read it as a formula
// (OWASP "CSV injection").
func defuse(s string) string {
	if s == "" {
		return s
	}
	switch s[0] {
	case '=', '+', '-', '@', '\t', '\r':
		return "'" + s
	}
	return s
}

// sumByStart sums rows with the same start (to the nanosecond) into one row
// with no key or organization, ordered by start. rows is not modified.
func sumByStart(rows []usage.Row) []usage.Row {
	out := make([]usage.Row, 0, min(len(rows), 1024))
	at := make(map[int64]int)
	for i := range rows {
		r := &rows[i]
		k := r.Start.UnixNano()
		j, ok := at[k]
		if !ok {
			j = len(out)
			at[k] = j
			out = append(out, usage.Row{Start: r.Start.UTC()})
		}
		out[j].Delta = out[j].Plus(r.Delta)
	}
	slices.SortStableFunc(out, func(a, b usage.Row) int { return a.Start.Compare(b.Start) })
	return out
}
