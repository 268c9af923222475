// Package wsframe reads and writes raw WebSocket frames (RFC 6455) for tests
// that play a hostile peer byte by byte, where a WebSocket library would
// refuse to send what they send.
package wsframe

import (
	"bufio"
	"encoding/binary"
	"io"
)

// ReadClientFrame reads one client frame (masked or not, whole messages
// only) and returns its unmasked payload.
func ReadClientFrame(br *bufio.Reader) ([]byte, error) {
	var h [2]byte
	if _, err := io.ReadFull(br, h[:]); err != nil {
		return nil, err
	}
	n := uint64(h[1] & 0x7F)
	switch n {
	case 126:
		var l [2]byte
		if _, err := io.ReadFull(br, l[:]); err != nil {
			return nil, err
		}
		n = uint64(binary.BigEndian.Uint16(l[:]))
	case 127:
		var l [8]byte
		if _, err := io.ReadFull(br, l[:]); err != nil {
			return nil, err
		}
		n = binary.BigEndian.Uint64(l[:])
	}
	var mask [4]byte
	if h[1]&0x80 != 0 {
		if _, err := io.ReadFull(br, mask[:]); err != nil {
			return nil, err
		}
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(br, p); err != nil {
		return nil, err
	}
	for i := range p {
		p[i] ^= mask[i%4]
	}
	return p, nil
}
