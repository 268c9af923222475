package keystore

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// File is the hashed keys file, for gateways without PostgreSQL:
//
//	{"keys":[{"id":"key_…","org":"org_…","org_name":"acme","org_status":"active",
//	  "env":"live","tier":"enterprise","status":"active","sha256":"<hex>",
//	  "prefix":"cg_live_AbCd","created_at":"…"}]}
//
// plus, when set, "retired_at" and "rotates_out_at" (the end of a rotating
// key's overlap), and the key's lifecycle (docs/design.md D71):
// "expires_at", "name" and "labels" ({"team":"data"}). Every `civicgate keys … --file PATH` command edits it with
// the same rules as PostgreSQL (file_admin.go); a gateway reads it at
// provision and then again whenever it changes (modules/auth, filestore.go).
type File struct {
	Keys []FileKey `json:"keys"`
}

// FileKey is one hashed key of a File.
type FileKey struct {
	ID           string     `json:"id"`
	OrgID        string     `json:"org"`
	OrgName      string     `json:"org_name"`
	OrgStatus    string     `json:"org_status"`
	Env          string     `json:"env"`
	Tier         string     `json:"tier"`
	Status       string     `json:"status"`
	SHA256       string     `json:"sha256"`
	Prefix       string     `json:"prefix"`
	CreatedAt    time.Time  `json:"created_at"`
	RetiredAt    *time.Time `json:"retired_at,omitempty"`
	RotatesOutAt *time.Time `json:"rotates_out_at,omitempty"`
	// The key's lifecycle (Lifecycle): its expiry, name and labels.
	ExpiresAt *time.Time        `json:"expires_at,omitempty"`
	Name      string            `json:"name,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
}

// MaxFileSize bounds a keys file (about 200 000 keys): a larger file is
// refused rather than read into memory.
const MaxFileSize = 64 << 20

// ErrFileTooLarge is returned for a keys file over MaxFileSize.
var ErrFileTooLarge = fmt.Errorf("keystore: keys file over %d MiB", MaxFileSize>>20)

// ReadFile reads and checks the keys file at path. A missing file is an
// error (wrapping os.ErrNotExist): a gateway configured with a keys file
// that is not there would refuse every key.
func ReadFile(path string) (*File, error) {
	data, err := ReadFileData(path)
	if err != nil {
		return nil, err
	}
	return ParseFile(data)
}

// ReadFileData returns the content of the keys file at path, refusing a
// missing file (wrapping os.ErrNotExist) and one over MaxFileSize
// (ErrFileTooLarge) without reading more than MaxFileSize+1 bytes.
func ReadFileData(path string) ([]byte, error) {
	fh, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("keystore: keys file %s does not exist (create it with `civicgate keys issue --file %s …`): %w", path, path, os.ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("keystore: read keys file: %w", err)
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("keystore: read keys file %s: %w", path, err)
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("keystore: keys file %s: %w", path, ErrFileTooLarge)
	}
	return data, nil
}

// ParseFile decodes and checks a keys file's content: one JSON object with
// only known members, every key complete and consistent (Check). Its errors
// never quote the file's content (it holds hashes).
func ParseFile(data []byte) (*File, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, jsonError(err, dec.InputOffset())
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("keystore: keys file: data after the JSON object (byte %d)", dec.InputOffset())
	}
	if err := f.Check(); err != nil {
		return nil, err
	}
	return &f, nil
}

// jsonError describes a decoding error by position and kind only.
func jsonError(err error, offset int64) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return errors.New("keystore: keys file is empty (an empty store is {\"keys\":[]})")
	case errors.As(err, &syn):
		return fmt.Errorf("keystore: keys file: malformed JSON at byte %d", syn.Offset)
	case errors.As(err, &typ):
		return fmt.Errorf("keystore: keys file: %s has the wrong type (want %s) at byte %d", typ.Field, typ.Type, typ.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("keystore: keys file: truncated JSON at byte %d", offset)
	default:
		// Unknown members (DisallowUnknownFields) and bad timestamps: the
		// message may quote a name or a value, so only the position is kept.
		return fmt.Errorf("keystore: keys file: unknown member or invalid value before byte %d", offset)
	}
}

// Check verifies every key of f: an id and a hash (64 hex characters) that no
// other key has, a known environment, status and organization status, a tier
// name, an organization id and name that always go together, and a deadline
// on every rotating key. Errors name keys by id or position, never by hash.
func (f *File) Check() error {
	ids := make(map[string]struct{}, len(f.Keys))
	hashes := make(map[Hash]string, len(f.Keys))
	orgNames := make(map[string]string)
	orgIDs := make(map[string]string)
	for i, k := range f.Keys {
		if k.ID == "" {
			return fmt.Errorf("keystore: keys file: key %d has no id", i+1)
		}
		if _, dup := ids[k.ID]; dup {
			return fmt.Errorf("keystore: keys file: key id %s appears twice", k.ID)
		}
		ids[k.ID] = struct{}{}
		h, ok := parseHashQuiet(k.SHA256)
		if !ok {
			return fmt.Errorf("keystore: keys file: key %s: sha256 is not 64 hexadecimal characters", k.ID)
		}
		if other, dup := hashes[h]; dup {
			return fmt.Errorf("keystore: keys file: keys %s and %s have the same sha256", other, k.ID)
		}
		hashes[h] = k.ID
		switch {
		case !ValidEnv(k.Env):
			return fmt.Errorf("keystore: keys file: key %s: env must be live or test", k.ID)
		case !ValidTier(k.Tier):
			return fmt.Errorf("keystore: keys file: key %s: bad tier name", k.ID)
		case k.OrgID == "" || k.OrgName == "":
			return fmt.Errorf("keystore: keys file: key %s: org and org_name are required", k.ID)
		}
		switch k.Status {
		case StatusActive, StatusRevoked, StatusRotated:
		case StatusRotating:
			if k.RotatesOutAt == nil {
				return fmt.Errorf("keystore: keys file: key %s is rotating without rotates_out_at", k.ID)
			}
		default:
			return fmt.Errorf("keystore: keys file: key %s: status must be active, rotating, rotated or revoked", k.ID)
		}
		if err := checkNameAndLabels(k.Name, k.Labels); err != nil {
			return fmt.Errorf("keystore: keys file: key %s: %s", k.ID, strings.TrimPrefix(err.Error(), "keystore: "))
		}
		switch k.OrgStatus {
		case "", OrgActive, OrgSuspended, OrgDeleted:
		default:
			return fmt.Errorf("keystore: keys file: key %s: org_status must be active, suspended or deleted", k.ID)
		}
		if n, ok := orgNames[k.OrgID]; ok && n != k.OrgName {
			return fmt.Errorf("keystore: keys file: organization %s has two names", k.OrgID)
		}
		if id, ok := orgIDs[k.OrgName]; ok && id != k.OrgID {
			return fmt.Errorf("keystore: keys file: organization name of key %s is used by two organization ids", k.ID)
		}
		orgNames[k.OrgID], orgIDs[k.OrgName] = k.OrgName, k.OrgID
	}
	return nil
}

func parseHashQuiet(s string) (Hash, bool) {
	var h Hash
	if len(s) != 2*len(h) {
		return h, false
	}
	if _, err := hex.Decode(h[:], []byte(s)); err != nil {
		return h, false
	}
	return h, true
}

// Index maps each hash of the file to its record (the file must have passed
// Check, as ReadFile's and ParseFile's results have).
func (f *File) Index() (map[Hash]Record, error) {
	m := make(map[Hash]Record, len(f.Keys))
	for _, k := range f.Keys {
		h, ok := parseHashQuiet(k.SHA256)
		if !ok {
			return nil, fmt.Errorf("keystore: keys file: key %s: sha256 is not 64 hexadecimal characters", k.ID)
		}
		st := k.OrgStatus
		if st == "" {
			st = OrgActive
		}
		r := Record{KeyID: k.ID, OrgID: k.OrgID, OrgName: k.OrgName, OrgStatus: st, Env: k.Env, Tier: k.Tier, Status: k.Status}
		if k.Status == StatusRotating && k.RotatesOutAt != nil {
			r.RotatesOut = *k.RotatesOutAt
		}
		if k.ExpiresAt != nil {
			r.ExpiresAt = *k.ExpiresAt
		}
		r.Name = k.Name
		if len(k.Labels) > 0 {
			r.Labels = k.Labels
		}
		m[h] = r
	}
	return m, nil
}
