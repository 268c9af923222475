package congressgov

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/civicgate/civicgate/backend/mirror"
)

// SkippedFile is the note kind of a file the importer does not read (docs/design.md D31).
const SkippedFile = "skipped_file"

// readWithBill are the sub-resources read with their bill's `X.json`; otherSubResources are the
// Congress.gov bill sub-resources this importer has no field for: a saved `X_actions.json` and the like are
// skipped with a note, not an error (a folder as a user downloads it holds them).
var (
	readWithBill      = []string{"committees", "titles"}
	otherSubResources = []string{"actions", "amendments", "cosponsors", "relatedbills", "subjects", "summaries", "text"}
)

// subResource returns the sub-resource a file name is of ("" for none) and whether it is read with its bill.
func subResource(base string) (string, bool) {
	stem := strings.TrimSuffix(base, ".json")
	for _, s := range readWithBill {
		if strings.HasSuffix(stem, "_"+s) {
			return s, true
		}
	}
	for _, s := range otherSubResources {
		if strings.HasSuffix(stem, "_"+s) {
			return s, false
		}
	}
	return "", false
}

// ParseFiles reads saved API responses: path is one JSON file or a directory of them (subdirectories
// included, in name order). A bill detail file `X.json` ({"bill":…}) is combined with its sibling
// sub-resources `X_committees.json` and `X_titles.json` when present; other sub-resource files
// (`X_actions.json`, `X_cosponsors.json`, `X_text.json`, `X_summaries.json`, …) are skipped with a note; a list
// page ({"bills":[…]}) contributes the listed bills that have no detail file (noted: their title is the list's).
func ParseFiles(path string) ([]mirror.Item, error) {
	files, err := jsonFiles(path)
	if err != nil {
		return nil, err
	}
	var details, lists []mirror.Item
	covered := map[string]bool{}
	for _, f := range files {
		base := filepath.Base(f)
		sub, withBill := subResource(base)
		if withBill {
			continue // read with their bill
		}
		if sub != "" {
			details = append(details, mirror.Item{Pos: base, NoteKind: SkippedFile,
				Note: fmt.Sprintf("skipped: the %s sub-resource has no field in the bills mirror", sub)})
			continue
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
			lists = append(lists, listFromFile(base, raw)...)
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

// jsonFiles lists path (a file) or every *.json under path (a directory), sorted.
func jsonFiles(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("congressgov: %w", err)
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	var files []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".json") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("congressgov: list %s: %w", path, err)
	}
	sort.Strings(files)
	return files, nil
}

func listFromFile(base string, raw []byte) []mirror.Item {
	_, items, err := decodeList(raw)
	if err != nil {
		return []mirror.Item{{Pos: base, Err: err}}
	}
	var out []mirror.Item
	for i, rawItem := range items {
		pos := fmt.Sprintf("%s bills[%d]", base, i)
		var li listItem
		if err := json.Unmarshal(rawItem, &li); err != nil {
			out = append(out, mirror.Item{Pos: pos, Err: err})
			continue
		}
		b, err := fromListItem(&li)
		if err != nil {
			out = append(out, mirror.Item{Pos: pos, Err: err})
			continue
		}
		out = append(out, withNote(mirror.Item{Pos: pos, Rec: b}, "officialTitle is the list page's title: no detail file"))
	}
	return out
}

func withNote(it mirror.Item, note string) mirror.Item {
	if note != "" {
		it.Note, it.NoteKind = note, TitleFallback
	}
	return it
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
	b, note, err := fromDetail(d.Bill, com, tit)
	if err != nil {
		return mirror.Item{Pos: base, Err: err}
	}
	return withNote(mirror.Item{Pos: base, Rec: b}, note)
}
