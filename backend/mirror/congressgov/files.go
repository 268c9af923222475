package congressgov

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/civicgate/civicgate/backend/mirror"
)

// ParseFiles reads saved API responses: path is one JSON file or a directory of them. A bill detail file
// `X.json` ({"bill":…}) is combined with its sibling sub-resources `X_committees.json` and `X_titles.json`
// when present; a list page ({"bills":[…]}) contributes the listed bills that have no detail file.
func ParseFiles(path string) ([]mirror.Item, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("congressgov: %w", err)
	}
	var files []string
	if st.IsDir() {
		files, err = filepath.Glob(filepath.Join(path, "*.json"))
		if err != nil {
			return nil, fmt.Errorf("congressgov: list %s: %w", path, err)
		}
		sort.Strings(files)
	} else {
		files = []string{path}
	}
	var details, lists []mirror.Item
	covered := map[string]bool{}
	for _, f := range files {
		base := filepath.Base(f)
		if strings.HasSuffix(base, "_committees.json") || strings.HasSuffix(base, "_titles.json") {
			continue // read with their bill
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("congressgov: %w", err)
		}
		var probe map[string]json.RawMessage
		if err := json.Unmarshal(raw, &probe); err != nil {
			details = append(details, mirror.Item{Pos: base, Err: fmt.Errorf("not a JSON object: %w", err)})
			continue
		}
		switch {
		case probe["bill"] != nil:
			it := detailFromFile(f, raw)
			if it.Rec != nil {
				covered[it.Rec.RecordID()] = true
			}
			details = append(details, it)
		case probe["bills"] != nil:
			page, items, err := decodeList(raw)
			_ = page
			if err != nil {
				lists = append(lists, mirror.Item{Pos: base, Err: err})
				continue
			}
			for i, rawItem := range items {
				pos := fmt.Sprintf("%s bills[%d]", base, i)
				var li listItem
				if err := json.Unmarshal(rawItem, &li); err != nil {
					lists = append(lists, mirror.Item{Pos: pos, Err: err})
					continue
				}
				b, err := fromListItem(&li)
				if err != nil {
					lists = append(lists, mirror.Item{Pos: pos, Err: err})
					continue
				}
				lists = append(lists, mirror.Item{Pos: pos, Rec: b})
			}
		default:
			details = append(details, mirror.Item{Pos: base, Err: fmt.Errorf("neither a bill ({\"bill\":…}) nor a bill list ({\"bills\":[…]})")})
		}
	}
	out := details
	for _, it := range lists {
		if it.Rec != nil && covered[it.Rec.RecordID()] {
			continue
		}
		out = append(out, it)
	}
	return out, nil
}

func detailFromFile(f string, raw []byte) mirror.Item {
	base := filepath.Base(f)
	var d detailDoc
	if err := json.Unmarshal(raw, &d); err != nil {
		return mirror.Item{Pos: base, Err: err}
	}
	stem := strings.TrimSuffix(f, ".json")
	var com *committeesDoc
	if b, err := os.ReadFile(stem + "_committees.json"); err == nil {
		com = &committeesDoc{}
		if err := json.Unmarshal(b, com); err != nil {
			return mirror.Item{Pos: filepath.Base(stem) + "_committees.json", Err: err}
		}
	}
	var tit *titlesDoc
	if b, err := os.ReadFile(stem + "_titles.json"); err == nil {
		tit = &titlesDoc{}
		if err := json.Unmarshal(b, tit); err != nil {
			return mirror.Item{Pos: filepath.Base(stem) + "_titles.json", Err: err}
		}
	}
	b, err := fromDetail(d.Bill, com, tit)
	if err != nil {
		return mirror.Item{Pos: base, Err: err}
	}
	return mirror.Item{Pos: base, Rec: b}
}
