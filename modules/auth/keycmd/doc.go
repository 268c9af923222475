// Package keycmd is being written; see its README.md.
package keycmd
