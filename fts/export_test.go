package fts

// Internals opened to the external tests (fuzzing of the reply parsers).

// ParseStatusReply exposes parseStatusReply.
var ParseStatusReply = parseStatusReply

// ErrorMessage exposes errorMessage.
var ErrorMessage = errorMessage

// MaxMessage exposes maxMessage.
const MaxMessage = maxMessage
