package wsproxy

// typeIDScanner reads the top-level "type" and "id" string members of a
// JSON object streamed in chunks, without allocating, and stops as soon as
// the type says the message is of no interest (anything but "complete",
// "error" and "connection_ack"), so that a "next" message whose type
// precedes its payload costs a few bytes of scanning.
type typeIDScanner struct {
	state    scanState
	nest     int
	escaped  bool
	inString bool // inside a string of a skipped nested value
	// key is the current member name, up to len(key) bytes; keyLen past
	// len(key) means "longer, of no interest".
	key    [4]byte
	keyLen int
	// capture is the member whose string value is being read.
	capture  captureTarget
	typ      [16]byte
	typLen   int
	id       [128]byte
	idLen    int
	hasType  bool
	hasID    bool
	overflow bool
}

type scanState uint8

const (
	scanObjectStart scanState = iota
	scanKeyOrEnd
	scanKey
	scanColon
	scanValue
	scanCapture
	scanSkipString
	scanSkipNested
	scanSkipPrimitive
	scanCommaOrEnd
	scanDone
)

type captureTarget uint8

const (
	captureNone captureTarget = iota
	captureType
	captureID
)

func (s *typeIDScanner) reset() { *s = typeIDScanner{} }

// result returns the type and id once both were read and the type is
// "complete" or "error", or the type "connection_ack" (id empty: it has none).
func (s *typeIDScanner) result() (typ, id []byte, ok bool) {
	if !s.hasType || s.overflow || !s.interesting() {
		return nil, nil, false
	}
	if s.isAck() {
		return s.typ[:s.typLen], nil, true
	}
	if !s.hasID {
		return nil, nil, false
	}
	return s.typ[:s.typLen], s.id[:s.idLen], true
}

func (s *typeIDScanner) interesting() bool {
	t := string(s.typ[:s.typLen])
	return t == "complete" || t == "error" || t == "connection_ack"
}

func (s *typeIDScanner) isAck() bool { return string(s.typ[:s.typLen]) == "connection_ack" }

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// feed scans b, the next bytes of the object.
func (s *typeIDScanner) feed(b []byte) {
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch s.state {
		case scanDone:
			return
		case scanObjectStart:
			if c == '{' {
				s.state = scanKeyOrEnd
			} else if !isJSONSpace(c) {
				s.state = scanDone
			}
		case scanKeyOrEnd:
			switch {
			case c == '"':
				s.state, s.keyLen = scanKey, 0
			case c == '}':
				s.state = scanDone
			case !isJSONSpace(c):
				s.state = scanDone
			}
		case scanKey:
			switch {
			case c == '"':
				s.state = scanColon
			case c == '\\':
				s.keyLen = len(s.key) + 1 // escaped names are of no interest
			default:
				if s.keyLen < len(s.key) {
					s.key[s.keyLen] = c
				}
				s.keyLen++
			}
		case scanColon:
			if c == ':' {
				s.state = scanValue
			} else if !isJSONSpace(c) {
				s.state = scanDone
			}
		case scanValue:
			if isJSONSpace(c) {
				continue
			}
			s.startValue(c)
		case scanCapture:
			s.captureByte(c)
		case scanSkipString:
			if s.escaped {
				s.escaped = false
			} else if c == '\\' {
				s.escaped = true
			} else if c == '"' {
				s.state = scanCommaOrEnd
			}
		case scanSkipNested:
			i += s.skipNested(b[i:]) - 1
		case scanSkipPrimitive:
			switch c {
			case ',':
				s.state = scanKeyOrEnd
			case '}':
				s.state = scanDone
			}
		case scanCommaOrEnd:
			switch {
			case c == ',':
				s.state = scanKeyOrEnd
			case c == '}' || !isJSONSpace(c):
				s.state = scanDone
			}
		}
	}
}

// startValue begins the value of the current member with its first byte c.
func (s *typeIDScanner) startValue(c byte) {
	name := ""
	if s.keyLen <= len(s.key) {
		name = string(s.key[:s.keyLen])
	}
	switch {
	case c == '"' && name == "type":
		s.state, s.capture, s.typLen, s.hasType = scanCapture, captureType, 0, false
	case c == '"' && name == "id":
		s.state, s.capture, s.idLen, s.hasID = scanCapture, captureID, 0, false
	case c == '"':
		s.state = scanSkipString
	case c == '{' || c == '[':
		s.state, s.nest = scanSkipNested, 1
	default:
		s.state = scanSkipPrimitive
	}
}

// captureByte adds c to the type or id being read.
func (s *typeIDScanner) captureByte(c byte) {
	if c == '\\' {
		// Escapes in a type or id: never produced by the servers this
		// filters; the message is left to the other ways a slot is freed.
		s.overflow = true
		s.state = scanDone
		return
	}
	if c != '"' {
		switch s.capture {
		case captureType:
			if s.typLen == len(s.typ) {
				s.typLen = 0
				s.hasType = true // too long: neither complete nor error
				s.state = scanDone
				return
			}
			s.typ[s.typLen] = c
			s.typLen++
		case captureID:
			if s.idLen == len(s.id) {
				s.overflow = true
				s.state = scanDone
				return
			}
			s.id[s.idLen] = c
			s.idLen++
		}
		return
	}
	switch s.capture {
	case captureType:
		s.hasType = true
		if !s.interesting() {
			s.state = scanDone
			return
		}
	case captureID:
		s.hasID = true
	}
	s.capture = captureNone
	s.state = scanCommaOrEnd
	if s.hasType && s.hasID {
		s.state = scanDone
	}
}

// skipNested skips inside an object or array value; it returns how many
// bytes of b it consumed (at least 1).
func (s *typeIDScanner) skipNested(b []byte) int {
	for i, c := range b {
		if s.escaped {
			s.escaped = false
			continue
		}
		if s.inString {
			switch c {
			case '\\':
				s.escaped = true
			case '"':
				s.inString = false
			}
			continue
		}
		switch c {
		case '"':
			s.inString = true
		case '{', '[':
			s.nest++
		case '}', ']':
			s.nest--
			if s.nest == 0 {
				s.state = scanCommaOrEnd
				return i + 1
			}
		}
	}
	return len(b)
}
