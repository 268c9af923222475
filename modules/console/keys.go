package console

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/console/consolestore"
)

// The keys page and the key changes. Every change goes through the key
// store's Issue, Rotate and Revoke — the functions `civicgate keys` runs —
// so the two-live-key rule, the rotation overlap and the NOTIFY that
// reaches every gateway are the same.

// twoKeyRule is shown where the two-live-key rule refuses something.
const twoKeyRule = "An organization holds at most two live keys per environment (active, or rotating during an overlap). " +
	"Revoke one, or rotate with no overlap, to make room."

func (h *Handler) keysPage(w http.ResponseWriter, r *http.Request, m member, o orgCtx) {
	h.renderKeys(w, r, m, o, http.StatusOK, "", "", nil)
}

// created is a key shown once, right after it was made.
type created struct {
	Key, ID, Env, Tier string
	Rotating           string // the key that stays accepted until Until (rotate with overlap)
	Until              time.Time
	Expires            time.Time // the new key's expiry (zero: none)
}

func (h *Handler) renderKeys(w http.ResponseWriter, r *http.Request, m member, o orgCtx, code int, notice, refusal string, c *created) {
	var after consolestore.KeyCursor
	if cur := r.URL.Query().Get("after"); cur != "" && r.Method == http.MethodGet {
		at, id, ok := strings.Cut(cur, "_at_")
		t, err := time.Parse(time.RFC3339Nano, at)
		if !ok || err != nil || id == "" {
			h.status(w, r, http.StatusBadRequest, "Not a page of this list", "Go back to the first page of keys.")
			return
		}
		after = consolestore.KeyCursor{CreatedAt: t, ID: id}
	}
	keys, next, err := consolestore.KeysPage(r.Context(), h.pool, o.org.ID, after, pageSize)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	nextCur := ""
	if next != nil {
		nextCur = next.CreatedAt.Format(time.RFC3339Nano) + "_at_" + next.ID
	}
	v := h.orgView(m, o, "keys", "Keys", map[string]any{"Keys": keys, "Next": nextCur, "Created": c,
		"Tiers": h.tierNames(), "Rule": twoKeyRule, "Overlaps": overlapChoices, "Picked": picked(r)})
	v.Notice, v.Error = notice, refusal
	h.render(w, r, code, "keys", v)
}

// overlapChoices are the rotation overlaps offered (keys rotate's --overlap).
var overlapChoices = []string{"24h", "1h", "168h", "0s"}

// pickedForm is what the member chose in the form that was sent: the page
// answering it shows the same choices again, so a refused rotation keeps
// the overlap the member picked.
// The name, expiry and labels typed are not shown again: a refused one may
// hold anything (docs/design.md D71).
type pickedForm struct{ Env, Overlap, Tier string }

func picked(r *http.Request) pickedForm {
	if r.Method != http.MethodPost {
		return pickedForm{}
	}
	return pickedForm{Env: r.PostForm.Get("env"), Overlap: r.PostForm.Get("overlap"), Tier: r.PostForm.Get("tier")}
}

func formEnv(r *http.Request) (string, bool) {
	env := r.PostForm.Get("env")
	return env, keystore.ValidEnv(env)
}

// formLifecycle reads the issue form's name, expiry and labels (one
// key=value per line) with the rules of `civicgate keys issue` (docs/design.md
// D71); the refusal says which field and why, quoting no value.
func formLifecycle(r *http.Request, now time.Time) (keystore.Lifecycle, string) {
	l := keystore.Lifecycle{Name: strings.TrimSpace(r.PostForm.Get("name"))}
	if s := strings.TrimSpace(r.PostForm.Get("expires")); s != "" {
		t, err := keystore.ParseExpiry(s, now)
		if err != nil {
			return l, "Not issued: the expiry is not a duration (720h, 30d) or a time like 2027-01-31T00:00:00Z."
		}
		l.ExpiresAt = t
	}
	for line := range strings.Lines(r.PostForm.Get("labels")) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		k, v, err := keystore.ParseLabel(line)
		if err != nil {
			return l, "Not issued: write one label per line as key=value; keys are 1 to 32 of a-z 0-9 _ . -"
		}
		if _, dup := l.Labels[k]; dup {
			return l, "Not issued: the label " + k + " is given twice."
		}
		if l.Labels == nil {
			l.Labels = map[string]string{}
		}
		l.Labels[k] = v
	}
	if err := l.Check(now); err != nil {
		return l, "Not issued: " + strings.TrimPrefix(err.Error(), "keystore: ") + "."
	}
	return l, ""
}

