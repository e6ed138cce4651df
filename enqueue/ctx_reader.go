package enqueue

import (
	"context"
	"io"
)

// Interruptible returns r, read so that a read waiting for input (from a
// terminal, or a pipe whose writer keeps it open) returns as soon as ctx is
// done: the read goes on in a goroutine, which the process's exit ends.
func Interruptible(ctx context.Context, r io.Reader) io.Reader {
	return &ctxReader{ctx: ctx, r: r, res: make(chan readResult, 1)}
}

type readResult struct {
	n   int
	err error
}

// ctxReader is a reader whose reads end when its context does.
type ctxReader struct {
	ctx     context.Context
	r       io.Reader
	res     chan readResult
	buf     []byte
	rest    []byte // read but not yet returned
	pending bool
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if len(c.rest) > 0 {
		n := copy(p, c.rest)
		c.rest = c.rest[n:]
		return n, nil
	}
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	if !c.pending {
		if cap(c.buf) < len(p) {
			c.buf = make([]byte, len(p))
		}
		buf := c.buf[:len(p)]
		c.pending = true
		go func() {
			n, err := c.r.Read(buf)
			c.res <- readResult{n, err}
		}()
	}
	select {
	case r := <-c.res:
		c.pending = false
		n := copy(p, c.buf[:r.n])
		c.rest = c.buf[n:r.n]
		return n, r.err
	case <-c.ctx.Done():
		return 0, c.ctx.Err()
	}
}
