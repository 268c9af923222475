// Package usageadmin is the admin.api.civic_usage module: the answers of
// `civicgate usage` (package usagecmd) as JSON on Caddy's admin endpoint,
// the operator's (docs/design.md D70). It is a thin shell: the questions
// are read from the URL query, the answers are usagecmd's.
//
//	GET /civicgate/usage/operations?org=ORG[&key=K][&since=24h]
//	GET /civicgate/usage/fields?org=ORG[&key=K][&since=24h]
//	GET /civicgate/usage/deprecated?org=ORG[&since=24h]
//	GET /civicgate/usage/coordinate?coordinate=Type.field[&since=24h]
//	POST /civicgate/usage/unused[?since=24h]   body: the schema (SDL), at most 4 MiB
//
// The database is DATABASE_URL, as for the command, opened on first use.
package usageadmin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/internal/clirun"
	"github.com/civicgate/civicgate/modules/ratelimit/usage"
	"github.com/civicgate/civicgate/modules/ratelimit/usagecmd"
)

func init() { caddy.RegisterModule(AdminAPI{}) }

// AdminAPI is the admin.api.civic_usage module.
type AdminAPI struct{}

// CaddyModule returns the Caddy module information.
func (AdminAPI) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "admin.api.civic_usage", New: func() caddy.Module { return new(AdminAPI) }}
}

// Prefix is where the routes live on the admin endpoint.
const Prefix = "/civicgate/usage/"

// maxSchema bounds the body of POST unused.
const maxSchema = 4 << 20

// Routes returns the one route under Prefix.
func (AdminAPI) Routes() []caddy.AdminRoute {
	return []caddy.AdminRoute{{Pattern: Prefix, Handler: caddy.AdminHandlerFunc(serve)}}
}

// pools is the process's pool over DATABASE_URL, kept across config
// loads (Caddy makes a new AdminAPI at each one and never cleans it up).
var pools struct {
	sync.Mutex
	dsn  string
	pool *pgxpool.Pool
}

func pool() (*pgxpool.Pool, error) {
	pools.Lock()
	defer pools.Unlock()
	dsn := os.Getenv("DATABASE_URL")
	if pools.pool != nil && pools.dsn == dsn {
		return pools.pool, nil
	}
	p, err := clirun.OpenPool(context.Background(), func(string) string { return dsn })
	if err != nil {
		return nil, err
	}
	if pools.pool != nil {
		pools.pool.Close()
	}
	pools.dsn, pools.pool = dsn, p
	return p, nil
}

func serve(w http.ResponseWriter, r *http.Request) error {
	q, err := question(r)
	if err != nil {
		return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: err}
	}
	if err := q.Check(); err != nil {
		return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: err}
	}
	p, err := pool()
	if err != nil {
		return caddy.APIError{HTTPStatus: http.StatusServiceUnavailable, Err: errors.New("usage database not configured (DATABASE_URL)")}
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	a, err := usagecmd.Answer(ctx, p, q)
	switch {
	case errors.Is(err, usage.ErrUnknownOrg):
		return caddy.APIError{HTTPStatus: http.StatusNotFound, Err: fmt.Errorf("no organization %q", q.Org)}
	case errors.Is(err, usage.ErrBadQuery), errors.Is(err, usagecmd.ErrBadQuestion):
		return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: err}
	case errors.Is(err, usage.ErrNotMigrated):
		return caddy.APIError{HTTPStatus: http.StatusServiceUnavailable, Err: errors.New("the usage tables do not exist (run `civicgate keys migrate`)")}
	case err != nil:
		// the cause is logged without the DSN (pgx errors carry none); the
		// answer says only that it failed
		caddy.Log().Named("civic_usage").Error("usage answer failed", zap.String("question", q.Kind), zap.String("error", err.Error()))
		return caddy.APIError{HTTPStatus: http.StatusInternalServerError, Err: errors.New("usage query failed")}
	}
	w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(w).Encode(a)
}

// question reads the question of r: its kind from the path, the rest from
// the URL query (and, for unused, the body).
func question(r *http.Request) (usagecmd.Question, error) {
	q := usagecmd.Question{Kind: strings.TrimPrefix(r.URL.Path, Prefix)}
	vals := r.URL.Query()
	for name := range vals {
		switch name {
		case "org", "key", "since", "coordinate":
		default:
			return q, fmt.Errorf("%w: unknown parameter %q (org, key, since, coordinate)", usagecmd.ErrBadQuestion, name)
		}
		if len(vals[name]) > 1 {
			return q, fmt.Errorf("%w: parameter %q given twice", usagecmd.ErrBadQuestion, name)
		}
	}
	q.Org, q.KeyID, q.Coordinate = vals.Get("org"), vals.Get("key"), vals.Get("coordinate")
	var err error
	if q.Since, err = usagecmd.ParseSince(vals.Get("since")); err != nil {
		return q, err
	}
	wantMethod := http.MethodGet
	if q.Kind == usagecmd.KindUnused {
		wantMethod = http.MethodPost
	}
	if r.Method != wantMethod {
		return q, fmt.Errorf("%w: %s takes %s", usagecmd.ErrBadQuestion, q.Kind, wantMethod)
	}
	if q.Kind == usagecmd.KindUnused {
		sdl, err := io.ReadAll(io.LimitReader(r.Body, maxSchema+1))
		if err != nil {
			return q, fmt.Errorf("%w: reading the schema: %w", usagecmd.ErrBadQuestion, err)
		}
		if len(sdl) > maxSchema {
			return q, fmt.Errorf("%w: schema larger than 4 MiB", usagecmd.ErrBadQuestion)
		}
		if q.Schema, err = usagecmd.SchemaCoordinates("schema", string(sdl)); err != nil {
			return q, err
		}
	}
	return q, nil
}

// Interface guards
var _ caddy.AdminRouter = AdminAPI{}
