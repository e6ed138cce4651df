package state

import "context"

type fenceKey struct{}

// WithFence returns ctx carrying check, the caller's write fence: a backend
// calls it (through CheckFence) once it holds whatever serialises its writes
// (memfile: the file lock), right before it writes, so that a caller that
// was paused while waiting for that lock and lost its run lock meanwhile
// writes nothing.
func WithFence(ctx context.Context, check func() error) context.Context {
	return context.WithValue(ctx, fenceKey{}, check)
}

// CheckFence runs the fence ctx carries, if any.
func CheckFence(ctx context.Context) error {
	if f, ok := ctx.Value(fenceKey{}).(func() error); ok && f != nil {
		return f()
	}
	return nil
}
