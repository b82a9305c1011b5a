package membership

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc"
)

// fakeStream is a grpc.ServerStream whose RecvMsg waits for the test to hand it a message.
type fakeStream struct {
	grpc.ServerStream
	in chan error
}

func (f *fakeStream) RecvMsg(any) error        { return <-f.in }
func (f *fakeStream) SendMsg(any) error        { return nil }
func (f *fakeStream) Context() context.Context { return context.Background() }

// gateHeld reports whether the monitor's side of blockGate would have to wait now.
func gateHeld() bool {
	if blockGate.TryLock() {
		blockGate.Unlock()
		return false
	}
	return true
}

// The read side is held from a stream's first message until the handler answers it
// (where protoactor reads its BlockList), never while the stream waits for its peer, and
// given back when the handler ends without answering.
func TestBlockListInterceptorHoldsTheGateOnlyAroundTheFirstAnswer(t *testing.T) {
	for _, ending := range []string{"send", "recv", "return"} {
		t.Run(ending, func(t *testing.T) {
			f := &fakeStream{in: make(chan error)}
			step := make(chan string)
			done := make(chan error)
			go func() {
				done <- BlockListInterceptor(nil, f, &grpc.StreamServerInfo{}, func(_ any, ss grpc.ServerStream) error {
					step <- "waiting"
					if err := ss.RecvMsg(nil); err != nil { // the connect request
						return err
					}
					step <- "first"
					<-step
					switch ending {
					case "send":
						_ = ss.SendMsg(nil)
					case "recv":
						_ = ss.RecvMsg(nil)
					case "return":
						return errors.New("gone")
					}
					step <- "answered"
					<-step
					return nil
				})
			}()
			<-step
			if gateHeld() {
				t.Fatal("the gate is held while the stream waits for its first message")
			}
			f.in <- nil
			<-step
			if !gateHeld() {
				t.Fatal("the gate is not held between the first message and its answer")
			}
			step <- "go"
			if ending == "recv" {
				f.in <- nil // the second message
			}
			if ending != "return" {
				<-step
				if gateHeld() {
					t.Fatal("the gate is still held after the answer")
				}
				step <- "end"
			}
			err := <-done
			if gateHeld() {
				t.Fatalf("the gate is held after the handler ended (%v)", err)
			}
		})
	}
}
