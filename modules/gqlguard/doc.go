// Package gqlguard is being written; see its README.md.
package gqlguard
