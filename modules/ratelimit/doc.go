// Package ratelimit is being written; see its README.md.
package ratelimit
