package export

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Output formats of WriteEvents (`civicgate usage export --format`).
const (
	FormatCSV         = "csv"
	FormatJSON        = "json"
	FormatCloudEvents = "cloudevents"
)

// CSVHeader is the first line of the CSV format.
var CSVHeader = []string{"id", "org_id", "key_id", "start", "end", "requests", "refused", "client_errors",
	"server_errors", "cost", "mcp_calls"}

// WriteEvents writes events in format: csv (CSVHeader, one line per event,
// cells a spreadsheet would run as a formula prefixed with '), json (one
// object {"events": [data…]} with each event's id beside its data) or
// cloudevents (the batch the sink receives).
func WriteEvents(w io.Writer, format string, events []Event) error {
	switch format {
	case FormatCSV:
		cw := csv.NewWriter(w)
		if err := cw.Write(CSVHeader); err != nil {
			return fmt.Errorf("export: write csv: %w", err)
		}
		for _, e := range events {
			d := e.Data
			n := func(v int64) string { return strconv.FormatInt(v, 10) }
			if err := cw.Write([]string{e.ID, CSVCell(d.OrgID), CSVCell(d.KeyID), d.Start.Format(time.RFC3339), d.End.Format(time.RFC3339),
				n(d.Requests), n(d.Refused), n(d.ClientErrors), n(d.ServerErrors), n(d.Cost), n(d.MCPCalls)}); err != nil {
				return fmt.Errorf("export: write csv: %w", err)
			}
		}
		cw.Flush()
		if err := cw.Error(); err != nil {
			return fmt.Errorf("export: write csv: %w", err)
		}
		return nil
	case FormatJSON:
		type row struct {
			ID string `json:"id"`
			Data
		}
		rows := make([]row, len(events))
		for i, e := range events {
			rows[i] = row{ID: e.ID, Data: e.Data}
		}
		return encodeJSON(w, struct {
			Events []row `json:"events"`
		}{rows})
	case FormatCloudEvents:
		if events == nil {
			events = []Event{}
		}
		return encodeJSON(w, events)
	default:
		return fmt.Errorf("export: format %q is not csv, json or cloudevents", format)
	}
}

// encodeJSON writes v indented; encoding/json escapes <, > and & in
// strings, so markup in an id never reaches a page that embeds the output
// as markup.
func encodeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("export: write json: %w", err)
	}
	return nil
}

// CSVCell is s safe to open in a spreadsheet: a cell starting with =, +, -,
// @, a tab or a carriage return is prefixed with ' so it is text, not a
// formula (OWASP "CSV injection").
func CSVCell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
