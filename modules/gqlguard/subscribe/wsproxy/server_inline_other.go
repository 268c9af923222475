//go:build !unix

package wsproxy

import "net"

// nonBlockingWriter: every frame goes through the writer goroutine here.
func nonBlockingWriter(net.Conn) func([]byte) (int, error) { return nil }
