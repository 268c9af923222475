package keystore

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// The administrative operations on a keys file, with the rules of admin.go:
// at most MaxLiveKeys live (active or rotating) keys per organization and
// environment, rotation with an overlap, revoke refusing a revoked key, a
// deleted organization refused. Each edit holds an exclusive lock on
// PATH.lock (so two commands never lose each other's key), reads and checks
// the file, and replaces it atomically (a temporary file in the same
// directory, synced, renamed over it; mode 0600), so a gateway reading it
// sees the old or the new content, never half of one.

// IssueToFile appends a new key to the keys file at path (created 0600 if
// missing), applying the same live-key limit as the database, with no name,
// labels or expiry (IssueToFileWith).
func IssueToFile(path, org, tier, env string) (Issued, error) {
	return IssueToFileWith(path, IssueSpec{Org: org, Tier: tier, Env: env})
}

// IssueToFileWith is IssueWith on the keys file at path.
func IssueToFileWith(path string, spec IssueSpec) (Issued, error) {
	org, tier, env := spec.Org, spec.Tier, spec.Env
	if err := checkArgs(org, tier, env); err != nil {
		return Issued{}, err
	}
	if err := spec.Lifecycle.Check(now()); err != nil {
		return Issued{}, err
	}
	var out Issued
	err := updateFile(path, true, func(f *File, t time.Time) error {
		orgID, err := f.org(org)
		if errors.Is(err, ErrNoSuchOrg) {
			if orgID, err = newID("org_"); err != nil {
				return err
			}
		} else if err != nil {
			return err
		}
		if f.live(orgID, env, t) >= MaxLiveKeys {
			return ErrTooManyKeys
		}
		out, err = f.add(orgID, org, tier, env, t, spec.Lifecycle)
		return err
	})
	return out, err
}

// RotateFile is Rotate on the keys file at path.
func RotateFile(path string, spec RotateSpec) (Rotation, error) {
	if err := spec.check(); err != nil {
		return Rotation{}, err
	}
	var out Rotation
	err := updateFile(path, false, func(f *File, t time.Time) error {
		orgID, err := f.org(spec.Org)
		if err != nil {
			return err
		}
		var active, rotating []int
		for _, i := range f.byAge(orgID, spec.Env) {
			if f.Keys[i].expired(t) { // not live: neither rotated nor counted
				continue
			}
			switch f.Keys[i].Status {
			case StatusActive:
				active = append(active, i)
			case StatusRotating:
				rotating = append(rotating, i)
			}
		}
		if len(active) == 0 {
			return ErrNothingToRotate
		}
		if spec.Overlap > 0 && len(active) >= MaxLiveKeys {
			return ErrNoOverlapSlot
		}
		retire := func(i int) {
			f.Keys[i].Status, f.Keys[i].RetiredAt = StatusRotated, &t
			out.RotatedOut = append(out.RotatedOut, f.Keys[i].ID)
		}
		for _, i := range rotating {
			retire(i)
		}
		old := &f.Keys[active[0]]
		tier := spec.Tier
		if tier == "" {
			tier = old.Tier
		}
		if spec.Overlap == 0 {
			retire(active[0])
		} else {
			until := t.Add(spec.Overlap)
			old.Status, old.RotatesOutAt = StatusRotating, &until
			out.Rotating, out.Until = old.ID, until
		}
		// The new key keeps the old one's name, labels and expiry (Rotate).
		out.Issued, err = f.add(orgID, spec.Org, tier, spec.Env, t, old.lifecycle())
		return err
	})
	return out, err
}

