package ray

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/workerenv"
)

// Joining a cluster without credentials fails at once, saying what to set.
func TestInitWithoutCredentials(t *testing.T) {
	for _, v := range workerenv.Contract {
		t.Setenv(v, "")
	}
	t0 := time.Now()
	_, err := Init(context.Background(), WithAddress("127.0.0.1:1"))
	if !errors.Is(err, ErrNoCredentials) || !strings.Contains(err.Error(), workerenv.Token) {
		t.Fatalf("no token: %v", err)
	}
	// The prefix once: before, "ray: Init: ray: no valid credentials for the cluster: ...".
	if n := strings.Count(err.Error(), "ray: "); n != 1 {
		t.Errorf("no token: the error says \"ray: \" %d times: %v", n, err)
	}
	_, err = Init(context.Background(), WithAddress("127.0.0.1:1"), WithToken("abc.def"))
	if !errors.Is(err, ErrNoCredentials) || !strings.Contains(err.Error(), "malformed") {
		t.Fatalf("malformed token: %v", err)
	}
	if n := strings.Count(err.Error(), "ray: "); n != 1 {
		t.Errorf("malformed token: the error says \"ray: \" %d times: %v", n, err)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Fatalf("took %v", d)
	}
}
