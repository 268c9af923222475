// Package auth is being written; see its README.md.
package auth