// RevokeFile is Revoke on the keys file at path.
func RevokeFile(path, keyID string) (Revocation, error) {
	var out Revocation
	err := updateFile(path, false, func(f *File, t time.Time) error {
		for i := range f.Keys {
			k := &f.Keys[i]
			if k.ID != keyID {
				continue
			}
			if k.Status == StatusRevoked {
				return &AlreadyRevokedError{KeyID: keyID, At: k.RetiredAt}
			}
			out = Revocation{KeyID: keyID, Was: k.Status}
			if k.Status == StatusRotating {
				out.Was = effectiveStatus(k.Status, *k.RotatesOutAt, t)
			}
			if k.ExpiresAt != nil {
				out.Was = lifeStatus(out.Was, *k.ExpiresAt, t)
			}
			k.Status, k.RetiredAt = StatusRevoked, retiredAt(k, t)
			return nil
		}
		return ErrNoSuchKey
	})
	return out, err
}

// SetOrgStatusFile is SetOrgStatus on the keys file at path.
func SetOrgStatusFile(path, org, status string) error {
	if status != OrgActive && status != OrgSuspended {
		return fmt.Errorf("keystore: bad organization status %q", status)
	}
	return updateFile(path, false, func(f *File, _ time.Time) error {
		orgID, err := f.org(org)
		if err != nil {
			return err
		}
		for i := range f.Keys {
			if f.Keys[i].OrgID == orgID {
				f.Keys[i].OrgStatus = status
			}
		}
		return nil
	})
}

// DeleteOrgFile is DeleteOrg on the keys file at path: the organization's
// keys are revoked and it is marked deleted (a keys file has no webhooks).
func DeleteOrgFile(path, org string) (Deletion, error) {
	var out Deletion
	err := updateFile(path, false, func(f *File, t time.Time) error {
		orgID, err := f.org(org)
		if err != nil {
			return err
		}
		out = Deletion{OrgID: orgID}
		for i := range f.Keys {
			k := &f.Keys[i]
			if k.OrgID != orgID {
				continue
			}
			if k.Status != StatusRevoked {
				k.Status, k.RetiredAt = StatusRevoked, retiredAt(k, t)
				out.Revoked++
			}
			k.OrgStatus = OrgDeleted
		}
		return nil
	})
	return out, err
}

