package store

import "github.com/jackc/pgx/v5/pgxpool"

// ConfigurePool applies recordsd's session settings to a pool config unless the DSN already sets them:
// plan_cache_mode=force_custom_plan, because filters are skewed (a rare congress, a common search term) and
// a generic plan chosen after five executions of a prepared statement can be 100× slower (bills(q:) with a
// common term: a full bitmap scan + sort instead of walking the order index); application_name=recordsd.
func ConfigurePool(cfg *pgxpool.Config) {
	rp := cfg.ConnConfig.RuntimeParams
	if _, set := rp["plan_cache_mode"]; !set {
		rp["plan_cache_mode"] = "force_custom_plan"
	}
	if _, set := rp["application_name"]; !set {
		rp["application_name"] = "recordsd"
	}
}
