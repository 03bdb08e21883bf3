package http

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	nethttp "net/http"
	"strings"
)

// authenticator checks requests against the secrets Open read. Secrets are
// kept as SHA-256 digests and compared in constant time, digest against
// digest, so neither their content nor their length shows in timing; they
// never reach a log line or an error.
type authenticator struct {
	tokens    [][32]byte // digests of the accepted bearer tokens
	basicUser [32]byte
	basicPass [32]byte
	basic     bool
	// open is set when neither bearer nor basic is configured: any request
	// is admitted (the HMAC check, if set, still applies).
	open bool

	hmacHeader string
	hmacSecret []byte
	hmacNew    func() hash.Hash
	hmacPrefix string
	hmacB64    bool
	// challenge is the WWW-Authenticate header of a 401.
	challenge string
}

func hmacHash(name string) (func() hash.Hash, bool) {
	switch name {
	case "sha256":
		return sha256.New, true
	case "sha1":
		return sha1.New, true
	case "sha512":
		return sha512.New, true
	}
	return nil, false
}

// newAuthenticator reads the secrets a reads from the environment and files.
func newAuthenticator(a *Auth) (*authenticator, error) {
	au := &authenticator{}
	var challenges []string
	if a.BearerTokensEnv != "" || a.BearerTokensFile != "" {
		raw, from, err := readSecret(a.BearerTokensEnv, a.BearerTokensFile)
		if err != nil {
			return nil, fmt.Errorf("auth: bearer tokens: %w", err)
		}
		for _, line := range strings.Split(raw, "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			for _, tok := range strings.FieldsFunc(line, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
				au.tokens = append(au.tokens, sha256.Sum256([]byte(tok)))
			}
		}
		if len(au.tokens) == 0 {
			return nil, fmt.Errorf("auth: the %s holds no bearer token", from)
		}
		challenges = append(challenges, `Bearer realm="weir"`)
	}
	if a.BasicUsername != "" {
		pass, _, err := readSecret(a.BasicPasswordEnv, a.BasicPasswordFile)
		if err != nil {
			return nil, fmt.Errorf("auth: basic password: %w", err)
		}
		if a.BasicPasswordFile != "" {
			pass, _, _ = strings.Cut(pass, "\n")
			pass = strings.TrimRight(pass, "\r")
		}
		au.basic = true
		au.basicUser = sha256.Sum256([]byte(a.BasicUsername))
		au.basicPass = sha256.Sum256([]byte(pass))
		challenges = append(challenges, `Basic realm="weir", charset="UTF-8"`)
	}
	au.open = len(au.tokens) == 0 && !au.basic
	au.challenge = strings.Join(challenges, ", ")
	if a.HMACHeader != "" {
		secret, _, err := readSecret(a.HMACSecretEnv, a.HMACSecretFile)
		if err != nil {
			return nil, fmt.Errorf("auth: HMAC secret: %w", err)
		}
		if a.HMACSecretFile != "" {
			secret, _, _ = strings.Cut(secret, "\n")
			secret = strings.TrimRight(secret, "\r")
		}
		au.hmacHeader = nethttp.CanonicalHeaderKey(a.HMACHeader)
		au.hmacSecret = []byte(secret)
		au.hmacNew, _ = hmacHash(a.HMACAlgorithm)
		au.hmacPrefix = a.HMACPrefix
		au.hmacB64 = a.HMACEncoding == "base64"
	}
	return au, nil
}

// admit reports whether r carries an accepted bearer token or basic
// credentials. It looks at the headers only: it runs before the body is read.
func (au *authenticator) admit(r *nethttp.Request) bool {
	if au.open {
		return true
	}
	h := r.Header.Get("Authorization")
	if len(au.tokens) > 0 {
		if scheme, tok, ok := strings.Cut(h, " "); ok && strings.EqualFold(scheme, "Bearer") {
			d := sha256.Sum256([]byte(strings.TrimSpace(tok)))
			match := 0
			for i := range au.tokens {
				match |= subtle.ConstantTimeCompare(d[:], au.tokens[i][:])
			}
			if match == 1 {
				return true
			}
		}
	}
	if au.basic {
		if user, pass, ok := r.BasicAuth(); ok {
			u, p := sha256.Sum256([]byte(user)), sha256.Sum256([]byte(pass))
			if subtle.ConstantTimeCompare(u[:], au.basicUser[:])&subtle.ConstantTimeCompare(p[:], au.basicPass[:]) == 1 {
				return true
			}
		}
	}
	return false
}

// signed reports whether the request may go on to its body as far as the
// HMAC header is concerned: present when one is required.
func (au *authenticator) signed(r *nethttp.Request) bool {
	return au.hmacHeader == "" || r.Header.Get(au.hmacHeader) != ""
}

// verify checks the HMAC signature of body; true when none is required.
func (au *authenticator) verify(r *nethttp.Request, body []byte) bool {
	if au.hmacHeader == "" {
		return true
	}
	sig, ok := strings.CutPrefix(strings.TrimSpace(r.Header.Get(au.hmacHeader)), au.hmacPrefix)
	if !ok {
		return false
	}
	var got []byte
	var err error
	if au.hmacB64 {
		got, err = base64.StdEncoding.DecodeString(sig)
	} else {
		got, err = hex.DecodeString(sig)
	}
	if err != nil {
		return false
	}
	m := hmac.New(au.hmacNew, au.hmacSecret)
	m.Write(body)
	return hmac.Equal(got, m.Sum(nil))
}

// sensitive reports whether a header must never be copied to records.
func (au *authenticator) sensitive(canonical string) bool {
	switch canonical {
	case "Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie":
		return true
	}
	return canonical == au.hmacHeader
}
