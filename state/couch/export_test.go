package couch

// ViewsDDoc names the design document of the views (without "_design/").
const ViewsDDoc = viewsDDoc
