-- 0103: less index upkeep per imported budget line (docs/design.md D30). An OMB edition is ~204 000
-- lines; each one was written into eight indexes, two of them useless for its dataset.
-- * budget_edition_idx (0102) goes: a database holds a few editions, so "edition = X" is a filter on the order
--   index (budget_order_idx), not worth an index entry per line.
-- * the month index only ever serves OUTLAYS lines (month is NULL on every APPROPRIATIONS line) and the bureau
--   index only APPROPRIATIONS lines (bureau_code is NULL on every OUTLAYS line): both become partial on the
--   column being set. `month = $1` and `bureau_code = $1` imply it, so the same queries use them.
DROP INDEX IF EXISTS budget_edition_idx;
DROP INDEX IF EXISTS budget_month_idx;
CREATE INDEX IF NOT EXISTS budget_month_set_idx ON federal_budget_lines (dataset, month, fiscal_year DESC, sort_month DESC, id DESC)
    WHERE deleted_at IS NULL AND month IS NOT NULL;
DROP INDEX IF EXISTS budget_bureau_idx;
CREATE INDEX IF NOT EXISTS budget_bureau_set_idx ON federal_budget_lines (dataset, bureau_code, fiscal_year DESC, sort_month DESC, id DESC)
    WHERE deleted_at IS NULL AND bureau_code IS NOT NULL;
