package outbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// FolderSink is the development sender: each mail becomes a file
// <folder>/<time>-<n>.eml, and its path is logged. It is for a loopback
// development site only (the console refuses it elsewhere).
type FolderSink struct {
	Folder string
	// Written, when set, is called with each file written.
	Written func(path string)
	n       atomic.Int64
}

// Send writes msg to a new file of the folder (mode 0600: it holds a
// single-use link).
func (s *FolderSink) Send(_ context.Context, to string, msg []byte) error {
	if err := os.MkdirAll(s.Folder, 0o700); err != nil {
		return fmt.Errorf("mail folder: %w", err)
	}
	name := time.Now().UTC().Format("20060102T150405.000000") + "-" + strconv.FormatInt(s.n.Add(1), 10) + "-" +
		strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
				return r
			}
			return '_'
		}, strings.ToLower(to)) + ".eml"
	path := filepath.Join(s.Folder, name)
	if err := os.WriteFile(path, msg, 0o600); err != nil {
		return fmt.Errorf("mail folder: %w", err)
	}
	if s.Written != nil {
		s.Written(path)
	}
	return nil
}
