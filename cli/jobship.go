package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/internal/base/ship"
)

// shipTTL is how long what rayctl job submit ships stays in the GCS: the head fetches it
// when it claims the submission, within seconds; then the GCS lets it go.
const shipTTL = 10 * time.Minute

// submitDescription is rayctl job submit's help text.
const submitDescription = "Nothing has to exist on the head's machine: PROGRAM and --working-dir are shipped " +
	"through the cluster's GCS by content hash (sha256) and verified there.\n\n" +
	"With --working-dir DIR, DIR (on this machine) is packed (tar+zstd; regular files and directories, symbolic links followed, " +
	"at most 256 MiB of content, 20000 entries and 64 MiB compressed) and unpacked on the head into a new " +
	"directory of the submission, where PROGRAM starts; it is removed when the driver ends (write outputs " +
	"elsewhere). Only the driver gets it, not the job's worker processes. A PROGRAM with a slash that names a " +
	"file inside DIR (./prog, bin/prog) runs from the unpacked copy. Without --working-dir the driver starts " +
	"in a new empty directory.\n\n" +
	"Any other PROGRAM is resolved here (PATH is searched for a bare name) and its file shipped; the head " +
	"runs the file at the same path when it has the same content, else its verified copy. It must run on " +
	"the head's platform (a Go program built for it, or a script whose interpreter the head has).\n\n" +
	"The job's namespace of named actors is the one its program gives ray.WithNamespace, else " +
	"--env RAY_GO_JOB_NAMESPACE=NS, else an anonymous one of its own (not --namespace: that is the GCS key namespace).\n\n" +
	"Exit code: 0 when the job SUCCEEDED, 6 FAILED, 7 STOPPED."

// prepareShipping checks PROGRAM and --working-dir and fills in what the submission
// ships: it returns the upload to run once the GCS is reachable.
func prepareShipping(c *ucli.Context, sub *pb.Submission) (upload func(ctx context.Context, store gcs.Store) error, err error) {
	argv := sub.Argv
	var uploads []func(ctx context.Context, store gcs.Store) error
	inDir := false
	if wd := c.String("working-dir"); wd != "" {
		if wd, err = filepath.Abs(wd); err != nil {
			return nil, exitf(ExitError, "--working-dir: %v", err)
		}
		if fi, err := os.Stat(wd); err != nil || !fi.IsDir() {
			return nil, exitf(ExitError, "--working-dir %s is not a directory on this machine", wd)
		}
		archive, sum, err := ship.PackDir(wd)
		if err != nil {
			return nil, exitf(ExitError, "--working-dir: %v", err)
		}
		sub.WorkingDir, sub.WorkingDirSha256, sub.WorkingDirBytes = wd, sum, int64(len(archive))
		uploads = append(uploads, func(ctx context.Context, store gcs.Store) error {
			if err := ship.Upload(ctx, store, sum, bytes.NewReader(archive), int64(len(archive)), ship.MaxArchiveBytes, shipTTL); err != nil {
				return fmt.Errorf("ship --working-dir %s (%d bytes packed): %w", wd, len(archive), err)
			}
			return nil
		})
		// A program named by a relative path with a slash, inside the directory: it
		// travels with it.
		if p := argv[0]; strings.Contains(p, "/") && !filepath.IsAbs(p) {
			rel := path.Clean(filepath.ToSlash(p))
			if filepath.IsLocal(rel) {
				if fi, err := os.Stat(filepath.Join(wd, rel)); err == nil && fi.Mode().IsRegular() {
					if fi.Mode().Perm()&0o111 == 0 {
						return nil, exitf(ExitError, "program %s in --working-dir is not executable (chmod +x it)", rel)
					}
					argv[0], inDir = rel, true
				}
			}
		}
	}
	if !inDir {
		prog, err := resolveProgram(argv[0])
		if err != nil {
			return nil, exitf(ExitError, "%v", err)
		}
		argv[0] = prog
		f, err := os.Open(prog)
		if err != nil {
			return nil, exitf(ExitError, "program %s: %v", prog, err)
		}
		h := sha256.New()
		size, err := io.Copy(h, f)
		f.Close()
		if err != nil {
			return nil, exitf(ExitError, "program %s: %v", prog, err)
		}
		if size > ship.MaxExecutableBytes {
			return nil, exitf(ExitError, "program %s has %d MiB, more than the %d MiB a cluster ships", prog, size>>20, ship.MaxExecutableBytes>>20)
		}
		sum := hex.EncodeToString(h.Sum(nil))
		sub.ProgramSha256, sub.ProgramBytes = sum, size
		uploads = append(uploads, func(ctx context.Context, store gcs.Store) error {
			f, err := os.Open(prog)
			if err != nil {
				return err
			}
			defer f.Close()
			if err := ship.Upload(ctx, store, sum, f, size, ship.MaxExecutableBytes, shipTTL); err != nil {
				return fmt.Errorf("ship program %s (%d bytes): %w", prog, size, err)
			}
			return nil
		})
	}
	sub.Argv = argv
	return func(ctx context.Context, store gcs.Store) error {
		for _, u := range uploads {
			if err := u(ctx, store); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

// gcsProbeEvery is how often uploadWatched asks the GCS whether it answers, and
// gcsProbeMisses how many probes in a row may fail before the upload is given up.
var (
	gcsProbeEvery  = 5 * time.Second
	gcsProbeMisses = 3
)

// uploadWatched runs upload, ended early when the GCS stops answering: a probe (the
// store's revision, bounded by gcsProbeEvery) every gcsProbeEvery, and gcsProbeMisses
// failures in a row end it with an error that says the GCS at addr stopped answering
// (the head died or is unreachable). A client's write to a GCS that is gone waits for it to
// come back, so without the probe a submission whose head died as its program was sent
// said nothing until the upload's deadline.
func uploadWatched(ctx context.Context, store gcs.Store, addr string, upload func(context.Context, gcs.Store) error) error {
	uctx, cancel := context.WithCancelCause(ctx)
	every, most := gcsProbeEvery, gcsProbeMisses
	probed := make(chan struct{})
	defer func() { cancel(nil); <-probed }()
	go func() {
		defer close(probed)
		misses := 0
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-uctx.Done():
				return
			case <-t.C:
			}
			pctx, pcancel := context.WithTimeout(uctx, every)
			_, err := store.Revision(pctx)
			pcancel()
			if err == nil {
				misses = 0
				continue
			}
			if uctx.Err() != nil {
				return
			}
			if misses++; misses >= most {
				cancel(fmt.Errorf("the GCS at %s stopped answering while the program was sent (%d probes in a row failed, the last: %v): "+
					"the head died or is unreachable; start it again (rayctl start --head on its session dir) and submit again", addr, misses, err))
				return
			}
		}
	}()
	err := upload(uctx, store)
	if cause := context.Cause(uctx); err != nil && cause != nil && !errors.Is(cause, context.Canceled) && !errors.Is(err, cause) {
		return fmt.Errorf("%w (%v)", cause, err)
	}
	return err
}
