package ask

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

type echo struct{ s string }

// A reply comes back; a late reply after the timeout is dropped (and, unlike protoactor's
// futures, races with nothing: run under -race); a request to a missing actor is a dead
// letter; a second answer is ignored; ctx ends a wait.
func TestRequest(t *testing.T) {
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	release, sent := make(chan struct{}), make(chan struct{})
	pid := sys.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case *echo:
			switch m.s {
			case "late":
				sender := ctx.Sender()
				go func() {
					defer close(sent)
					<-release
					sys.Root.Send(sender, &echo{"too late"})
				}()
			case "twice":
				ctx.Respond(&echo{"first"})
				ctx.Respond(&echo{"second"})
			case "never":
			default:
				ctx.Respond(&echo{"re: " + m.s})
			}
		}
	}))
	got, err := Request(sys.Root, pid, &echo{"hi"}, 5*time.Second)
	if err != nil || got.(*echo).s != "re: hi" {
		t.Fatalf("Request = %v, %v", got, err)
	}
	if got, err := Request(sys.Root, pid, &echo{"twice"}, 5*time.Second); err != nil || got.(*echo).s != "first" {
		t.Fatalf("the first answer counts: %v, %v", got, err)
	}
	if _, err := Request(sys.Root, pid, &echo{"late"}, 20*time.Millisecond); !errors.Is(err, actor.ErrTimeout) {
		t.Fatalf("no answer in time: %v, want ErrTimeout", err)
	}
	close(release)
	<-sent
	gone := actor.NewPID(sys.Address(), "no-such-actor")
	if _, err := Request(sys.Root, gone, &echo{"hi"}, 5*time.Second); !errors.Is(err, actor.ErrDeadLetter) {
		t.Fatalf("to a missing actor: %v, want ErrDeadLetter", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := Start(sys.Root, pid, &echo{"never"})
	cancel()
	if _, err := c.Wait(ctx, time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled wait: %v, want context.Canceled", err)
	}
}
