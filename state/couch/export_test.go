package couch

// ViewsDDoc names the design document of the views (without "_design/").
const ViewsDDoc = viewsDDoc

// SetMaxWritten sets how many submitted transfers a store remembers, until
// the test ends.
func SetMaxWritten(t interface{ Cleanup(func()) }, n int) {
	old := maxWritten
	maxWritten = n
	t.Cleanup(func() { maxWritten = old })
}
