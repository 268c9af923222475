package request

import (
	"io"
	"mime"
	"net/http"
	"strings"
)

// IsJSONContentType reports whether a Content-Type is application/json or
// application/*+json, with no charset but UTF-8.
func IsJSONContentType(ct string) bool {
	if ct == "" {
		return false
	}
	if ct == "application/json" { // the usual value, without parsing
		return true
	}
	media, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	if media != "application/json" && !(strings.HasPrefix(media, "application/") && strings.HasSuffix(media, "+json")) {
		return false
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return false
	}
	return true
}

// ReadBody reads at most max+1 bytes of r's body into one buffer sized by
// Content-Length when it is known (io.ReadAll would grow it several times).
func ReadBody(r *http.Request, max int64) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	size := int64(512)
	if r.ContentLength >= 0 && r.ContentLength <= max {
		size = r.ContentLength + 1 // room to see EOF without growing
	}
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		limit := min(int64(cap(buf)), max+1)
		n, err := r.Body.Read(buf[len(buf):limit])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > max || err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}