func (h *Handler) issueKey(w http.ResponseWriter, r *http.Request, m member, o orgCtx) {
	if !parseForm(w, r) {
		return
	}
	env, ok := formEnv(r)
	if !ok {
		h.renderKeys(w, r, m, o, http.StatusBadRequest, "", "Choose the live or test environment.", nil)
		return
	}
	life, refusal := formLifecycle(r, time.Now())
	if refusal != "" {
		h.renderKeys(w, r, m, o, http.StatusBadRequest, "", refusal, nil)
		return
	}
	live, err := consolestore.LiveKeys(r.Context(), h.pool, o.org.ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	t := orgTier(live)
	if m.operator() && r.PostForm.Get("tier") != "" {
		t = r.PostForm.Get("tier")
	}
	if _, ok := h.tiers[t]; !ok {
		h.renderKeys(w, r, m, o, http.StatusBadRequest, "",
			"This organization has no live key to take a tier from. An operator issues its first key with a tier.", nil)
		return
	}
	is, err := keystore.IssueWith(r.Context(), h.pool, keystore.IssueSpec{Org: o.org.Name, Tier: t, Env: env, Lifecycle: life})
	if errors.Is(err, keystore.ErrTooManyKeys) {
		// The rule itself is on the page above the form: not repeated here.
		h.renderKeys(w, r, m, o, http.StatusConflict, "", "Not issued: the organization already holds two live keys in the "+env+" environment.", nil)
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.audit(r, m, o.org.ID, "key.issue", is.ID, env+", tier "+t+life.AuditDetail())
	h.renderKeys(w, r, m, o, http.StatusOK, "Key issued. Copy it now: it is shown only once.", "",
		&created{Key: is.Key, ID: is.ID, Env: env, Tier: t, Expires: life.ExpiresAt})
}

func (h *Handler) rotateKey(w http.ResponseWriter, r *http.Request, m member, o orgCtx) {
	if !parseForm(w, r) {
		return
	}
	env, ok := formEnv(r)
	overlap, err := time.ParseDuration(r.PostForm.Get("overlap"))
	if !ok || err != nil || overlap < 0 || overlap > 30*24*time.Hour {
		h.renderKeys(w, r, m, o, http.StatusBadRequest, "", "Choose an environment and an overlap.", nil)
		return
	}
	rot, err := keystore.Rotate(r.Context(), h.pool, keystore.RotateSpec{Org: o.org.Name, Env: env, Overlap: overlap})
	switch {
	case errors.Is(err, keystore.ErrNoOverlapSlot):
		h.renderKeys(w, r, m, o, http.StatusConflict, "",
			"Not rotated: two "+env+" keys are active, so the old one cannot stay live during an overlap of "+overlap.String()+
				". Rotate with no overlap, or revoke one first.", nil)
		return
	case errors.Is(err, keystore.ErrNothingToRotate):
		h.renderKeys(w, r, m, o, http.StatusConflict, "", "Not rotated: there is no active "+env+" key to rotate. Issue one.", nil)
		return
	case err != nil:
		h.fail(w, r, err)
		return
	}
	detail := env + ", overlap " + overlap.String()
	if len(rot.RotatedOut) > 0 {
		detail += ", rotated out " + strings.Join(rot.RotatedOut, " ")
	}
	h.audit(r, m, o.org.ID, "key.rotate", rot.ID, detail)
	h.renderKeys(w, r, m, o, http.StatusOK, "Key rotated. Copy the new key now: it is shown only once.", "",
		&created{Key: rot.Key, ID: rot.ID, Env: env, Rotating: rot.Rotating, Until: rot.Until})
}

// ownKey checks that the key in the path belongs to the organization: any
// other key id answers 404.
func (h *Handler) ownKey(w http.ResponseWriter, r *http.Request, o orgCtx) (string, bool) {
	id := r.PathValue("key")
	org, err := keystore.KeyOrg(r.Context(), h.pool, id)
	if errors.Is(err, keystore.ErrNoSuchKey) || (err == nil && org != o.org.ID) {
		h.notFound(w, r)
		return "", false
	}
	if err != nil {
		h.fail(w, r, err)
		return "", false
	}
	return id, true
}

func (h *Handler) revokeConfirm(w http.ResponseWriter, r *http.Request, m member, o orgCtx) {
	id, ok := h.ownKey(w, r, o)
	if !ok {
		return
	}
	h.render(w, r, http.StatusOK, "revoke", h.orgView(m, o, "keys", "Revoke key", map[string]any{"KeyID": id}))
}

func (h *Handler) revokeKey(w http.ResponseWriter, r *http.Request, m member, o orgCtx) {
	if !parseForm(w, r) {
		return
	}
	id, ok := h.ownKey(w, r, o)
	if !ok {
		return
	}
	if r.PostForm.Get("confirm") != id {
		h.renderKeys(w, r, m, o, http.StatusBadRequest, "", "Not revoked: type the key id to confirm.", nil)
		return
	}
	before, err := consolestore.LiveKeys(r.Context(), h.pool, o.org.ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	rev, err := keystore.Revoke(r.Context(), h.pool, id)
	var already *keystore.AlreadyRevokedError
	if errors.As(err, &already) {
		h.renderKeys(w, r, m, o, http.StatusConflict, "", "Key "+id+" was already revoked.", nil)
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.audit(r, m, o.org.ID, "key.revoke", id, "was "+rev.Was)
	notice := "Key " + id + " revoked. Requests with it are refused from now on."
	if i := slices.IndexFunc(before, func(k consolestore.Key) bool { return k.ID == id }); i >= 0 {
		after, err := consolestore.LiveKeys(r.Context(), h.pool, o.org.ID)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		notice += rotatingOnlyWarning(o.org.Name, before[i].Env, after)
	}
	h.renderKeys(w, r, m, o, http.StatusOK, notice, "", nil)
}

// rotatingOnlyWarning is what the revoke notice adds when the environment env
// is left with no active key, only a key rotating out: it stops working at
// the end of its overlap unless a key is issued (docs/operations.md "Keys";
// `civicgate keys revoke` prints the same warning).
func rotatingOnlyWarning(org, env string, live []consolestore.Key) string {
	var left *consolestore.Key
	for i, k := range live {
		if k.Env != env {
			continue
		}
		if k.Status == keystore.StatusActive {
			return ""
		}
		if k.Status == keystore.StatusRotating && k.RotatesOutAt != nil {
			left = &live[i]
		}
	}
	if left == nil {
		return ""
	}
	return " Warning: the organization is left with no active " + env + " key, only " + left.ID + ", which stops working at " +
		left.RotatesOutAt.UTC().Format("2006-01-02 15:04 UTC") + " (the end of its rotation overlap). Issue a new " + env +
		" key before then, above or with: civicgate keys issue --org " + org + " --tier " + left.Tier + " --env " + env
}
