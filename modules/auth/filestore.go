package auth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/auth/keystore"
)

// DefaultFilePoll is how often the keys file is looked at for changes.
const DefaultFilePoll = time.Second

// racyWindow: a keys file modified less than this long ago is read again even
// when its stat looks unchanged (see reloadKeysFile).
const racyWindow = 3 * time.Second

// fileStore is the `keys file` store: an in-memory index of the hashed keys
// file, swapped whole (atomically) each time the file changes, so a lookup
// sees the old keys or the new ones, never a mix. The App's file worker
// (watchKeysFile) polls the file; only it writes the fields below records.
type fileStore struct {
	path    string
	records atomic.Pointer[map[keystore.Hash]keystore.Record]

	last    os.FileInfo // the file as last read (good or bad)
	sum     [sha256.Size]byte
	failing string // the problem last logged ("": none since the last good read)
	// polls and reloaded count the polls done and the new contents applied
	// (tests wait on them).
	polls, reloaded atomic.Int64
}

func (s *fileStore) lookup(_ context.Context, h keystore.Hash) (keystore.Record, error) {
	r, ok := (*s.records.Load())[h]
	if !ok {
		return keystore.Record{}, keystore.ErrNotFound
	}
	return r, nil
}

// indexStore is a fileStore serving idx, with no file behind it (unit tests
// and benchmarks build their stores with it).
func indexStore(idx map[keystore.Hash]keystore.Record) *fileStore {
	s := &fileStore{}
	s.records.Store(&idx)
	return s
}

// openFileStore reads the keys file at path: a missing, unreadable or invalid
// file is refused (at provision, so `caddy validate` and a start fail).
func openFileStore(path string) (*fileStore, error) {
	if path == "" {
		return nil, errors.New("keys file: empty path")
	}
	st, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("keys file %s does not exist (create it with `civicgate keys issue --file %s …`): %w", path, path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("keys file %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("keys file %s is not a regular file", path)
	}
	data, err := keystore.ReadFileData(path)
	if err != nil {
		return nil, err
	}
	f, err := keystore.ParseFile(data)
	if err != nil {
		return nil, err
	}
	idx, err := f.Index()
	if err != nil {
		return nil, err
	}
	s := &fileStore{path: path, last: st, sum: sha256.Sum256(data)}
	s.records.Store(&idx)
	return s, nil
}

// watchKeysFile polls the keys file until ctx ends and applies its changes.
func (a *App) watchKeysFile(ctx context.Context, s *fileStore) {
	t := time.NewTicker(a.filePoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			a.reloadKeysFile(s)
		}
	}
}

// reloadKeysFile reads the keys file again if its identity, size or
// modification time changed, and swaps the index when its content did. A
// file that became unreadable or invalid leaves the last good index in
// place; the problem is logged once until the file is good again (never a key
// or a hash: keystore's errors name keys by id), and its end too.
func (a *App) reloadKeysFile(s *fileStore) {
	defer s.polls.Add(1)
	st, err := os.Stat(s.path)
	if err != nil {
		a.keysFileProblem(s, fmt.Errorf("keys file %s: %w", s.path, err))
		return
	}
	// Unchanged identity, size and mtime mean unchanged content — unless the
	// mtime is recent: a file system with coarse timestamps can give two
	// writes within one tick the same mtime, so a recently modified file is
	// read (and its content hash compared) on every poll until it settles.
	if s.last != nil && os.SameFile(s.last, st) && st.Size() == s.last.Size() && st.ModTime().Equal(s.last.ModTime()) &&
		time.Since(st.ModTime()) > racyWindow {
		return
	}
	data, err := keystore.ReadFileData(s.path)
	if err != nil {
		a.keysFileProblem(s, err)
		return
	}
	if after, err := os.Stat(s.path); err != nil || !os.SameFile(st, after) || after.Size() != st.Size() || !after.ModTime().Equal(st.ModTime()) {
		return // changed while being read: read it again at the next poll
	}
	s.last = st
	sum := sha256.Sum256(data)
	if bytes.Equal(sum[:], s.sum[:]) {
		a.keysFileRecovered(s)
		return
	}
	f, err := keystore.ParseFile(data)
	if err != nil {
		a.keysFileProblem(s, err)
		return
	}
	idx, err := f.Index()
	if err != nil {
		a.keysFileProblem(s, err)
		return
	}
	old := *s.records.Load()
	s.records.Store(&idx)
	s.sum = sum
	changed := a.applyKeyChanges(old, idx)
	s.reloaded.Add(1)
	a.keysFileRecovered(s)
	a.logger.Info("keys file reloaded", zap.String("path", s.path), zap.Int("keys", len(idx)), zap.Int("changed", changed))
}

// applyKeyChanges drops the cache entries of the hashes whose record differs
// between old and cur (added, removed or changed) and asks for a recheck of
// those watched; it returns how many differ.
func (a *App) applyKeyChanges(old, cur map[keystore.Hash]keystore.Record) int {
	n := 0
	for h, r := range cur {
		if o, ok := old[h]; !ok || !o.Equal(r) {
			a.cache.deleteHash(h)
			a.watches.notifyHash(h)
			n++
		}
	}
	for h := range old {
		if _, ok := cur[h]; !ok {
			a.cache.deleteHash(h)
			a.watches.notifyHash(h)
			n++
		}
	}
	return n
}

// keysFileProblem logs the first problem of an episode (until the file is
// good again): a file being rewritten in place can fail at a new offset on
// every poll, and one error is enough.
func (a *App) keysFileProblem(s *fileStore, err error) {
	if s.failing != "" {
		return
	}
	s.failing = err.Error()
	a.logger.Error("keys file unreadable or invalid; keeping the keys last read from it", zap.String("path", s.path), zap.Error(err))
}

func (a *App) keysFileRecovered(s *fileStore) {
	if s.failing != "" {
		s.failing = ""
		a.logger.Info("keys file readable and valid again", zap.String("path", s.path))
	}
}
