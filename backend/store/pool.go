package store

import "github.com/jackc/pgx/v5/pgxpool"

// ConfigurePool applies recordsd's session settings to a pool config unless the DSN already sets them:
// plan_cache_mode=auto, PostgreSQL's default, stated so that a server configured otherwise does not change it:
// unfiltered pages settle on their generic plans and filtered pages are planned for their values (plans.go);
// application_name=recordsd.
func ConfigurePool(cfg *pgxpool.Config) {
	rp := cfg.ConnConfig.RuntimeParams
	if _, set := rp["plan_cache_mode"]; !set {
		rp["plan_cache_mode"] = "auto"
	}
	if _, set := rp["application_name"]; !set {
		rp["application_name"] = "recordsd"
	}
}
