package congressgov

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/civicgate/civicgate/backend/mirror"
	"github.com/civicgate/civicgate/backend/mirror/fetch"
)

// KeyEnv is the environment variable holding the Congress.gov API key (sent as api_key).
const KeyEnv = "CONGRESS_GOV_API_KEY"

// API pages through a bill list endpoint (e.g. https://api.congress.gov/v3/bill/118) with offset/limit and
// fetches every listed bill's detail, committees and titles from the same API root (never from URLs in the
// response, so the key only goes to the configured host). The cursor is the next offset.
type API struct {
	Client   *fetch.Client
	ListURL  string
	PageSize int // ≤ 250
	offset   int
	done     bool
}

// NewAPI starts at cursor (an offset; "" = 0).
func NewAPI(c *fetch.Client, listURL, cursor string, pageSize int) (*API, error) {
	a := &API{Client: c, ListURL: strings.TrimRight(listURL, "/"), PageSize: pageSize}
	if a.PageSize <= 0 || a.PageSize > 250 {
		a.PageSize = 250
	}
	if cursor != "" {
		n, err := strconv.Atoi(cursor)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("congressgov: bad cursor %q", cursor)
		}
		a.offset = n
	}
	if !strings.Contains(a.ListURL, "/bill") {
		return nil, fmt.Errorf("congressgov: --url must be a bill list endpoint such as https://api.congress.gov/v3/bill")
	}
	return a, nil
}

// Family implements mirror.Source.
func (a *API) Family() mirror.Family { return mirror.Bills }

// Name implements mirror.Source.
func (a *API) Name() string { return SourceName }

// Next implements mirror.Source: one list page with every bill's details.
func (a *API) Next(ctx context.Context) (mirror.Chunk, error) {
	if a.done {
		return mirror.Chunk{}, io.EOF
	}
	u, err := url.Parse(a.ListURL)
	if err != nil {
		return mirror.Chunk{}, fmt.Errorf("congressgov: list url: %w", err)
	}
	q := u.Query()
	q.Set("format", "json")
	q.Set("offset", strconv.Itoa(a.offset))
	q.Set("limit", strconv.Itoa(a.PageSize))
	u.RawQuery = q.Encode()
	raw, err := a.Client.Get(ctx, u.String())
	if err != nil {
		return mirror.Chunk{}, err
	}
	page, items, err := decodeList(raw)
	if err != nil {
		return mirror.Chunk{}, fmt.Errorf("congressgov: list page at offset %d: %w", a.offset, err)
	}
	if len(items) == 0 {
		return mirror.Chunk{}, io.EOF
	}
	ch := mirror.Chunk{}
	for i, rawItem := range items {
		pos := fmt.Sprintf("bills[%d] of page at offset %d", i, a.offset)
		var li listItem
		if err := json.Unmarshal(rawItem, &li); err != nil {
			ch.Items = append(ch.Items, mirror.Item{Pos: pos, Err: err})
			continue
		}
		it, err := a.bill(ctx, pos, &li)
		if err != nil {
			return mirror.Chunk{}, err
		}
		ch.Items = append(ch.Items, it)
	}
	a.offset += len(items)
	ch.Cursor = strconv.Itoa(a.offset)
	if page.Pagination.Next == "" {
		a.done = true
	}
	return ch, nil
}

// bill fetches one bill's detail and sub-resources. A bill the API no longer has (404) is a malformed item;
// any other failure aborts the chunk (the run resumes at this page).
func (a *API) bill(ctx context.Context, pos string, li *listItem) (mirror.Item, error) {
	typ, n, err := key(li.Congress, li.Type, li.Number)
	if err != nil {
		return mirror.Item{Pos: pos, Err: err}, nil
	}
	root := a.ListURL[:strings.Index(a.ListURL, "/bill")]
	billURL := fmt.Sprintf("%s/bill/%d/%s/%d", root, li.Congress, typ, n)
	var d detailDoc
	if err := a.getJSON(ctx, billURL, &d); err != nil {
		var se *fetch.StatusError
		if errors.As(err, &se) && se.Status == http.StatusNotFound {
			return mirror.Item{Pos: pos, Err: err}, nil
		}
		return mirror.Item{}, err
	}
	if d.Bill == nil {
		return mirror.Item{Pos: pos, Err: errors.New("detail has no bill")}, nil
	}
	var com committeesDoc
	if d.Bill.Committees.Count > 0 || d.Bill.Committees.URL != "" {
		if err := a.getJSON(ctx, billURL+"/committees", &com); err != nil {
			return mirror.Item{}, err
		}
	}
	var tit titlesDoc
	if d.Bill.Titles.Count > 0 || d.Bill.Titles.URL != "" {
		if err := a.getJSON(ctx, billURL+"/titles", &tit); err != nil {
			return mirror.Item{}, err
		}
	}
	b, note, err := fromDetail(d.Bill, &com, &tit)
	if err != nil {
		return mirror.Item{Pos: pos, Err: err}, nil
	}
	return withNote(mirror.Item{Pos: pos, Rec: b}, note), nil
}

func (a *API) getJSON(ctx context.Context, u string, v any) error {
	raw, err := a.Client.Get(ctx, u+"?format=json")
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("congressgov: %s: %w", u, err)
	}
	return nil
}
