package mirror_test

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/civicgate/civicgate/backend/migrations"
	"github.com/civicgate/civicgate/backend/mirror"
	"github.com/civicgate/civicgate/backend/records"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/jackc/pgx/v5/pgxpool"
)

func newDB(t testing.TB) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 12
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := migrations.Apply(ctx, pool); err != nil {
		t.Fatal(err)
	}
	return pool
}

func bill(n int, title string) mirror.Item {
	return mirror.Item{Pos: fmt.Sprint(n), Rec: &mirror.Bill{Bill: records.Bill{ID: fmt.Sprintf("hr%d-118", n), Congress: 118, Type: "hr", Number: n, OfficialTitle: title}}}
}

// Concurrent sync writers never make the change feed skip: a reader polling `id > cursor` sees every
// committed event exactly once, even though ids are drawn concurrently.
func TestFeedNeverSkipsWithConcurrentWriters(t *testing.T) {
	pool := newDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const writers, perWriter = 6, 60
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		go func(w int) {
			var items []mirror.Item
			for i := 0; i < perWriter; i++ {
				items = append(items, bill(w*1000+i+1, fmt.Sprintf("writer %d bill %d", w, i)))
			}
			src := &mirror.ItemsSource{Fam: mirror.Bills, Src: fmt.Sprintf("writer%d", w), Items: items, BatchSize: 3}
			_, err := mirror.New(pool).Run(ctx, src, mirror.Options{})
			errs <- err
		}(w)
	}
	seen := map[int64]int{}
	var cursor int64
	done := 0
	poll := func() {
		rows, err := pool.Query(ctx, `SELECT id FROM change_events WHERE id > $1 AND family = ANY($2) ORDER BY id`, cursor, []string{"bills"})
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			seen[id]++
			cursor = id
		}
	}
	for done < writers {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatal(err)
			}
			done++
		default:
			poll()
		}
	}
	poll()
	var total int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM change_events`).Scan(&total); err != nil {
		t.Fatal(err)
	}
	if total != writers*perWriter || len(seen) != total {
		t.Fatalf("events %d, reader saw %d distinct", total, len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("event %d seen %d times", id, n)
		}
	}
}

// A source error mid-way rolls back only the chunk being written.
type failingSource struct {
	mirror.ItemsSource
	after int
	n     int
}

func (f *failingSource) Next(ctx context.Context) (mirror.Chunk, error) {
	f.n++
	if f.n > f.after {
		return mirror.Chunk{}, io.ErrUnexpectedEOF
	}
	return f.ItemsSource.Next(ctx)
}

func TestSourceErrorKeepsCommittedChunks(t *testing.T) {
	pool := newDB(t)
	src := &failingSource{ItemsSource: mirror.ItemsSource{Fam: mirror.Bills, Src: "t", Items: []mirror.Item{bill(1, "a"), bill(2, "b"), bill(3, "c")}, BatchSize: 2}, after: 1}
	st, err := mirror.New(pool).Run(context.Background(), src, mirror.Options{})
	if err == nil || st.Created != 2 {
		t.Fatalf("%+v %v", st, err)
	}
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM bills`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("bills %d %v", n, err)
	}
}

// A row that exists but was never synced (e.g. seeded) is reported as updated with every field.
func TestSeededRowIsUpdated(t *testing.T) {
	pool := newDB(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO bills (id, congress, type, number, official_title) VALUES ('hr1-118', 118, 'hr', 1, 'old')`); err != nil {
		t.Fatal(err)
	}
	st, err := mirror.New(pool).Run(ctx, &mirror.ItemsSource{Fam: mirror.Bills, Src: "t", Items: []mirror.Item{bill(1, "new")}}, mirror.Options{})
	if err != nil || st.Updated != 1 {
		t.Fatalf("%+v %v", st, err)
	}
	var typ, title string
	if err := pool.QueryRow(ctx, `SELECT e.type, b.official_title FROM change_events e JOIN bills b ON b.id = e.record_id`).Scan(&typ, &title); err != nil || typ != "updated" || title != "new" {
		t.Fatalf("%q %q %v", typ, title, err)
	}
}
