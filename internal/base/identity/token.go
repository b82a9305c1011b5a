package identity

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Token is a cluster's join token: a 256-bit secret that authenticates the joiner to the
// head, and the SHA-256 of the cluster's CA certificate, which authenticates the head to
// the joiner (kubeadm's discovery-token-ca-cert-hash, in the same string). Its text form
// is "<64 hex digits of the secret>.<64 hex digits of the CA hash>".
type Token struct {
	Secret [32]byte
	CAHash [32]byte
}

// NewToken returns a token with a new random secret for the CA.
func NewToken(ca *CA) (Token, error) {
	t := Token{CAHash: ca.Fingerprint()}
	if _, err := rand.Read(t.Secret[:]); err != nil {
		return t, fmt.Errorf("identity: random token: %w", err)
	}
	return t, nil
}

// String is the token's text form.
func (t Token) String() string {
	return hex.EncodeToString(t.Secret[:]) + "." + hex.EncodeToString(t.CAHash[:])
}

// ErrBadToken: a token's text is malformed.
var ErrBadToken = errors.New("identity: malformed join token")

// ParseToken parses the text form (surrounding white space is ignored).
func ParseToken(s string) (Token, error) {
	var t Token
	s = strings.TrimSpace(s)
	if s == "" {
		return t, fmt.Errorf("%w: it is empty", ErrBadToken)
	}
	secret, hash, ok := strings.Cut(s, ".")
	if !ok || strings.Contains(hash, ".") {
		return t, fmt.Errorf("%w: want two parts, <secret>.<CA hash>, separated by one '.' (as `rayctl start --head` printed it)", ErrBadToken)
	}
	for _, p := range []struct {
		name string
		text string
		dst  []byte
	}{{"secret", secret, t.Secret[:]}, {"CA hash", hash, t.CAHash[:]}} {
		if len(p.text) != 64 {
			return Token{}, fmt.Errorf("%w: its %s has %d characters, want 64 hex digits (was it cut short when copied?)", ErrBadToken, p.name, len(p.text))
		}
		if _, err := hex.Decode(p.dst, []byte(p.text)); err != nil {
			return Token{}, fmt.Errorf("%w: its %s is not hex: %v", ErrBadToken, p.name, err)
		}
	}
	return t, nil
}

// SecretEquals compares secrets in constant time.
func (t Token) SecretEquals(secret [32]byte) bool {
	return subtle.ConstantTimeCompare(t.Secret[:], secret[:]) == 1
}

// SaveToken writes the token's text to path (FileMode, atomically).
func SaveToken(path string, t Token) error { return WriteFile(path, []byte(t.String()+"\n")) }

// ReadTokenFile reads a token from a file. It refuses a file that others may read: a
// token is a password.
func ReadTokenFile(path string) (Token, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Token{}, fmt.Errorf("identity: token file: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return Token{}, fmt.Errorf("identity: token file %s has mode %v: others may read it; chmod 600 it", path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return Token{}, fmt.Errorf("identity: token file: %w", err)
	}
	t, err := ParseToken(string(b))
	if err != nil {
		return t, fmt.Errorf("%w (in %s)", err, path)
	}
	return t, nil
}
