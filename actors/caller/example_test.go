package caller_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/ray-go/ray/actors/caller"
)

// A caller's calls to an exactly-once actor that restarts while two of them are in
// flight; the runtime sends what Take hands it and fails what Die returns.
func Example() {
	c := caller.New[string](caller.Config{ResendAfter: 5 * time.Second, MaxResend: 1000})
	c.Changed(caller.Record{Incarnation: 1, Placed: true})
	now := time.Now()
	for _, name := range []string{"add(1)", "add(2)", "add(3)"} {
		seq, _ := c.Add(name)
		c.Send(seq, now)
	}
	fmt.Println(c.Take(nil), "first:", c.Low())
	c.Finish(2)
	u := c.Changed(caller.Record{Incarnation: 2})
	fmt.Println(u.NewIncarnation, c.Take(nil), "first:", c.Low())
	c.Finish(1)
	fmt.Println(c.Die(errors.New("actor a1 died: killed")), c.Err())
	// Output:
	// [call 1:add(1) call 2:add(2) call 3:add(3)] first: 1
	// true [resend 1:add(1) resend 3:add(3)] first: 1
	// [add(3)] actor a1 died: killed
}
