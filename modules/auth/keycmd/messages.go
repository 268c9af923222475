package keycmd

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/civicgate/civicgate/modules/auth/keystore"
)

// plainError is err as the command prints it: the key store's refusals as
// sentences about this command line's organization, key and environment,
// without the internal "keystore:" prefix (docs/operations.md "Keys").
func plainError(err error, sub string, args []string, o opts) error {
	var already *keystore.AlreadyRevokedError
	var deleted *keystore.OrgDeletedError
	env := o.env
	switch {
	case err == nil:
		return nil
	case errors.As(err, &already):
		if already.At == nil {
			return fmt.Errorf("key %s was already revoked; nothing changed", already.KeyID)
		}
		return fmt.Errorf("key %s was already revoked at %s; nothing changed", already.KeyID, stamp(*already.At))
	case errors.As(err, &deleted):
		at := ""
		if deleted.At != nil {
			at = " at " + stamp(*deleted.At)
		}
		return fmt.Errorf("organization %s was deleted%s; its keys are revoked and its name is not reused", deleted.Org, at)
	case errors.Is(err, keystore.ErrNoSuchKey) && sub == "revoke":
		return fmt.Errorf("no such key: %s (`civicgate keys list` shows the ids)", args[0])
	case errors.Is(err, keystore.ErrNoSuchOrg):
		return fmt.Errorf("no such organization: %s (`civicgate keys list` shows them)", o.org)
	case errors.Is(err, keystore.ErrTooManyKeys):
		return fmt.Errorf("organization %s already has 2 live keys in the %s environment; rotate or revoke one first", o.org, env)
	case errors.Is(err, keystore.ErrNothingToRotate):
		return fmt.Errorf("organization %s has no active %s key to rotate (a key rotating out is not rotated again); "+
			"issue a new one: civicgate keys issue --org %s --tier TIER --env %s", o.org, env, o.org, env)
	case errors.Is(err, keystore.ErrNoOverlapSlot):
		return fmt.Errorf("organization %s has 2 active %s keys, so the rotated key cannot stay live beside the new one; "+
			"revoke one first, or rotate with --overlap 0", o.org, env)
	}
	msg, ok := strings.CutPrefix(err.Error(), "keystore: ")
	if !ok {
		return err
	}
	return wrapped{msg, err}
}

// wrapped is an error printed as msg that still matches its cause.
type wrapped struct {
	msg   string
	cause error
}

func (w wrapped) Error() string { return w.msg }
func (w wrapped) Unwrap() error { return w.cause }

// warnRotatingOnly warns on stderr when revoking left the revoked key's
// organization and environment with no active key, only a key rotating out:
// requests stop working at the end of its overlap unless a key is issued.
func warnRotatingOnly(stderr io.Writer, keys []keystore.KeyInfo, revoked string) {
	left, ok := rotatingOnly(keys, revoked)
	if !ok {
		return
	}
	fmt.Fprintf(stderr, "warning: organization %s is left with no active %s key, only %s, which stops working at %s (the end of its rotation overlap).\n"+
		"  Issue a new key before then: civicgate keys issue --org %s --tier %s --env %s\n",
		left.Org, left.Env, left.ID, stamp(*left.RotatesOutAt), left.Org, left.Tier, left.Env)
}

// rotatingOnly returns the key the organization and environment of the key
// revoked are left with when it is a rotating key and no active one is.
func rotatingOnly(keys []keystore.KeyInfo, revoked string) (keystore.KeyInfo, bool) {
	i := slices.IndexFunc(keys, func(k keystore.KeyInfo) bool { return k.ID == revoked })
	if i < 0 {
		return keystore.KeyInfo{}, false
	}
	var left keystore.KeyInfo
	for _, k := range keys {
		if k.Org != keys[i].Org || k.Env != keys[i].Env {
			continue
		}
		switch {
		case k.Status == keystore.StatusActive:
			return keystore.KeyInfo{}, false
		case k.Status == keystore.StatusRotating && k.RotatesOutAt != nil:
			left = k
		}
	}
	return left, left.ID != ""
}
