package ray

import (
	"errors"
	"strings"
	"testing"

	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/internal/base/pb"
)

// TestLostObjectWithoutTaskIsAnObjectError: an object no task made (a borrowed ref whose
// owner has exited) reads as an object error matching ErrObjectLost, not a task error
// naming an empty function and a zero task ID ("ray: task  (000000000000) failed: ...").
func TestLostObjectWithoutTaskIsAnObjectError(t *testing.T) {
	msg := "object 0a31 is lost: its owner, the process at 127.0.0.1:1 that created it (owner-j2), has exited"
	err := convert(&core.ObjectError{Info: &pb.ErrorInfo{Kind: pb.ErrorInfo_OBJECT_LOST, Message: msg}})
	var te *TaskError
	if !errors.Is(err, ErrObjectLost) || errors.As(err, &te) || err.Error() != "ray: "+msg ||
		strings.Contains(err.Error(), "task") {
		t.Fatalf("a lost object with no task reads %q (%T), want %q matching ErrObjectLost", err, err, "ray: "+msg)
	}
}
