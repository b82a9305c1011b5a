package ray

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// A state API call some of whose processes did not answer returns the others' results
// with a *PartialStateError (before: an untyped error and no results): callers branch on
// it with errors.As or errors.Is(err, ErrPartialState), and its text names the processes.
func TestPartialStateError(t *testing.T) {
	if err := partialError(nil, 3); err != nil {
		t.Fatalf("partialError of no missing process: %v, want nil", err)
	}
	err := partialError([]string{"bbbbbb", "aaaaaa"}, 2)
	var p *PartialStateError
	if !errors.As(err, &p) || !errors.Is(err, ErrPartialState) {
		t.Fatalf("partialError: %v (%T), want a *PartialStateError matching ErrPartialState", err, err)
	}
	if !slices.Equal(p.Missing, []string{"aaaaaa", "bbbbbb"}) || p.Answered != 2 || !strings.Contains(err.Error(), "aaaaaa, bbbbbb") {
		t.Errorf("PartialStateError %+v: %v; want the missing processes sorted, 2 answered", p, err)
	}
}
