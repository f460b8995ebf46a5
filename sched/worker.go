package sched

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"sync/atomic"
)

// PanicError is the error a Worker returns when its loop panicked.
type PanicError struct {
	Worker string
	Value  any    // the value passed to panic
	Stack  []byte // the panicking goroutine's stack
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("sched: worker %q panicked: %v", e.Worker, e.Value)
}

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// WorkerConfig configures StartWorker.
type WorkerConfig struct {
	Name string // for errors and logs
	Core Core   // where to run; the zero Core runs unpinned
	// Release, if not nil, is called with Core once, after the loop has
	// returned and the thread has been unpinned.
	Release func(Core)
	// Warn receives the warning logged when pinning fails; nil means
	// slog.Default().Warn.
	Warn func(msg string, args ...any)
}

// Worker runs one loop on its own goroutine, locked to an OS thread pinned
// to its Core. Create workers with StartWorker or Allocator.Start.
type Worker struct {
	name   string
	core   Core
	cancel context.CancelFunc
	done   chan struct{}
	pinned atomic.Bool
	err    error // set before done is closed
}

// StartWorker starts loop on a new goroutine and returns at once. The
// goroutine locks itself to an OS thread and pins it to cfg.Core; if the
// pin fails it warns and runs the loop unpinned (never an error: the job
// still runs). loop receives a context that is canceled by Stop or when
// ctx is; the loop must return soon after (a loop blocked on a ring should
// be woken by the ring's Cancel or Close). When loop returns, the worker
// unpins, calls cfg.Release, and Wait returns loop's error. A panic in loop
// is recovered and returned as a *PanicError.
//
// The goroutine never pins the process's main thread: if it starts there,
// it stays on it, locked and blocked, until a second goroutine, which then
// cannot be scheduled on the main thread, has locked its own thread; the
// second goroutine runs the loop.
func StartWorker(ctx context.Context, cfg WorkerConfig, loop func(context.Context) error) *Worker {
	ctx, cancel := context.WithCancel(ctx)
	w := &Worker{name: cfg.Name, core: cfg.Core, cancel: cancel, done: make(chan struct{})}
	warn := cfg.Warn
	if warn == nil {
		warn = slog.Default().Warn
	}
	go func() {
		if !w.core.Pinned() {
			w.finish(cfg, w.call(ctx, loop))
			return
		}
		runtime.LockOSThread()
		if !onMainThread() {
			w.pinnedRun(ctx, cfg, warn, loop, nil)
			runtime.UnlockOSThread()
			return
		}
		locked := make(chan struct{})
		go w.pinnedRun(ctx, cfg, warn, loop, locked)
		<-locked
		runtime.UnlockOSThread()
	}()
	return w
}

// pinnedRun pins, closes locked (if not nil) once the pin has been tried,
// runs the loop and finishes the worker.
func (w *Worker) pinnedRun(ctx context.Context, cfg WorkerConfig, warn func(string, ...any), loop func(context.Context) error, locked chan struct{}) {
	unpin, err := Pin(w.core.CPU())
	if locked != nil {
		close(locked)
	}
	if err != nil {
		warn("sched: pinning failed; worker runs unpinned",
			"worker", w.name, "cpu", w.core.CPU(), "err", err)
	} else {
		w.pinned.Store(true)
	}
	lerr := w.call(ctx, loop)
	unpin()
	w.finish(cfg, lerr)
}

// call runs loop, turning a panic into a *PanicError.
func (w *Worker) call(ctx context.Context, loop func(context.Context) error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Worker: w.name, Value: v, Stack: debug.Stack()}
		}
	}()
	return loop(ctx)
}

func (w *Worker) finish(cfg WorkerConfig, err error) {
	w.cancel()
	if cfg.Release != nil {
		cfg.Release(w.core)
	}
	w.err = err
	close(w.done)
}

// Name returns the worker's name.
func (w *Worker) Name() string { return w.name }

// Core returns the worker's lease (pinned or not).
func (w *Worker) Core() Core { return w.core }

// Pinned reports whether the worker's thread is pinned to its Core. It is
// false until the pin has succeeded, and stays false when the pin failed or
// the Core is unpinned.
func (w *Worker) Pinned() bool { return w.pinned.Load() }

// Stop cancels the loop's context. It does not wait; use Wait.
func (w *Worker) Stop() { w.cancel() }

// Done is closed when the loop has returned and the core is released.
func (w *Worker) Done() <-chan struct{} { return w.done }

// Wait blocks until the loop has returned and the core is released, and
// returns the loop's error. A loop that returns context.Canceled after Stop
// yields nil: stopping is not a failure.
func (w *Worker) Wait() error {
	<-w.done
	if errors.Is(w.err, context.Canceled) {
		return nil
	}
	return w.err
}
