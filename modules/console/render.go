package console

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/console/consolestore"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static/*
var staticFiles embed.FS

// view is what every page template gets.
type view struct {
	Title  string
	Member *member
	Org    *consolestore.Org
	Nav    string // the active tab: overview, keys, usage, operations, webhooks, audit, orgs
	Notice string // a result to announce (role="status")
	Error  string // a refusal to announce (role="alert")
	Data   any
	// SignupOn: sign-up is on, so the sign-in page links to it; SignupQueue:
	// in approve mode, so operators get a link to its queue (set by render).
	SignupOn, SignupQueue bool
}

func parsePages() (*template.Template, error) {
	t, err := template.New("").Funcs(template.FuncMap{
		"when": func(t any) string {
			switch v := t.(type) {
			case time.Time:
				if v.IsZero() {
					return "—"
				}
				return v.UTC().Format("2006-01-02 15:04 UTC")
			case *time.Time:
				if v == nil || v.IsZero() {
					return "—"
				}
				return v.UTC().Format("2006-01-02 15:04 UTC")
			}
			return "—"
		},
		"num":  func(n int64) string { return groupDigits(n) },
		"join": strings.Join,
		"dict": func(kv ...any) map[string]any {
			m := make(map[string]any, len(kv)/2)
			for i := 0; i+1 < len(kv); i += 2 {
				k, _ := kv[i].(string)
				m[k] = kv[i+1]
			}
			return m
		},
	}).ParseFS(templateFiles, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("templates: %w", err)
	}
	return t, nil
}

// render executes a page into a buffer first, so a template error answers 500
// instead of half a page.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, code int, name string, v view) {
	var buf bytes.Buffer
	v.SignupOn, v.SignupQueue = h.signup != nil, h.signup != nil && h.signup.Mode == SignupApprove
	if err := h.pages.ExecuteTemplate(&buf, name, v); err != nil {
		h.logger.Error("console: page not rendered", zap.String("page", name), errField(err))
		http.Error(w, "Internal Server Error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	if r.Method != http.MethodHead {
		_, _ = w.Write(buf.Bytes())
	}
}

// status answers a page with a heading and a sentence.
func (h *Handler) status(w http.ResponseWriter, r *http.Request, code int, heading, text string) {
	h.render(w, r, code, "status", view{Title: heading, Data: map[string]string{"Heading": heading, "Text": text}})
}

func (h *Handler) notFound(w http.ResponseWriter, r *http.Request) {
	h.status(w, r, http.StatusNotFound, "Not found", "There is nothing here, or it belongs to another organization.")
}

// fail answers 500 for an unexpected error and logs it (never to the page).
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		h.logger.Warn("console: request ended before its answer", errField(err))
	} else {
		h.logger.Error("console: request failed", zap.String("path", r.URL.Path), errField(err))
	}
	h.status(w, r, http.StatusInternalServerError, "Something went wrong", "Nothing was changed that you did not see confirmed. Try again.")
}

func errField(err error) zap.Field { return zap.Error(err) }

func plural(n int64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.FormatInt(n, 10) + " " + what + "s"
}

// groupDigits writes n with thin spaces between thousands (1 234 567).
func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteString("\u202f")
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// staticFile serves the stylesheet and the one script (the copy button).
func staticFile(name, contentType string) http.HandlerFunc {
	body, err := staticFiles.ReadFile("static/" + name)
	return func(w http.ResponseWriter, r *http.Request) {
		if err != nil {
			http.Error(w, "Not Found", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Cache-Control", "public, max-age=3600")
		_, _ = w.Write(body)
	}
}
