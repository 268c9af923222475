package keystore

import (
	"errors"
	"fmt"
	"time"
)

// The refusals of the administrative operations, the same for PostgreSQL and
// the keys file. `civicgate keys` prints them and exits 1.
var (
	// ErrTooManyKeys is returned when issuing would exceed MaxLiveKeys (a
	// rotating key counts as live until its overlap ends).
	ErrTooManyKeys = errors.New("keystore: organization already has 2 live keys in this environment; rotate or revoke one first")
	// ErrNoSuchOrg is returned for an unknown organization name.
	ErrNoSuchOrg = errors.New("keystore: no such organization")
	// ErrNoSuchKey is returned for an unknown key id.
	ErrNoSuchKey = errors.New("keystore: no such key")
	// ErrNothingToRotate is returned by Rotate when the organization has no
	// active key in the environment.
	ErrNothingToRotate = errors.New("keystore: organization has no active key in this environment to rotate; use issue")
	// ErrNoOverlapSlot is returned by Rotate with an overlap when the
	// organization already has two active keys: the old key rotating beside
	// both would be a third live key.
	ErrNoOverlapSlot = errors.New("keystore: organization has 2 active keys in this environment, so the rotated key cannot stay live beside the new one; revoke one first, or rotate with --overlap 0")
	// ErrOrgDeleted is returned for any change to a deleted organization
	// (see OrgDeletedError).
	ErrOrgDeleted = errors.New("keystore: organization deleted")
	// ErrAlreadyRevoked is returned by Revoke for a revoked key (see
	// AlreadyRevokedError).
	ErrAlreadyRevoked = errors.New("keystore: key already revoked")
)

// AlreadyRevokedError says when the key was revoked; it matches
// ErrAlreadyRevoked.
type AlreadyRevokedError struct {
	KeyID string
	At    *time.Time // nil when the record has no date
}

func (e *AlreadyRevokedError) Error() string {
	if e.At == nil {
		return fmt.Sprintf("keystore: key %s was already revoked; nothing changed", e.KeyID)
	}
	return fmt.Sprintf("keystore: key %s was already revoked at %s; nothing changed", e.KeyID, e.At.UTC().Format(time.RFC3339))
}

// Is matches ErrAlreadyRevoked.
func (e *AlreadyRevokedError) Is(target error) bool { return target == ErrAlreadyRevoked }

// OrgDeletedError names the deleted organization; it matches ErrOrgDeleted.
type OrgDeletedError struct {
	Org string
	At  *time.Time
}

func (e *OrgDeletedError) Error() string {
	at := ""
	if e.At != nil {
		at = " at " + e.At.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("keystore: organization %s was deleted%s; its keys are revoked and its name is not reused", e.Org, at)
}

// Is matches ErrOrgDeleted.
func (e *OrgDeletedError) Is(target error) bool { return target == ErrOrgDeleted }

func orgDeleted(org string, at *time.Time) error { return &OrgDeletedError{Org: org, At: at} }
