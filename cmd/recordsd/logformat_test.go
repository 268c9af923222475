package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"
	"time"
)

// TestLogFormatIsTheGateways: a recordsd log line has the keys and value
// forms of the gateway's (zap) lines — lower-case level, ts in unix seconds,
// logger, msg — and keeps its own attributes.
func TestLogFormatIsTheGateways(t *testing.T) {
	var b bytes.Buffer
	log := slog.New(newLogHandler(&b))
	before := float64(time.Now().UnixNano()) / 1e9
	log.Warn("import finished", "family", "bills", "read", 3)
	var line map[string]any
	if err := json.Unmarshal(b.Bytes(), &line); err != nil {
		t.Fatalf("%v: %s", err, b.String())
	}
	ts, ok := line["ts"].(float64)
	if line["level"] != "warn" || !ok || ts < before || ts > before+60 || line["logger"] != "recordsd" ||
		line["msg"] != "import finished" || line["family"] != "bills" || line["read"] != 3.0 {
		t.Fatalf("line %s", b.String())
	}
	if _, has := line["time"]; has {
		t.Fatalf("slog's own time key is still there: %s", b.String())
	}
}
