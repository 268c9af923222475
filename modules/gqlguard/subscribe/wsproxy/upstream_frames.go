package wsproxy

import "encoding/binary"

// upstreamFrames follows the upstream's frames through the arbitrary chunks
// reverse_proxy writes, to know where a frame may be injected (only between
// whole messages: RFC 6455 forbids a data frame inside a fragmented one)
// and to see the type and id of each text message without decoding it.
type upstreamFrames struct {
	hdr    [maxFrameHeader]byte
	hdrLen int

	inPayload bool
	op        byte
	fin       bool
	masked    bool
	remaining uint64

	inMessage bool
	scanning  bool
	scan      typeIDScanner
}

// advance consumes b up to the end of the next frame; atBoundary reports
// that b[:n] ends a frame and no fragmented message is in progress.
// ended is called for each whole text message whose type and id were seen.
func (u *upstreamFrames) advance(b []byte, ended func(typ, id []byte)) (n int, atBoundary bool) {
	for n < len(b) {
		if !u.inPayload {
			c, done := u.readHeader(b[n:])
			n += c
			if !done {
				return n, false
			}
			if u.remaining == 0 {
				return n, u.endFrame(ended)
			}
			continue
		}
		c := len(b) - n
		if uint64(c) > u.remaining {
			c = int(u.remaining)
		}
		if u.scanning && !isControl(u.op) {
			u.scan.feed(b[n : n+c])
		}
		n += c
		u.remaining -= uint64(c)
		if u.remaining == 0 {
			return n, u.endFrame(ended)
		}
	}
	return n, false
}

// between reports whether the stream is between whole messages.
func (u *upstreamFrames) between() bool {
	return !u.inPayload && u.hdrLen == 0 && !u.inMessage
}

func (u *upstreamFrames) readHeader(b []byte) (n int, done bool) {
	need := 2
	for {
		if u.hdrLen >= 2 {
			need = 2
			switch u.hdr[1] & 0x7F {
			case 126:
				need += 2
			case 127:
				need += 8
			}
			if u.hdr[1]&maskBit != 0 {
				need += 4
			}
		}
		if u.hdrLen >= need {
			break
		}
		if n == len(b) {
			return n, false
		}
		c := copy(u.hdr[u.hdrLen:need], b[n:])
		u.hdrLen += c
		n += c
	}
	u.hdrLen = 0
	u.op = u.hdr[0] & 0x0F
	u.fin = u.hdr[0]&finBit != 0
	u.masked = u.hdr[1]&maskBit != 0
	switch l := u.hdr[1] & 0x7F; l {
	case 126:
		u.remaining = uint64(binary.BigEndian.Uint16(u.hdr[2:4]))
	case 127:
		u.remaining = binary.BigEndian.Uint64(u.hdr[2:10])
	default:
		u.remaining = uint64(l)
	}
	u.inPayload = true
	switch u.op {
	case opText:
		u.inMessage = true
		u.scanning = !u.masked
		u.scan.reset()
	case opBinary:
		u.inMessage = true
		u.scanning = false
	}
	return n, true
}

// endFrame closes the current frame; it reports whether the stream is now
// between messages.
func (u *upstreamFrames) endFrame(ended func(typ, id []byte)) bool {
	u.inPayload = false
	if isControl(u.op) {
		return !u.inMessage
	}
	if !u.fin {
		return false
	}
	u.inMessage = false
	if u.scanning {
		u.scanning = false
		if typ, id, ok := u.scan.result(); ok && ended != nil {
			ended(typ, id)
		}
	}
	return true
}
