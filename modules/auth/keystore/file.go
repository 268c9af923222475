package keystore

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"
)

// File is the hashed keys file, for gateways without PostgreSQL:
//
//	{"keys":[{"id":"key_…","org":"org_…","org_name":"acme","org_status":"active",
//	  "env":"live","tier":"enterprise","status":"active","sha256":"<hex>",
//	  "prefix":"cg_live_AbCd","created_at":"…"}]}
//
// `civicgate keys issue --file PATH …` appends entries; edits take effect on
// the next config load (caddy reload).
type File struct {
	Keys []FileKey `json:"keys"`
}

// FileKey is one hashed key of a File.
type FileKey struct {
	ID        string    `json:"id"`
	OrgID     string    `json:"org"`
	OrgName   string    `json:"org_name"`
	OrgStatus string    `json:"org_status"`
	Env       string    `json:"env"`
	Tier      string    `json:"tier"`
	Status    string    `json:"status"`
	SHA256    string    `json:"sha256"`
	Prefix    string    `json:"prefix"`
	CreatedAt time.Time `json:"created_at"`
}

// ReadFile reads a keys file; a missing file is an empty one.
func ReadFile(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &File{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("keystore: read keys file: %w", err)
	}
	var f File
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("keystore: keys file %s: %w", path, err)
	}
	return &f, nil
}

// Index maps each hash of the file to its record.
func (f *File) Index() (map[Hash]Record, error) {
	m := make(map[Hash]Record, len(f.Keys))
	for _, k := range f.Keys {
		h, err := ParseHash(k.SHA256)
		if err != nil {
			return nil, fmt.Errorf("keystore: key %s: %w", k.ID, err)
		}
		st := k.OrgStatus
		if st == "" {
			st = OrgActive
		}
		m[h] = Record{KeyID: k.ID, OrgID: k.OrgID, OrgName: k.OrgName, OrgStatus: st, Env: k.Env, Tier: k.Tier, Status: k.Status}
	}
	return m, nil
}

// IssueToFile appends a new key to the keys file at path (created 0600 if
// missing), applying the same live-key limit as the database.
func IssueToFile(path, org, tier, env string) (Issued, error) {
	if err := checkArgs(org, tier, env); err != nil {
		return Issued{}, err
	}
	f, err := ReadFile(path)
	if err != nil {
		return Issued{}, err
	}
	orgID, live := "", 0
	for _, k := range f.Keys {
		if k.OrgName == org {
			orgID = k.OrgID
			if k.Env == env && k.Status == StatusActive {
				live++
			}
		}
	}
	if live >= MaxLiveKeys {
		return Issued{}, ErrTooManyKeys
	}
	if orgID == "" {
		if orgID, err = newID("org_"); err != nil {
			return Issued{}, err
		}
	}
	key, err := NewKey(env)
	if err != nil {
		return Issued{}, err
	}
	id, err := newID("key_")
	if err != nil {
		return Issued{}, err
	}
	f.Keys = append(f.Keys, FileKey{ID: id, OrgID: orgID, OrgName: org, OrgStatus: OrgActive, Env: env, Tier: tier,
		Status: StatusActive, SHA256: HashKey(key).String(), Prefix: key[:PrefixLen], CreatedAt: now()})
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return Issued{}, fmt.Errorf("keystore: encode keys file: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return Issued{}, fmt.Errorf("keystore: write keys file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return Issued{}, fmt.Errorf("keystore: write keys file: %w", err)
	}
	return Issued{ID: id, OrgID: orgID, Key: key}, nil
}