// ListFile is List on the keys file at path.
func ListFile(path string, filter ListFilter) ([]KeyInfo, error) {
	f, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	t := now()
	var out []KeyInfo
	for _, k := range f.Keys {
		info := KeyInfo{ID: k.ID, Org: k.OrgName, OrgStatus: k.OrgStatus, Env: k.Env, Tier: k.Tier, Prefix: k.Prefix,
			Status: k.Status, CreatedAt: k.CreatedAt, RetiredAt: k.RetiredAt, RotatesOutAt: k.RotatesOutAt,
			ExpiresAt: k.ExpiresAt, Name: k.Name, Labels: k.Labels}
		if info.OrgStatus == "" {
			info.OrgStatus = OrgActive
		}
		if k.Status == StatusRotating {
			if info.Status = effectiveStatus(k.Status, *k.RotatesOutAt, t); info.Status == StatusRotated {
				info.RetiredAt = k.RotatesOutAt
			}
		}
		if k.ExpiresAt != nil {
			info.Status = lifeStatus(info.Status, *k.ExpiresAt, t)
		}
		info.RotatesOutAt = rotatesOut(info)
		if !filter.keep(info, t) {
			continue
		}
		out = append(out, info)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Org != out[j].Org {
			return out[i].Org < out[j].Org
		}
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// retiredAt is when k stopped (or stops) being accepted when retired at t: a
// rotating key past its overlap stopped at its deadline.
func retiredAt(k *FileKey, t time.Time) *time.Time {
	if k.RetiredAt != nil {
		return k.RetiredAt
	}
	if k.Status == StatusRotating && k.RotatesOutAt != nil && !t.Before(*k.RotatesOutAt) {
		return k.RotatesOutAt
	}
	return &t
}

// org returns the id of the organization named name, refusing a deleted one.
func (f *File) org(name string) (string, error) {
	for _, k := range f.Keys {
		if k.OrgName == name {
			if k.OrgStatus == OrgDeleted {
				return "", orgDeleted(name, nil)
			}
			return k.OrgID, nil
		}
	}
	return "", ErrNoSuchOrg
}

// expire records as rotated out the rotating keys whose overlap ended by t.
func (f *File) expire(t time.Time) {
	for i := range f.Keys {
		k := &f.Keys[i]
		if k.Status == StatusRotating && !t.Before(*k.RotatesOutAt) {
			k.Status, k.RetiredAt = StatusRotated, k.RotatesOutAt
		}
	}
}

// live counts the organization's live keys in env at t: active or rotating
// within its overlap, and not expired.
func (f *File) live(orgID, env string, t time.Time) int {
	n := 0
	for _, k := range f.Keys {
		if k.OrgID == orgID && k.Env == env && !k.expired(t) &&
			(k.Status == StatusActive || k.Status == StatusRotating && t.Before(*k.RotatesOutAt)) {
			n++
		}
	}
	return n
}

// expired reports whether k's expiry has come at t.
func (k *FileKey) expired(t time.Time) bool { return k.ExpiresAt != nil && !t.Before(*k.ExpiresAt) }

// lifecycle is k's name, labels and expiry.
func (k *FileKey) lifecycle() Lifecycle {
	l := Lifecycle{Name: k.Name, Labels: k.Labels}
	if k.ExpiresAt != nil {
		l.ExpiresAt = *k.ExpiresAt
	}
	return l
}

// byAge returns the indexes of the organization's keys in env, oldest first.
func (f *File) byAge(orgID, env string) []int {
	var idx []int
	for i, k := range f.Keys {
		if k.OrgID == orgID && k.Env == env {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool {
		ka, kb := f.Keys[idx[a]], f.Keys[idx[b]]
		if !ka.CreatedAt.Equal(kb.CreatedAt) {
			return ka.CreatedAt.Before(kb.CreatedAt)
		}
		return ka.ID < kb.ID
	})
	return idx
}

// add appends a new active key with lifecycle l and returns it (shown once).
func (f *File) add(orgID, org, tier, env string, t time.Time, l Lifecycle) (Issued, error) {
	key, err := NewKey(env)
	if err != nil {
		return Issued{}, err
	}
	id, err := newID("key_")
	if err != nil {
		return Issued{}, err
	}
	fk := FileKey{ID: id, OrgID: orgID, OrgName: org, OrgStatus: OrgActive, Env: env, Tier: tier,
		Status: StatusActive, SHA256: HashKey(key).String(), Prefix: key[:PrefixLen], CreatedAt: t, Name: l.Name}
	if len(l.Labels) > 0 {
		fk.Labels = maps.Clone(l.Labels)
	}
	if !l.ExpiresAt.IsZero() {
		e := l.ExpiresAt.UTC()
		fk.ExpiresAt = &e
	}
	f.Keys = append(f.Keys, fk)
	return Issued{ID: id, OrgID: orgID, Key: key}, nil
}

// updateFile runs edit on the keys file at path under its lock and writes the
// result back atomically. A missing file is an empty one only when create.
// Rotating keys past their overlap are recorded as rotated out first.
func updateFile(path string, create bool, edit func(f *File, t time.Time) error) error {
	unlock, err := lockFile(path + ".lock")
	if err != nil {
		return fmt.Errorf("keystore: lock keys file: %w", err)
	}
	defer unlock()
	f, err := ReadFile(path)
	if create && errors.Is(err, os.ErrNotExist) {
		f, err = &File{Keys: []FileKey{}}, nil
	}
	if err != nil {
		return err
	}
	t := now()
	f.expire(t)
	if err := edit(f, t); err != nil {
		return err
	}
	if err := f.Check(); err != nil {
		return err
	}
	return writeFile(path, f)
}

// writeFile replaces path with f: a temporary file in the same directory,
// synced, then renamed over it.
func writeFile(path string, f *File) error {
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("keystore: encode keys file: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("keystore: write keys file: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename: a no-op
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("keystore: write keys file: %w", err)
	}
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("keystore: write keys file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("keystore: write keys file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("keystore: write keys file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("keystore: write keys file: %w", err)
	}
	return nil
}
