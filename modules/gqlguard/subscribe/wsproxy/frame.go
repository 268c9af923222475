package wsproxy

import (
	"crypto/rand"
	"encoding/binary"
)

// RFC 6455 section 5.2 framing.
const (
	finBit  = 0x80
	rsvBits = 0x70
	maskBit = 0x80

	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xA

	maxControlPayload = 125
	// maxCloseReason is the longest close reason: a control frame's 125
	// bytes minus the 2-byte status code.
	maxCloseReason = maxControlPayload - 2
	// maxFrameHeader is 2 bytes + 8 bytes of length + 4 bytes of mask.
	maxFrameHeader = 14
)

// Close status codes the filter sends (RFC 6455 section 7.4, graphql-ws
// PROTOCOL.md).
const (
	closeNormal           = 1000
	closeProtocolError    = 1002
	closeMessageTooBig    = 1009
	closeInternalError    = 1011
	closeBadRequest       = 4400
	closeUnauthorized     = 4401
	closeForbidden        = 4403
	closeInitTimeout      = 4408
	closeSubscriberExists = 4409
	closeTooManyInits     = 4429
)

// isControl reports whether op is a control opcode (close, ping, pong).
func isControl(op byte) bool { return op&0x8 != 0 }

// appendFrameHeader appends the header of a final frame of op carrying n
// payload bytes; a non-nil mask is written as the masking key.
func appendFrameHeader(dst []byte, op byte, n int, mask *[4]byte) []byte {
	var m byte
	if mask != nil {
		m = maskBit
	}
	switch {
	case n <= 125:
		dst = append(dst, finBit|op, m|byte(n))
	case n <= 0xFFFF:
		dst = append(dst, finBit|op, m|126)
		dst = binary.BigEndian.AppendUint16(dst, uint16(n))
	default:
		dst = append(dst, finBit|op, m|127)
		dst = binary.BigEndian.AppendUint64(dst, uint64(n))
	}
	if mask != nil {
		dst = append(dst, mask[:]...)
	}
	return dst
}

// appendServerFrame appends an unmasked frame (server to client).
func appendServerFrame(dst []byte, op byte, payload []byte) []byte {
	dst = appendFrameHeader(dst, op, len(payload), nil)
	return append(dst, payload...)
}

// appendClientFrame appends a frame masked with a fresh random key (client
// to server, RFC 6455 section 5.3).
func appendClientFrame(dst []byte, op byte, payload []byte) []byte {
	var key [4]byte
	_, _ = rand.Read(key[:]) // crypto/rand.Read never returns an error
	dst = appendFrameHeader(dst, op, len(payload), &key)
	start := len(dst)
	dst = append(dst, payload...)
	maskBytes(key, 0, dst[start:])
	return dst
}

// closePayload is a close frame's payload: the code and the reason cut to
// maxCloseReason bytes (on a UTF-8 boundary).
func closePayload(code uint16, reason string) []byte {
	reason = truncateUTF8(reason, maxCloseReason)
	p := make([]byte, 2, 2+len(reason))
	binary.BigEndian.PutUint16(p, code)
	return append(p, reason...)
}

// truncateUTF8 cuts s to at most n bytes without splitting a UTF-8
// sequence.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// maskBytes XORs b with key, b starting at offset pos of the payload;
// it returns the offset after b.
func maskBytes(key [4]byte, pos int, b []byte) int {
	for i := range b {
		b[i] ^= key[(pos+i)&3]
	}
	return (pos + len(b)) & 3
}
