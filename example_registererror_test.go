package ray_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/ray-go/ray"
)

// QuotaError is an application error with data the caller needs.
type QuotaError struct {
	User  string
	Limit int
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("user %s is over the quota of %d", e.User, e.Limit)
}

func init() { ray.RegisterError[*QuotaError]("example.QuotaError") }

var Charge = ray.Task1("example.charge", func(ctx context.Context, user string) (int, error) {
	return 0, fmt.Errorf("charging: %w", &QuotaError{User: user, Limit: 10})
})

func ExampleRegisterError() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(1))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	_, err = ray.Get(ctx, Charge.Remote(ctx, ray.V("ann")))
	var qe *QuotaError
	if errors.As(err, &qe) { // the task's *QuotaError, rebuilt in the caller
		fmt.Println(qe.User, qe.Limit)
	}
	var te *ray.TaskError
	fmt.Println(errors.As(err, &te), te.Message)
	// Output:
	// ann 10
	// true charging: user ann is over the quota of 10
}
