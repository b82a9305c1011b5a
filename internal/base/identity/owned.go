package identity

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Secret files and the directories that hold them are trusted only when nobody else can
// have put them there or swap them, as OpenSSH's StrictModes: a file is opened without
// following a symbolic link, must be a regular file of this process's user (or root), and
// writable by nobody else; a directory must be this user's (or root's), writable by nobody
// else, and so must each directory above it unless it is sticky (as /tmp: another user
// cannot rename what is not theirs there). A session directory that another user made
// (/tmp/ray-go pre-created with mode 777) would otherwise let them replace the head's
// token with one of their choosing.

// ErrNotOwned: a file or directory might be someone else's to change.
var ErrNotOwned = errors.New("identity: not safe to trust")

// ownerOf is the owner of fi.
func ownerOf(fi fs.FileInfo) (uint32, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return st.Uid, true
}

// trustedOwner reports whether uid is this process's user or root.
func trustedOwner(uid uint32) bool {
	me := uint32(os.Geteuid())
	return uid == me || uid == 0
}

// checkOwnedInfo checks one entry's owner (the current user; or root too unless strict) and
// that no other user may write it (a sticky directory may be world-writable if sticky).
func checkOwnedInfo(path string, fi fs.FileInfo, strict, sticky bool) error {
	uid, ok := ownerOf(fi)
	if !ok {
		return fmt.Errorf("%w: %s: cannot tell its owner", ErrNotOwned, path)
	}
	me := uint32(os.Geteuid())
	if uid != me && (strict || uid != 0) {
		who := fmt.Sprintf("you (uid %d)", me)
		if !strict {
			who += " or root"
		}
		return fmt.Errorf("%w: %s belongs to uid %d, not to %s: another user may have made it, to change what is in it; "+
			"remove it (or chown it to yourself if you made it), or use another directory", ErrNotOwned, path, uid, who)
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 && !(sticky && fi.Mode()&fs.ModeSticky != 0) {
		return fmt.Errorf("%w: %s has mode %04o: other users may write in it; chmod go-w it (chmod 700 for a directory, 600 for a file), "+
			"or use another directory", ErrNotOwned, path, perm)
	}
	return nil
}

// CheckOwnedDir checks that dir may be trusted with secrets: an existing directory (not a
// symbolic link) of the current user (strict) or of the current user or root (!strict),
// that no other user may write in, under directories that no other user can rename it out
// of (theirs or root's, not writable by others unless sticky). Errors wrap ErrNotOwned
// and say what to do, or are the Lstat error (fs.ErrNotExist when dir does not exist).
func CheckOwnedDir(dir string, strict bool) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	fi, err := os.Lstat(abs)
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%w: %s is a symbolic link: name the directory itself", ErrNotOwned, abs)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", abs)
	}
	if err := checkOwnedInfo(abs, fi, strict, false); err != nil {
		return err
	}
	// The directories above, as named and as they really are (a symbolic link among them).
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return err
	}
	for _, p := range []string{abs, real} {
		for d := filepath.Dir(p); ; d = filepath.Dir(d) {
			fi, err := os.Lstat(d)
			if err != nil {
				return err
			}
			if fi.Mode()&fs.ModeSymlink != 0 {
				// Only its owner, or the owner of the directory it is in (checked next), may
				// replace a link.
				if uid, ok := ownerOf(fi); !ok || !trustedOwner(uid) {
					return fmt.Errorf("%w: %s, above %s, is a symbolic link of uid %d: another user may point it elsewhere; use another directory",
						ErrNotOwned, d, abs, uid)
				}
			} else if err := checkOwnedInfo(d, fi, false, true); err != nil {
				return fmt.Errorf("%w (it is above %s, which it could then be swapped out of)", err, abs)
			}
			if d == filepath.Dir(d) {
				break
			}
		}
	}
	return nil
}

// OpenOwned opens a file to read a secret or what to trust from it: not through a symbolic
// link (the last part of the name), a regular file of the current user or root, writable by
// nobody else. Errors wrap ErrNotOwned and say what to do, or are the open's (fs.ErrNotExist).
func OpenOwned(path string) (*os.File, fs.FileInfo, error) {
	return openOwnedAt(nil, path)
}

// openOwnedAt is OpenOwned of name in root (path if root is nil).
func openOwnedAt(root *os.Root, name string) (*os.File, fs.FileInfo, error) {
	var f *os.File
	var err error
	if root == nil {
		f, err = os.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	} else {
		if fi, lerr := root.Lstat(name); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			err = syscall.ELOOP
		} else {
			f, err = root.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		}
	}
	if errors.Is(err, syscall.ELOOP) {
		return nil, nil, fmt.Errorf("%w: %s is a symbolic link: name the file itself (a link may be changed to point elsewhere)", ErrNotOwned, name)
	}
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%w: %s is not a regular file", ErrNotOwned, name)
	}
	if err == nil {
		err = checkOwnedInfo(name, fi, false, false)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// maxSecretFile bounds what is read of a secret file (a key, a certificate, a token).
const maxSecretFile = 1 << 20

// ReadOwnedFile reads a file that OpenOwned accepts.
func ReadOwnedFile(path string) ([]byte, error) {
	f, _, err := OpenOwned(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readBounded(f, path)
}

func readBounded(f *os.File, path string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxSecretFile {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxSecretFile)
	}
	return b, nil
}
