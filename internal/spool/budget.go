package spool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// ErrBudget is a reservation that was not granted: larger than the whole
// budget, or not granted before its context ended.
var ErrBudget = errors.New("spool budget")

// Budget is a number of bytes shared by every reservation. A nil *Budget
// grants everything at once.
type Budget struct {
	total int64
	name  string // for messages: what sets the budget
	sem   *semaphore.Weighted

	used    atomic.Int64
	peak    atomic.Int64
	waiting atomic.Int64
	refused atomic.Int64
}

// New returns a budget of total bytes (> 0). name says in messages what
// sets it, such as "--spool-budget".
func New(total int64, name string) *Budget {
	return &Budget{total: total, name: name, sem: semaphore.NewWeighted(total)}
}

// Total is the budget in bytes (0 for a nil budget: unbounded).
func (b *Budget) Total() int64 {
	if b == nil {
		return 0
	}
	return b.total
}

// InUse is the bytes reserved now.
func (b *Budget) InUse() int64 {
	if b == nil {
		return 0
	}
	return b.used.Load()
}

// Peak is the most bytes reserved at once since the budget was made.
func (b *Budget) Peak() int64 {
	if b == nil {
		return 0
	}
	return b.peak.Load()
}

// Waiting is the number of reservations waiting now.
func (b *Budget) Waiting() int64 {
	if b == nil {
		return 0
	}
	return b.waiting.Load()
}

// Refused is the number of reservations refused so far.
func (b *Budget) Refused() int64 {
	if b == nil {
		return 0
	}
	return b.refused.Load()
}

type waitKey struct{}

type waitValue struct {
	ctx  context.Context
	note func(string)
}

// WithWait returns ctx whose reservations wait at most until wait ends
// (as well as ctx), and report through note (may be nil) what they wait
// for, once, when they start waiting. The work itself runs under ctx.
func WithWait(ctx, wait context.Context, note func(string)) context.Context {
	return context.WithValue(ctx, waitKey{}, waitValue{wait, note})
}

// Reserve reserves n bytes for what (a path, for messages), waiting while
// they do not fit. release gives them back; calling it more than once is
// harmless.
func (b *Budget) Reserve(ctx context.Context, n int64, what string) (release func(), err error) {
	if b == nil || n <= 0 {
		return func() {}, nil
	}
	if n > b.total {
		b.refused.Add(1)
		return nil, fmt.Errorf("%w: %s needs %s on disk while it is read, more than the whole budget of %s (%s); fix: raise %s (and the pod's temporary directory with it), or make the file smaller",
			ErrBudget, what, Bytes(n), Bytes(b.total), b.name, b.name)
	}
	if !b.sem.TryAcquire(n) {
		wctx := ctx
		if wv, ok := ctx.Value(waitKey{}).(waitValue); ok {
			var cancel context.CancelFunc
			wctx, cancel = context.WithCancel(ctx)
			stop := context.AfterFunc(wv.ctx, cancel)
			defer func() { stop(); cancel() }()
			if wv.note != nil {
				wv.note(fmt.Sprintf("waiting for %s of the spool budget for %s (%s of %s in use, %s)", Bytes(n), what, Bytes(b.used.Load()), Bytes(b.total), b.name))
			}
		}
		b.waiting.Add(1)
		err := b.sem.Acquire(wctx, n)
		b.waiting.Add(-1)
		if err != nil {
			b.refused.Add(1)
			return nil, fmt.Errorf("%w: %s needs %s on disk while it is read; %s of the budget of %s (%s) were in use by other reviews until it gave up (%w); fix: retry, or raise %s (and the pod's temporary directory with it)",
				ErrBudget, what, Bytes(n), Bytes(b.used.Load()), Bytes(b.total), b.name, context.Cause(wctx), b.name)
		}
	}
	raise(&b.peak, b.used.Add(n))
	return sync.OnceFunc(func() {
		b.used.Add(-n)
		b.sem.Release(n)
	}), nil
}

// raise sets a to v when v is larger.
func raise(a *atomic.Int64, v int64) {
	for {
		if m := a.Load(); v <= m || a.CompareAndSwap(m, v) {
			return
		}
	}
}

// Bytes writes n as a binary quantity (1.9Gi, 512Mi).
func Bytes(n int64) string {
	const unit = 1 << 10
	if n < unit {
		return fmt.Sprintf("%d bytes", n)
	}
	units := []string{"Ki", "Mi", "Gi", "Ti", "Pi"}
	v, i := float64(n)/unit, 0
	for v >= unit && i < len(units)-1 {
		v /= unit
		i++
	}
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d%s", int64(v), units[i])
	}
	return fmt.Sprintf("%.1f%s", v, units[i])
}
