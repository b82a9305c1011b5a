package identity

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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

// ReadTokenFile reads a token from a file. It refuses a file that others may read (a
// token is a password), a symbolic link, and a file that is not the current user's or
// root's or that others may write (OpenOwned): someone else's file could hold a token of
// their choosing.
func ReadTokenFile(path string) (Token, error) {
	f, fi, err := OpenOwned(path)
	if err != nil {
		return Token{}, fmt.Errorf("identity: token file: %w", err)
	}
	defer f.Close()
	return readToken(f, fi, path)
}

func readToken(f *os.File, fi os.FileInfo, path string) (Token, error) {
	if fi.Mode().Perm()&0o077 != 0 {
		return Token{}, fmt.Errorf("identity: token file %s has mode %v: others may read it; chmod 600 it", path, fi.Mode().Perm())
	}
	b, err := readBounded(f, path)
	if err != nil {
		return Token{}, fmt.Errorf("identity: token file: %w", err)
	}
	t, err := ParseToken(string(b))
	if err != nil {
		return t, fmt.Errorf("%w (in %s)", err, path)
	}
	return t, nil
}

// TokenDir reads the token file of one directory, opened once: a later rename of that
// directory, or of one above it, does not change which file is read (a running head reads
// its token through it, so that `rayctl token rotate`, which replaces the file, applies at
// once, and nobody can put another directory in its place).
type TokenDir struct {
	root *os.Root
	dir  string
}

// OpenTokenDir opens dir, which CheckOwnedDir must accept (not strict: the user's or root's).
func OpenTokenDir(dir string) (*TokenDir, error) {
	if err := CheckOwnedDir(dir, false); err != nil {
		return nil, fmt.Errorf("identity: the token's directory: %w", err)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("identity: the token's directory: %w", err)
	}
	return &TokenDir{root: r, dir: dir}, nil
}

// Read reads the token file (TokenFile) of the directory, as ReadTokenFile.
func (d *TokenDir) Read() (Token, error) {
	path := filepath.Join(d.dir, TokenFile)
	f, fi, err := openOwnedAt(d.root, TokenFile)
	if err != nil {
		return Token{}, fmt.Errorf("identity: token file %s: %w", path, err)
	}
	defer f.Close()
	return readToken(f, fi, path)
}

// Close closes the directory.
func (d *TokenDir) Close() error { return d.root.Close() }
