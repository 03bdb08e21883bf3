package modelcheck

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// tokenPrefix marks a replay token and its format version.
const tokenPrefix = "mc1."

// encodeToken writes the choices where a schedule left the default (the
// current goroutine goes on; otherwise the lowest-numbered runnable one). Every
// other choice is implied, so a schedule with few preemptions has a short
// token: the gap since the previous deviation and the goroutine chosen, as
// uvarints, in URL-safe base64.
func encodeToken(devs []deviation) string {
	var buf []byte
	prev := 0
	for _, d := range devs {
		buf = binary.AppendUvarint(buf, uint64(d.at-prev))
		buf = binary.AppendUvarint(buf, uint64(d.thread))
		prev = d.at
	}
	return tokenPrefix + base64.RawURLEncoding.EncodeToString(buf)
}

func decodeToken(tok string) ([]deviation, error) {
	body, ok := strings.CutPrefix(tok, tokenPrefix)
	if !ok {
		return nil, fmt.Errorf("modelcheck: replay token %q does not start with %q", tok, tokenPrefix)
	}
	buf, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		return nil, fmt.Errorf("modelcheck: replay token %q: %v", tok, err)
	}
	var devs []deviation
	prev := 0
	for len(buf) > 0 {
		gap, n := binary.Uvarint(buf)
		if n <= 0 {
			return nil, errors.New("modelcheck: replay token is truncated")
		}
		buf = buf[n:]
		th, n := binary.Uvarint(buf)
		if n <= 0 || th >= maxThreads || gap > 1<<30 {
			return nil, errors.New("modelcheck: replay token is truncated or corrupt")
		}
		buf = buf[n:]
		prev += int(gap)
		devs = append(devs, deviation{at: prev, thread: int(th)})
	}
	return devs, nil
}
