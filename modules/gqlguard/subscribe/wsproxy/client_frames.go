package wsproxy

import "encoding/binary"

// closeError ends the connection with a close frame of code and reason sent
// to the client.
type closeError struct {
	code   uint16
	reason string
}

func (e *closeError) Error() string { return e.reason }

// frameSink receives what clientFrames reassembles.
type frameSink interface {
	// control receives one control frame's unmasked payload.
	control(op byte, payload []byte) error
	// message receives one complete, unmasked text message; msg is only
	// valid during the call.
	message(msg []byte) error
}

// clientFrames parses client-to-server frames (RFC 6455 section 5)
// incrementally, whatever the chunking, and reassembles fragmented text
// messages up to maxMessage bytes. Its only buffers are the current
// message (grown as bytes arrive, never from an announced length) and a
// control payload array.
type clientFrames struct {
	maxMessage int64

	hdr    [maxFrameHeader]byte
	hdrLen int

	inPayload bool
	op        byte
	fin       bool
	key       [4]byte
	maskPos   int
	remaining uint64

	inMessage bool
	msg       []byte
	ctrl      [maxControlPayload]byte
	ctrlLen   int
}

// keptMessageBuffer is the largest message buffer kept between messages;
// a larger one is dropped so an idle connection holds a few KiB at most.
const keptMessageBuffer = 4 << 10

// feed parses data; it stops at the first error, a *closeError for a
// protocol violation or an error returned by sink.
func (f *clientFrames) feed(data []byte, sink frameSink) error {
	for len(data) > 0 {
		if !f.inPayload {
			n, done, err := f.readHeader(data)
			data = data[n:]
			if err != nil {
				return err
			}
			if !done {
				return nil
			}
			if f.remaining == 0 {
				if err := f.endFrame(sink); err != nil {
					return err
				}
			}
			continue
		}
		n := len(data)
		if uint64(n) > f.remaining {
			n = int(f.remaining)
		}
		chunk := data[:n]
		data = data[n:]
		f.remaining -= uint64(n)
		if isControl(f.op) {
			dst := f.ctrl[f.ctrlLen : f.ctrlLen+n]
			copy(dst, chunk)
			f.ctrlLen += n
			f.maskPos = maskBytes(f.key, f.maskPos, dst)
		} else {
			start := len(f.msg)
			f.msg = append(f.msg, chunk...)
			f.maskPos = maskBytes(f.key, f.maskPos, f.msg[start:])
		}
		if f.remaining == 0 {
			if err := f.endFrame(sink); err != nil {
				return err
			}
		}
	}
	return nil
}

// readHeader takes header bytes from data; done reports a complete,
// validated header.
func (f *clientFrames) readHeader(data []byte) (n int, done bool, err error) {
	need := 2
	for {
		if f.hdrLen >= 2 {
			need = 2 + 4
			switch f.hdr[1] & 0x7F {
			case 126:
				need += 2
			case 127:
				need += 8
			}
		}
		if f.hdrLen >= need {
			break
		}
		if n == len(data) {
			return n, false, nil
		}
		c := copy(f.hdr[f.hdrLen:need], data[n:])
		f.hdrLen += c
		n += c
	}
	f.hdrLen = 0
	return n, true, f.startFrame(need)
}

// startFrame validates the header in f.hdr[:size] and prepares its payload.
func (f *clientFrames) startFrame(size int) error {
	b0, b1 := f.hdr[0], f.hdr[1]
	if b0&rsvBits != 0 {
		return &closeError{closeProtocolError, "Reserved bits must be 0"}
	}
	if b1&maskBit == 0 {
		return &closeError{closeProtocolError, "Client frames must be masked"}
	}
	op := b0 & 0x0F
	fin := b0&finBit != 0
	var length uint64
	switch l := b1 & 0x7F; l {
	case 126:
		length = uint64(binary.BigEndian.Uint16(f.hdr[2:4]))
	case 127:
		length = binary.BigEndian.Uint64(f.hdr[2:10])
		if length>>63 != 0 {
			return &closeError{closeProtocolError, "Invalid frame length"}
		}
	default:
		length = uint64(l)
	}
	copy(f.key[:], f.hdr[size-4:size])
	switch op {
	case opClose, opPing, opPong:
		if !fin || length > maxControlPayload {
			return &closeError{closeProtocolError, "Invalid control frame"}
		}
		f.ctrlLen = 0
	case opBinary:
		return &closeError{closeBadRequest, "Binary messages are not supported"}
	case opText:
		if f.inMessage {
			return &closeError{closeProtocolError, "Expected a continuation frame"}
		}
		f.inMessage = true
	case opContinuation:
		if !f.inMessage {
			return &closeError{closeProtocolError, "Unexpected continuation frame"}
		}
	default:
		return &closeError{closeProtocolError, "Reserved opcode"}
	}
	if !isControl(op) && length > uint64(f.maxMessage)-uint64(len(f.msg)) {
		return &closeError{closeMessageTooBig, "Message too big"}
	}
	f.op, f.fin, f.remaining, f.maskPos, f.inPayload = op, fin, length, 0, true
	return nil
}

// endFrame hands a complete control frame or message to sink.
func (f *clientFrames) endFrame(sink frameSink) error {
	f.inPayload = false
	if isControl(f.op) {
		return sink.control(f.op, f.ctrl[:f.ctrlLen])
	}
	if !f.fin {
		return nil
	}
	f.inMessage = false
	err := sink.message(f.msg)
	if cap(f.msg) > keptMessageBuffer {
		f.msg = nil
	} else {
		f.msg = f.msg[:0]
	}
	return err
}
