package accesstoken

import (
	"encoding/json"
	"strings"
	"testing"
)

// Every kind has a name, a status, an RFC 6750 code and a description that
// fits a WWW-Authenticate quoted-string (RFC 6750 §3: %x20-21 / %x23-5B /
// %x5D-7E), and a body of docs/api.md's {"error":…} shape.
func TestKindStrings(t *testing.T) {
	names := map[string]bool{}
	for _, k := range Kinds() {
		if k.String() == "unknown" || names[k.String()] {
			t.Errorf("kind %d: name %q", k, k.String())
		}
		names[k.String()] = true
		if s := k.Status(); s != 401 && s != 403 {
			t.Errorf("%s: status %d", k, s)
		}
		if c := k.Code(); (c == "invalid_token") != (k.Status() == 401) || (c != "invalid_token" && c != "insufficient_scope") {
			t.Errorf("%s: code %s with status %d", k, c, k.Status())
		}
		d := k.Description()
		for i := 0; i < len(d); i++ {
			if c := d[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
				t.Errorf("%s: description %q holds %q", k, d, c)
			}
		}
		var body map[string]string
		if err := json.Unmarshal(k.Body(), &body); err != nil || len(body) != 1 || body["error"] != d {
			t.Errorf("%s: body %s", k, k.Body())
		}
		e := refusal(k)
		want := `error="` + k.Code() + `", error_description="` + d + `"`
		if e.Challenge() != want || !strings.Contains(e.Error(), k.String()) {
			t.Errorf("%s: challenge %s, error %s", k, e.Challenge(), e.Error())
		}
	}
	if len(names) != int(numKinds)-1 {
		t.Fatalf("%d kinds", len(names))
	}
	if Kind(0).String() != "unknown" || Kind(200).Status() != 401 {
		t.Fatal("an invalid Kind must still answer 401")
	}
}
